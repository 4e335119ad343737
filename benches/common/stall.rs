//! W8 (performance.md §8.3): a stalled daemon.
//!
//! Turn start; `SIGSTOP` the daemon; create 30,000 small files in one existing tracked dir
//! (far more events than the kernel's 16,384-event queue); wait until 6 s have passed since the
//! stop (the workload's own stall, not a synchronisation); `SIGCONT`; end marker, timed from the
//! `SIGCONT`. Checked: the overflow was counted, a rescan ran, and the end marker lists every
//! file as added with the BLAKE3 of what was written; a sample of 64 files is also read back
//! through `GET /v1/content` and compared byte for byte. The files stay (W8 is the last
//! workload before the restart, which then reconciles them too).

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::burst::hex;
use super::daemon::Daemon;
use super::report::Row;
use super::stats::{fmt_dur, fmt_int};

pub const STALL_FILES: usize = 30_000;
pub const STALL: Duration = Duration::from_secs(6);

#[derive(Default)]
pub struct StallRun {
    pub dir: String,
    /// Writing the files while the daemon was stopped.
    pub write: Duration,
    /// SIGCONT → end marker answered.
    pub fw: Duration,
    /// The daemon's own account of its rescan (`/v1/status` `watcher.last_rescan`): walking
    /// and comparing with the index, then the whole rescan with reading and recording.
    pub survey_ms: u64,
    pub rescan_ms: u64,
    pub walked: u64,
    pub overflows: u64,
    pub rescans: u64,
    /// Files listed as added with the right hash.
    pub captured: usize,
    pub changes: usize,
    /// Sampled files whose content endpoint answered the exact bytes, of how many.
    pub content_ok: usize,
    pub content_checked: usize,
}

impl StallRun {
    pub fn ok(&self) -> bool {
        self.overflows > 0
            && self.rescans > 0
            && self.captured == STALL_FILES
            && self.content_ok == self.content_checked
    }
}

fn watcher(d: &Daemon) -> Result<(u64, u64), String> {
    let st = d.status()?;
    let g = |p: &str| st.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Ok((g("/watcher/overflows"), g("/watcher/rescans")))
}

/// `watcher.last_rescan`: (survey ms, total ms, paths walked).
fn last_rescan(d: &Daemon) -> Result<(u64, u64, u64), String> {
    let st = d.status()?;
    let g = |p: &str| st.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Ok((
        g("/watcher/last_rescan/survey_ms"),
        g("/watcher/last_rescan/total_ms"),
        g("/watcher/last_rescan/walked"),
    ))
}

fn content(i: usize) -> String {
    format!("stalled write {i:05}: the daemon was stopped when this was written\n")
}

/// Writes the files into `dir`; returns relative path → BLAKE3.
fn write_files(tree: &Path, dir: &str) -> Result<HashMap<String, [u8; 32]>, String> {
    let mut out = HashMap::with_capacity(STALL_FILES);
    for i in 0..STALL_FILES {
        let rel = format!("{dir}/stall-{i:05}.txt");
        let text = content(i);
        let p = tree.join(&rel);
        fs::write(&p, &text).map_err(|e| format!("write {}: {e}", p.display()))?;
        out.insert(rel, *blake3::hash(text.as_bytes()).as_bytes());
    }
    Ok(out)
}

fn count_captured(turn: &Value, want: &HashMap<String, [u8; 32]>) -> (usize, usize) {
    let ch = turn
        .get("changes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ok = ch
        .iter()
        .filter(|c| c.get("change").and_then(Value::as_str) == Some("added"))
        .filter(|c| {
            let p = c.get("path").and_then(Value::as_str).unwrap_or("");
            let h = c.get("hash").and_then(Value::as_str).unwrap_or("");
            want.get(p).is_some_and(|w| hex(w) == h)
        })
        .count();
    (ok, ch.len())
}

/// Reads every 469th file back through `/v1/content` (64 files).
fn check_content(d: &Daemon, dir: &str) -> Result<(usize, usize), String> {
    let (mut ok, mut n) = (0, 0);
    for i in (0..STALL_FILES).step_by(469) {
        let (status, body) = d.get_text(&format!("/v1/content?path={dir}/stall-{i:05}.txt"))?;
        n += 1;
        if status == 200 && body == content(i) {
            ok += 1;
        }
    }
    Ok((ok, n))
}

/// W8 in `dir` (an existing tracked dir, relative). See the module's doc.
pub fn run(name: &str, d: &Daemon, tree: &Path, dir: &str) -> Result<StallRun, String> {
    let mut out = StallRun {
        dir: dir.to_string(),
        ..Default::default()
    };
    eprintln!("[{name}] W8: SIGSTOP, {STALL_FILES} files into {dir}/, 6 s stall, SIGCONT, end marker");
    let (o0, r0) = watcher(d)?;
    d.turn_start()?;
    d.signal("STOP")?;
    let t_stop = Instant::now();
    let written = write_files(tree, dir);
    out.write = t_stop.elapsed();
    if let Some(left) = STALL.checked_sub(t_stop.elapsed()) {
        std::thread::sleep(left); // the workload's stall itself
    }
    d.signal("CONT")?;
    let want = written?;
    let t_cont = Instant::now();
    let (_, turn) = d.turn_end()?;
    out.fw = t_cont.elapsed();
    let (o1, r1) = watcher(d)?;
    out.overflows = o1 - o0;
    out.rescans = r1 - r0;
    (out.survey_ms, out.rescan_ms, out.walked) = last_rescan(d)?;
    (out.captured, out.changes) = count_captured(&turn, &want);
    (out.content_ok, out.content_checked) = check_content(d, dir)?;
    eprintln!(
        "[{name}]   writes {} while stopped | SIGCONT → end marker {} (rescan: survey of {} paths {} ms, all {} ms) | {}/{STALL_FILES} files with the right hash ({} changes) | overflows +{}, rescans +{} | content {}/{}",
        fmt_dur(out.write),
        fmt_dur(out.fw),
        fmt_int(out.walked),
        out.survey_ms,
        out.rescan_ms,
        out.captured,
        out.changes,
        out.overflows,
        out.rescans,
        out.content_ok,
        out.content_checked
    );
    Ok(out)
}

/// The W8 rows (without the disk-vs-index text, which the caller appends).
pub fn rows(r: &StallRun) -> Vec<Row> {
    let mut row = Row::new(format!(
        "W8: daemon SIGSTOPped 6 s while {} files are created in `{}/`: SIGCONT → end marker answered",
        fmt_int(STALL_FILES as u64),
        r.dir
    ));
    row.fw = format!(
        "{}; the rescan: survey (stat walk of {} paths + compare) {} ms, with recording {} ms (writes took {} while stopped)",
        fmt_dur(r.fw),
        fmt_int(r.walked),
        r.survey_ms,
        r.rescan_ms,
        fmt_dur(r.write)
    );
    row.floor = "scoped rescan: stat walk ~0.07 s (t20k) + read and store 30k small files".into();
    row.goal = "overflow detected, rescan run, 100 % exact history (perf.: rescan ≤ 0.5 s warm)".into();
    row.pass = Some(r.ok());
    row.correct = format!(
        "overflows +{}, rescans +{}; {}/{} files listed as added with the BLAKE3 of what was written ({} changes); `/v1/content` gave the exact bytes for {}/{} sampled files",
        r.overflows,
        r.rescans,
        fmt_int(r.captured as u64),
        fmt_int(STALL_FILES as u64),
        fmt_int(r.changes as u64),
        r.content_ok,
        r.content_checked
    );
    vec![row]
}
