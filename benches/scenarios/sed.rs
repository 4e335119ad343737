//! W2: `sed -i` over 2,000 files in a turn, sed's exit → the end marker, against both peers'
//! snapshots, with the daemon's CPU against sed's own; and at the end, the same sed with the
//! daemon stopped, for sed's own wall time.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::run::{Run, codex_turn, peer_cell, ticks_to_dur, tracked_text};
use crate::common::daemon::{self, Daemon};
use crate::common::edits::{SED_FILES, Tally, check_changes, run_sed, sed_baseline_reps, sed_script};
use crate::common::gentree::GenFile;
use crate::common::report::{Row, best_ratio, ratio_cell};
use crate::common::stats::{fmt_dur, fmt_int, fmt_med_p95, fmt_ratio, median, ratio};

/// What W2 hands on to the "sed without the daemon" row measured at the end.
pub struct SedOut {
    pub list: Vec<u8>,
    pub files: usize,
    sed_time: Vec<Duration>,
    row_at: usize,
}

/// The files W2's sed runs over.
struct SedFiles {
    /// Their paths, each followed by a NUL (for `xargs -0`).
    list: Vec<u8>,
    count: usize,
    /// Those that contain the pattern: the files each run changes.
    expected: BTreeSet<String>,
}

/// W2's samples, one per sed run.
#[derive(Default)]
struct SedSamples {
    capture: Vec<Duration>,
    sed_time: Vec<Duration>,
    sh: Vec<Duration>,
    cx: Vec<Duration>,
    daemon_cpu: Vec<Duration>,
    sed_cpu: Vec<Duration>,
    tally: Tally,
}

/// Every 10th file of the sorted list from the 3rd, `SED_FILES` of them.
fn sed_files(files: &[GenFile]) -> SedFiles {
    let picks: Vec<&GenFile> = files
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 == 2)
        .map(|(_, f)| f)
        .take(SED_FILES)
        .collect();
    let expected: BTreeSet<String> = picks.iter().filter(|f| f.has_fn).map(|f| f.rel.clone()).collect();
    let mut list = Vec::new();
    for f in &picks {
        list.extend_from_slice(f.rel.as_bytes());
        list.push(0);
    }
    SedFiles {
        list,
        count: picks.len(),
        expected,
    }
}

/// W2: `sed -i` over 2,000 files, sed exit → end marker, against both peers' snapshots.
pub fn w2_sed(r: &mut Run, d: &Daemon) -> Result<SedOut, String> {
    let files = sed_files(&r.g.files);
    let expected: BTreeSet<&str> = files.expected.iter().map(String::as_str).collect();
    let mut s = SedSamples::default();
    eprintln!(
        "[{}] W2: {} runs of sed -i over {} files ({} contain the pattern)",
        r.name,
        r.o.sed_reps,
        files.count,
        expected.len()
    );
    for rep in 0..r.o.sed_reps {
        one_sed(r, d, (&files.list, &expected), rep, &mut s)?;
    }
    let row = capture_row(r, d, &s, &files)?;
    r.push_verified(row, "W2");
    r.rows.push(cpu_row(&s));
    r.notes.push(format!(
        "W2 (sed): `xargs -0 sed -i -e SCRIPT` (one sed process). {} of the {} files contain `fn`: that many change in each run (run 1 is `s/fn/fx/`, run 2 `s/fx/fy/`, and so on, so every run writes content never seen before); sed rewrites the other files byte for byte, which is not a change.",
        fmt_int(expected.len() as u64),
        fmt_int(files.count as u64)
    ));
    Ok(SedOut {
        list: files.list,
        files: files.count,
        sed_time: s.sed_time,
        row_at: r.rows.len(),
    })
}

