//! The degraded mode at the inotify watch limit: the tree's daemon restarted
//! in a user namespace of its own whose watch limit (`user.max_inotify_watches`, counted per
//! namespace) covers half the tree's directories. Nothing reports changes in the other half, so
//! every turn end walks it (a stat walk of the unwatched directories only); the row is the turn
//! end after editing `EDIT_FILES` files, with the walk's own cost from `status`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::daemon::Daemon;
use super::edits::{EDIT_FILES, Tally, append_line, check_changes};
use super::report::Row;
use super::stats::{fmt_med_p95, median};

/// What to run on: the tree, its state dir (the index is reused: a restart, not a first index).
pub struct Setup<'a> {
    pub bin: &'a Path,
    pub tree: &'a Path,
    pub state: &'a Path,
    pub log: &'a Path,
    pub dirs: usize,
    /// Files to edit, spread over the tree.
    pub picks: &'a [String],
    pub reps: usize,
}

/// The row, or `None` (with the reason on stderr) where a user namespace cannot set its limit.
pub fn run(s: &Setup) -> Result<Option<Row>, String> {
    let limit = s.dirs / 2;
    let set_limit = format!("echo {limit} > /proc/sys/user/max_inotify_watches && exec \"$@\"");
    if !namespace_works() {
        eprintln!("  skipped: cannot set an inotify watch limit in a user namespace (unshare -Ur)");
        return Ok(None);
    }
    let wrapper = ["unshare", "-Ur", "sh", "-c", set_limit.as_str(), "sh"];
    let (mut d, _) = Daemon::spawn_via(&wrapper, s.bin, s.tree, s.state, s.log, Duration::from_secs(600))?;
    let measured = turns(&d, s);
    let status = d.status();
    d.stop();
    let (ends, walks, tally) = measured?;
    let unwatched = status?
        .pointer("/watcher/unwatched_dirs")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut row = Row::new(format!(
        "W1d: degraded ({unwatched} of {} dirs unwatched at the watch limit): turn end after editing {EDIT_FILES} files (n={})",
        s.dirs, s.reps
    ));
    row.fw = fmt_med_p95(&ends);
    row.floor = format!(
        "stat walk of the unwatched dirs: {} ms (median)",
        median_ms(&walks)
    );
    row.goal = "every edit recorded".into();
    row.pass = Some(tally.ok() && unwatched > 0);
    row.correct = tally
        .text(EDIT_FILES, "turns")
        .trim_start_matches("; ")
        .to_string();
    Ok(Some(row))
}

fn namespace_works() -> bool {
    Command::new("unshare")
        .args(["-Ur", "sh", "-c", "echo 50 > /proc/sys/user/max_inotify_watches"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|st| st.success())
}

/// Turn ends, the verification walk of each (ms, from `status`), and the correctness tally.
fn turns(d: &Daemon, s: &Setup) -> Result<(Vec<Duration>, Vec<u64>, Tally), String> {
    let (mut ends, mut walks, mut tally) = (Vec::new(), Vec::new(), Tally::default());
    for rep in 0..s.reps {
        d.turn_start()?;
        let set: Vec<&String> = (0..EDIT_FILES)
            .map(|k| &s.picks[(rep * EDIT_FILES + k) % s.picks.len()])
            .collect();
        for (k, f) in set.iter().enumerate() {
            append_line(&s.tree.join(f), &format!("// fwbench degraded edit {rep}.{k}\n"))?;
        }
        let (dt, turn) = d.turn_end()?;
        let expected: BTreeSet<&str> = set.iter().map(|f| f.as_str()).collect();
        tally.add(&check_changes(&turn, &expected), expected.len());
        ends.push(dt);
        let status = d.status()?;
        walks.extend(
            status
                .pointer("/watcher/last_unwatched_verify/ms")
                .and_then(Value::as_u64),
        );
    }
    Ok((ends, walks, tally))
}

fn median_ms(ms: &[u64]) -> String {
    let as_dur: Vec<Duration> = ms.iter().map(|&m| Duration::from_millis(m)).collect();
    if as_dur.is_empty() {
        return "?".into();
    }
    median(&as_dur).as_millis().to_string()
}
