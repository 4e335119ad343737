//! W1: turns of 5 appended files, each ended by the end marker, against both peers' snapshots
//! of the same state; W1d: the same turns with half the dirs unwatched; and W1's t100k turn
//! end against t20k's.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use super::run::{Run, codex_turn, peer_cell, tracked_text};
use crate::common::daemon::Daemon;
use crate::common::degraded;
use crate::common::edits::{EDIT_FILES, Tally, append_line, check_changes};
use crate::common::gentree::GenFile;
use crate::common::report::{Row, best_ratio, ratio_cell};
use crate::common::stats::{fmt_dur, fmt_med_p95, fmt_ratio, median, percentile, ratio};

/// W1's samples, one per turn.
#[derive(Default)]
struct TurnSamples {
    fw: Vec<Duration>,
    sh: Vec<Duration>,
    cx: Vec<Duration>,
    tally: Tally,
}

/// Every 10th file of the sorted list, from the one at `at`.
fn every_tenth(files: &[GenFile], at: usize) -> Vec<String> {
    files
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 == at)
        .map(|(_, f)| f.rel.clone())
        .collect()
}

/// W1: turns of 5 appended files; returns filewatchd's samples (for the t100k flatness row).
pub fn w1_turns(r: &mut Run, d: &Daemon) -> Result<Vec<Duration>, String> {
    let picks = every_tenth(&r.g.files, 7);
    let mut s = TurnSamples::default();
    eprintln!(
        "[{}] W1: {} turns of {EDIT_FILES} appended files",
        r.name, r.o.reps
    );
    for rep in 0..r.o.reps {
        one_turn(r, d, &picks, rep, &mut s)?;
    }
    let row = turns_row(r, d, &s)?;
    r.push_verified(row, "W1");
    Ok(s.fw)
}

/// Turn `rep` of W1: its 5 edits, the end marker, then the peers' snapshots.
fn one_turn(
    r: &mut Run,
    d: &Daemon,
    picks: &[String],
    rep: usize,
    s: &mut TurnSamples,
) -> Result<(), String> {
    d.turn_start()?;
    let set: Vec<&String> = (0..EDIT_FILES)
        .map(|k| &picks[(rep * EDIT_FILES + k) % picks.len()])
        .collect();
    for (k, f) in set.iter().enumerate() {
        append_line(&r.tree.join(f), &format!("// fwbench edit {rep}.{k}\n"))?;
    }
    let (dt, turn) = d.turn_end()?;
    let expected: BTreeSet<&str> = set.iter().map(|f| f.as_str()).collect();
    s.tally.add(&check_changes(&turn, &expected), expected.len());
    let (sdt, _) = r.peer(d, |r| r.sh.snapshot())?;
    let cdt = codex_turn(r, d, rep)?;
    eprintln!(
        "[{}]   turn {rep}: filewatchd {} | shadow {} | codex {}",
        r.name,
        fmt_dur(dt),
        fmt_dur(sdt),
        cdt.map(fmt_dur).unwrap_or_else(|| "–".into())
    );
    s.fw.push(dt);
    s.sh.push(sdt);
    s.cx.extend(cdt);
    Ok(())
}

fn turns_row(r: &mut Run, d: &Daemon, s: &TurnSamples) -> Result<Row, String> {
    let st = d.status()?;
    let (ok, mut text) = tracked_text(&st, r.n);
    r.correct_ok &= ok && s.tally.ok();
    text += &s.tally.text(EDIT_FILES, "turns");
    let m = median(&s.fw);
    let best = best_ratio(
        m,
        &[Some(median(&s.sh)), (!s.cx.is_empty()).then(|| median(&s.cx))],
    );
    let mut row = Row::new(format!(
        "W1: turn end after editing {EDIT_FILES} files (n={})",
        r.o.reps
    ));
    row.fw = fmt_med_p95(&s.fw);
    row.shadow = fmt_med_p95(&s.sh);
    row.codex = peer_cell(&s.cx);
    row.ratio = ratio_cell(best);
    row.floor = "~1 ms: hash ~75 KB + 1 fsync'd SQLite tx".into();
    row.goal = "p95 ≤ 10 ms; ≤ 0.1× best peer".into();
    row.pass = Some(percentile(&s.fw, 95.0) <= Duration::from_millis(10) && best.is_some_and(|b| b <= 0.1));
    row.correct = text;
    Ok(row)
}

/// W1 again with the daemon at the inotify watch limit (half the dirs unwatched), after the
/// main daemon stopped: the same index, restarted in a user namespace of its own.
pub fn degraded_row(r: &mut Run, bin: &Path, log: &Path) -> Result<(), String> {
    eprintln!(
        "[{}] W1d: turns with half the dirs unwatched (watch limit)",
        r.name
    );
    let picks = every_tenth(&r.g.files, 3);
    let setup = degraded::Setup {
        bin,
        tree: &r.tree,
        state: &r.state,
        log,
        dirs: r.g.dirs,
        picks: &picks,
        reps: r.o.reps,
    };
    if let Some(row) = degraded::run(&setup)? {
        r.rows.push(row);
    }
    Ok(())
}

/// The t100k turn end against t20k's (W1: flat from t20k to t100k), from each tree's samples.
pub fn flatness_row(t20k: &[Duration], t100k: &[Duration]) -> Row {
    let (m20, m100) = (median(t20k), median(t100k));
    let limit = m20.mul_f64(1.5) + Duration::from_millis(2);
    let mut row = Row::new(format!(
        "W1: turn end after {EDIT_FILES} edits: t100k vs t20k (same within noise)"
    ));
    row.fw = format!("{} (t100k)", fmt_dur(m100));
    row.shadow = format!("{} (filewatchd, t20k)", fmt_dur(m20));
    row.ratio = fmt_ratio(ratio(m100, m20));
    row.goal = "≤ 1.5× t20k + 2 ms".into();
    row.pass = Some(m100 <= limit);
    row
}
