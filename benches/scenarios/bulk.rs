//! The workloads of many files at once, and of none: W3 (30,000-file bursts, ignored and
//! tracked), W4 (`git checkout` of 3,000 files, and the same checkouts with the daemon
//! stopped), W7 (a read storm), W8 (the daemon stopped during 30,000 writes) and idle.

use std::time::{Duration, Instant};

use super::run::Run;
use crate::common::daemon::Daemon;
use crate::common::report::Row;
use crate::common::stats::{fmt_int, fmt_med_p95, median};
use crate::common::{burst, checkout, stall, storm};

/// W4: `git checkout` of a branch changing 3,000 files and back, each in a turn, against
/// both peers' snapshots of the result.
pub fn w4_checkout(r: &mut Run, d: &Daemon) -> Result<(), String> {
    let Some(c) = r.codex.as_ref() else {
        return Ok(());
    };
    let out = checkout::run(r.name, d, &r.sh, c, &r.tree, &r.g.files, r.o.checkout_reps)?;
    r.correct_ok &= out.problems.is_empty();
    r.push_verified(checkout::row(&out), "W4");
    r.rows.push(checkout::captured_row(&out));
    r.notes.push(format!(
        "W4 (checkout): the tree is committed on `main` (untimed), branch `B` is made with `git fast-import` from it, with `s/fn/fq/` on {} files that contain `fn` (every 5th file), and `git checkout -q B` then `git checkout -q main` each run inside a turn. filewatchd's time runs from the checkout's start to the end marker's answer; each peer's from the checkout's start to the end of its snapshot of the result (taken after the end marker, with the daemon idle). The goal row times what follows the checkout's exit: the end marker's answer, against each peer's snapshot alone (as W2 times from sed's exit).",
        fmt_int(out.files as u64)
    ));
    r.checkout = Some(out);
    Ok(())
}

/// After the daemon stopped: the same checkouts without it.
pub fn checkout_alone_row(r: &mut Run) -> Result<(), String> {
    let (Some(c), Some(out)) = (r.codex.as_ref(), r.checkout.as_ref()) else {
        return Ok(());
    };
    let alone = checkout::alone(c, r.o.checkout_reps)?;
    eprintln!(
        "[{}]   checkouts without the daemon: {}",
        r.name,
        fmt_med_p95(&alone)
    );
    let row = checkout::alone_row(out, &alone);
    let at = r
        .rows
        .iter()
        .position(|x| x.workload.starts_with("W4:"))
        .map_or(r.rows.len(), |i| i + 1);
    r.rows.insert(at, row);
    Ok(())
}

/// W3a (a burst into a gitignored dir, daemon running vs stopped) and W3b (the same burst
/// into a new tracked dir), each unless skipped.
pub fn w3_bursts(r: &mut Run, d: &Daemon) -> Result<(), String> {
    if r.o.runs("w3a") {
        let out = burst::run_ignored(r.name, d, &r.tree, (r.o.burst_reps, r.tck))?;
        r.burst_stopped = Some(median(&out.stopped));
        let row = burst::ignored_row(&out);
        r.push_verified(row, "W3a");
    }
    if r.o.runs("w3b") {
        let reps = r.o.burst_reps.div_ceil(2).max(1);
        let out = burst::run_tracked(r.name, d, &r.sh, &r.tree, &r.state, (reps, r.tck))?;
        r.correct_ok &= out.problems.is_empty();
        let mut rows = burst::tracked_rows(&out, r.burst_stopped).into_iter();
        if let Some(first) = rows.next() {
            r.push_verified(first, "W3b");
        }
        r.rows.extend(rows);
    }
    r.notes.push(format!(
        "W3 (bursts): {} files of ~45 B as `p###/lib/m##.js` in {} new dirs, written by the bench itself; `sync` before each burst. W3a goes to `node_modules/`, listed in the root's `.gitignore` before the dir exists; its running/stopped bursts alternate, and \"watches\" are the `inotify wd:` lines of the daemon's inotify fdinfo whose inode is a dir under `node_modules/`.",
        fmt_int(burst::BURST_FILES as u64),
        burst::BURST_DIRS
    ));
    Ok(())
}

/// W7: a read storm (`tar`, `grep -r`) while idle: no events, no rescans.
pub fn w7_storm(r: &mut Run, d: &Daemon) -> Result<(), String> {
    let out = storm::run(r.name, d, &r.tree, r.tck)?;
    r.push_verified(storm::row(&out), "W7");
    Ok(())
}

/// W8: the daemon SIGSTOPped while 30,000 files are created, then the scoped rescan.
pub fn w8_stall(r: &mut Run, d: &Daemon) -> Result<(), String> {
    // An existing tracked dir: the first dir of the sorted file list.
    let dir =
        r.g.files
            .first()
            .and_then(|f| f.rel.rsplit_once('/'))
            .map(|(d, _)| d.to_string());
    let Some(dir) = dir else {
        return Err("the tree has no subdirectory for W8".into());
    };
    let out = stall::run(r.name, d, &r.tree, &dir)?;
    r.correct_ok &= out.ok();
    let mut rows = stall::rows(&out).into_iter();
    if let Some(first) = rows.next() {
        r.push_verified(first, "W8");
    }
    r.rows.extend(rows);
    Ok(())
}

/// Idle: the daemon's CPU and wake-ups over 5 s of quiet.
pub fn idle_row(r: &mut Run, d: &Daemon) {
    eprintln!("[{}] idle: 1 s settle, then 5 s measured", r.name);
    std::thread::sleep(Duration::from_secs(1));
    let s0 = d.sample();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let s1 = d.sample();
    let secs = t.elapsed().as_secs_f64();
    let cpu_pct = (s1.ticks - s0.ticks) as f64 / r.tck as f64 / secs * 100.0;
    // A thread that ended meanwhile takes its switches out of the sum (a batch's readers).
    let wakeups = match s1.switches.checked_sub(s0.switches) {
        Some(n) => format!("{:.1} wake-ups/s", n as f64 / secs),
        None => "wake-ups not counted: a thread ended meanwhile".into(),
    };
    let mut row = Row::new("idle: daemon CPU over 5 s (after 1 s of quiet)");
    row.fw = format!("{cpu_pct:.1} % ({wakeups})");
    row.floor = "0".into();
    row.goal = "≈ 0 % (≤ 0.5 %)".into();
    row.pass = Some(cpu_pct <= 0.5);
    r.rows.push(row);
}