/// Run `rep` of W2 in a turn of its own: sed, the end marker, then the peers' snapshots.
fn one_sed(
    r: &mut Run,
    d: &Daemon,
    (list, expected): (&[u8], &BTreeSet<&str>),
    rep: usize,
    s: &mut SedSamples,
) -> Result<(), String> {
    d.turn_start()?;
    let script = sed_script(rep);
    let (cpu0, ch0) = (d.sample(), daemon::children_ticks());
    let t0 = Instant::now();
    run_sed(&r.tree, list, &script)?;
    let t_exit = Instant::now();
    let ch1 = daemon::children_ticks();
    let (_, turn) = d.turn_end()?;
    let cap = t_exit.elapsed();
    let cpu1 = d.sample();
    s.tally.add(&check_changes(&turn, expected), expected.len());
    let (sdt, _) = r.peer(d, |r| r.sh.snapshot())?;
    let cdt = codex_turn(r, d, rep)?;
    eprintln!(
        "[{}]   sed {rep} ({script}): sed {} | exit → end marker {} | shadow {} | codex {}",
        r.name,
        fmt_dur(t_exit - t0),
        fmt_dur(cap),
        fmt_dur(sdt),
        cdt.map(fmt_dur).unwrap_or_else(|| "–".into())
    );
    s.capture.push(cap);
    s.sed_time.push(t_exit - t0);
    s.sh.push(sdt);
    s.cx.extend(cdt);
    s.daemon_cpu.push(ticks_to_dur(cpu1.ticks - cpu0.ticks, r.tck));
    s.sed_cpu.push(ticks_to_dur(ch1 - ch0, r.tck));
    Ok(())
}

fn capture_row(r: &mut Run, d: &Daemon, s: &SedSamples, files: &SedFiles) -> Result<Row, String> {
    let st = d.status()?;
    let (ok, mut text) = tracked_text(&st, r.n);
    r.correct_ok &= ok && s.tally.ok();
    text += &s.tally.text(files.expected.len(), "runs");
    let m = median(&s.capture);
    r.fw_sed = Some(m);
    let best = best_ratio(
        m,
        &[Some(median(&s.sh)), (!s.cx.is_empty()).then(|| median(&s.cx))],
    );
    let mut row = Row::new(format!(
        "W2: `sed -i` over {} files: sed exit → end marker (n={})",
        fmt_int(files.count as u64),
        r.o.sed_reps
    ));
    row.fw = fmt_med_p95(&s.capture);
    row.shadow = fmt_med_p95(&s.sh);
    row.codex = peer_cell(&s.cx);
    row.ratio = ratio_cell(best);
    row.floor = "~0.3 s: read+hash ~30 MB, zstd-1, blob writes (~0.4 s with fsync)".into();
    row.goal = "≤ 0.5 s; ≤ 0.5× best peer".into();
    row.pass = Some(m <= Duration::from_millis(500) && best.is_some_and(|b| b <= 0.5));
    row.correct = text;
    Ok(row)
}

fn cpu_row(s: &SedSamples) -> Row {
    let cr = ratio(median(&s.daemon_cpu), median(&s.sed_cpu));
    let mut row = Row::new("W2: daemon CPU during sed + capture, vs sed's own CPU");
    row.fw = fmt_dur(median(&s.daemon_cpu));
    row.shadow = format!("{} (sed's own)", fmt_dur(median(&s.sed_cpu)));
    row.ratio = fmt_ratio(cr);
    row.goal = "≤ 1× sed's CPU (perf. W2)".into();
    row.pass = Some(cr <= 1.0);
    row
}

/// Runs `sed` again with the daemon stopped, for sed's own time.
pub fn sed_alone_row(r: &mut Run, sed: &SedOut) -> Result<(), String> {
    let mut alone = Vec::new();
    for k in 0..sed_baseline_reps(r.o.sed_reps) {
        let script = sed_script(r.o.sed_reps + k);
        let t0 = Instant::now();
        run_sed(&r.tree, &sed.list, &script)?;
        alone.push(t0.elapsed());
        eprintln!(
            "[{}]   sed without the daemon ({script}): {}",
            r.name,
            fmt_dur(alone[k])
        );
    }
    let mut row = Row::new(format!(
        "W2: `sed -i` over {} files, its own wall time: daemon running vs stopped",
        fmt_int(sed.files as u64)
    ));
    row.fw = fmt_med_p95(&sed.sed_time);
    row.shadow = format!("{} (daemon stopped, n={})", fmt_dur(median(&alone)), alone.len());
    row.ratio = fmt_ratio(ratio(median(&sed.sed_time), median(&alone)));
    row.goal = "info: slowdown of the agent's command".into();
    r.rows.insert(sed.row_at.min(r.rows.len()), row);
    Ok(())
}
