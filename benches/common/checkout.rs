//! W4 (performance.md §8.3): `git checkout` of a branch touching 3,000 files, in the tree as a
//! real repo.
//!
//! Setup (not timed): the current tree is committed on `main` (`git add -A && git commit`);
//! branch `B` is built with `git fast-import` from `main` with a sed-like edit (the first `fn`
//! of each line becomes `fq`) applied to 3,000 files that contain `fn` (every 5th file from
//! index 4: disjoint from the other workloads' files). The work tree is not touched by the
//! setup.
//!
//! One sample: turn start, `git checkout -q <branch>` (B, then main again), end marker.
//! filewatchd = checkout start → end marker answered (goal: captured ≤ 0.75 s); the end marker
//! must list exactly the 3,000 files as modified. Peers = the same checkout's wall time plus
//! their snapshot of the result (opencode shadow; Codex ghost commit), taken after the marker.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::codex::Codex;
use super::daemon::Daemon;
use super::gentree::GenFile;
use super::report::{Row, best_ratio, ratio_cell};
use super::shadow::Shadow;
use super::stats::{fmt_dur, fmt_int, fmt_med_p95, median, ratio};

pub const CHECKOUT_FILES: usize = 3_000;

/// The files branch B changes (see the module's doc).
pub fn picks(files: &[GenFile]) -> Vec<&GenFile> {
    files
        .iter()
        .enumerate()
        .filter(|(i, f)| i % 5 == 4 && f.has_fn)
        .map(|(_, f)| f)
        .take(CHECKOUT_FILES)
        .collect()
}

/// sed `s/fn/fq/` (first match of each line).
fn sed_fn(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for line in data.split_inclusive(|&b| b == b'\n') {
        match line.windows(2).position(|w| w == b"fn") {
            Some(i) => {
                out.extend_from_slice(&line[..i]);
                out.extend_from_slice(b"fq");
                out.extend_from_slice(&line[i + 2..]);
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// Creates `refs/heads/B` from `main` with the sed applied to `set` (read from the tree).
fn make_branch(codex: &Codex, tree: &Path, set: &[&GenFile]) -> Result<(), String> {
    let mut stream = Vec::new();
    stream.extend_from_slice(
        b"commit refs/heads/B\ncommitter bench <bench@localhost> 0 +0000\ndata 8\nbranch B\nfrom refs/heads/main\n",
    );
    for f in set {
        let p = tree.join(&f.rel);
        let data = fs::read(&p).map_err(|e| format!("read {}: {e}", p.display()))?;
        let new = sed_fn(&data);
        stream.extend_from_slice(format!("M 100644 inline {}\ndata {}\n", f.rel, new.len()).as_bytes());
        stream.extend_from_slice(&new);
        stream.push(b'\n');
    }
    let mut child = codex
        .git()
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("git fast-import: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin for git fast-import")?
        .write_all(&stream)
        .map_err(|e| format!("write to git fast-import: {e}"))?;
    let st = child.wait().map_err(|e| format!("git fast-import: {e}"))?;
    if !st.success() {
        return Err(format!("git fast-import: {st}"));
    }
    Ok(())
}

fn checkout(codex: &Codex, branch: &str) -> Result<(), String> {
    let st = codex
        .git()
        .args(["checkout", "-q", branch])
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("git checkout {branch}: {e}"))?;
    if !st.success() {
        return Err(format!("git checkout {branch}: {st}"));
    }
    Ok(())
}

#[derive(Default)]
pub struct CheckoutRun {
    pub files: usize,
    /// checkout start → end marker answered.
    pub fw: Vec<Duration>,
    /// checkout's own wall time.
    pub git: Vec<Duration>,
    /// checkout exit → end marker answered: the capture after the command (as W2 times sed).
    pub captured: Vec<Duration>,
    /// the peers' snapshot after the checkout, on its own.
    pub shadow_snap: Vec<Duration>,
    pub codex_snap: Vec<Duration>,
    /// checkout wall + snapshot.
    pub shadow: Vec<Duration>,
    pub codex: Vec<Duration>,
    /// Samples whose end marker listed exactly the files as modified.
    pub exact: usize,
    /// Files of the set missing from `changes`, summed over the samples.
    pub missed: usize,
    pub problems: Vec<String>,
}

fn check(turn: &Value, want: &BTreeSet<&str>) -> (bool, usize, String) {
    let ch = turn
        .get("changes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let got: BTreeSet<&str> = ch
        .iter()
        .filter(|c| c.get("change").and_then(Value::as_str) == Some("modified"))
        .filter_map(|c| c.get("path").and_then(Value::as_str))
        .collect();
    let missed = want.iter().filter(|p| !got.contains(*p)).count();
    let exact = ch.len() == want.len() && missed == 0;
    (
        exact,
        missed,
        format!(
            "{} changes, {missed} of the {} files missing",
            ch.len(),
            want.len()
        ),
    )
}

/// W4, `reps` × (checkout B, checkout main). See the module's doc.
pub fn run(
    name: &str,
    d: &Daemon,
    sh: &Shadow,
    codex: &Codex,
    tree: &Path,
    files: &[GenFile],
    reps: usize,
) -> Result<CheckoutRun, String> {
    let set = picks(files);
    let want: BTreeSet<&str> = set.iter().map(|f| f.rel.as_str()).collect();
    codex.commit_all("W4 base")?;
    make_branch(codex, tree, &set)?;
    d.sync()?;
    sh.snapshot()?; // the shadow's index follows the tree (untimed)
    let mut out = CheckoutRun {
        files: set.len(),
        ..Default::default()
    };
    eprintln!(
        "[{name}] W4: {reps} × git checkout B / main ({} files differ)",
        set.len()
    );
    for r in 0..reps {
        for branch in ["B", "main"] {
            d.turn_start()?;
            let t0 = Instant::now();
            checkout(codex, branch)?;
            let git = t0.elapsed();
            let (_, turn) = d.turn_end()?;
            let fw = t0.elapsed();
            let (exact, missed, text) = check(&turn, &want);
            out.exact += usize::from(exact);
            out.missed += missed;
            if !exact {
                out.problems.push(format!("rep {r} checkout {branch}: {text}"));
            }
            let (sdt, _) = sh.snapshot()?;
            let (cdt, _) = codex.snapshot()?;
            eprintln!(
                "[{name}]   checkout {branch}: git {} | checkout → end marker {} ({text}) | shadow {} | codex {}",
                fmt_dur(git),
                fmt_dur(fw),
                fmt_dur(sdt),
                fmt_dur(cdt)
            );
            out.fw.push(fw);
            out.git.push(git);
            out.captured.push(fw.saturating_sub(git));
            out.shadow_snap.push(sdt);
            out.codex_snap.push(cdt);
            out.shadow.push(git + sdt);
            out.codex.push(git + cdt);
        }
    }
    Ok(out)
}

/// The W4 row (without the disk-vs-index text, which the caller appends).
pub fn row(r: &CheckoutRun) -> Row {
    let n = r.fw.len();
    let fw = median(&r.fw);
    let ratio = best_ratio(fw, &[Some(median(&r.shadow)), Some(median(&r.codex))]);
    let mut row = Row::new(format!(
        "W4: `git checkout` of a branch changing {} files (B, then main again): checkout start → end marker answered; peers: checkout + their snapshot (n={n})",
        fmt_int(r.files as u64)
    ));
    row.fw = fmt_med_p95(&r.fw);
    row.shadow = fmt_med_p95(&r.shadow);
    row.codex = fmt_med_p95(&r.codex);
    row.ratio = ratio_cell(ratio);
    row.floor = format!("the checkout itself: {}", fmt_dur(median(&r.git)));
    row.goal = "info (the checkout itself dominates); 0 missed".into();
    row.pass = Some(r.missed == 0);
    row.correct = format!(
        "end marker listed exactly the {} modified files in {}/{n}; missed {}",
        fmt_int(r.files as u64),
        r.exact,
        r.missed
    );
    if !r.problems.is_empty() {
        row.correct += &format!("; **{}**", r.problems.join("; "));
    }
    row
}

/// `git checkout -q B` then `git checkout -q main` with no daemon running: git's own wall time
/// (run after filewatchd stopped; the branches exist from `run`).
pub fn alone(codex: &Codex, reps: usize) -> Result<Vec<Duration>, String> {
    let mut out = Vec::new();
    for _ in 0..reps {
        for branch in ["B", "main"] {
            let t0 = Instant::now();
            checkout(codex, branch)?;
            out.push(t0.elapsed());
        }
    }
    Ok(out)
}

/// The row comparing the checkout's wall time with the daemon running and stopped.
pub fn alone_row(r: &CheckoutRun, alone: &[Duration]) -> Row {
    let mut row = Row::new(format!(
        "W4: `git checkout` of {} files, its own wall time: daemon running vs stopped",
        fmt_int(r.files as u64)
    ));
    row.fw = fmt_med_p95(&r.git);
    row.shadow = format!("{} (daemon stopped, n={})", fmt_med_p95(alone), alone.len());
    row.ratio = format!("{:.2}", ratio(median(&r.git), median(alone)));
    row.goal = "info: slowdown of the agent's command".into();
    row
}

/// The W4 goal row: from the checkout's exit to the end marker's answer (every version of the
/// 3,000 files recorded), against each peer's snapshot of the same result.
pub fn captured_row(r: &CheckoutRun) -> Row {
    let n = r.captured.len();
    let fw = median(&r.captured);
    let ratio = best_ratio(fw, &[Some(median(&r.shadow_snap)), Some(median(&r.codex_snap))]);
    let mut row = Row::new(format!(
        "W4: the same checkouts, checkout exit → end marker answered (captured); peers: their snapshot after the checkout (n={n})"
    ));
    row.fw = fmt_med_p95(&r.captured);
    row.shadow = fmt_med_p95(&r.shadow_snap);
    row.codex = fmt_med_p95(&r.codex_snap);
    row.ratio = ratio_cell(ratio);
    row.floor = "W2's floor × 1.5 (~0.45 s)".into();
    row.goal = "≤ 0.75 s to captured; 0 missed".into();
    row.pass = Some(fw <= Duration::from_millis(750) && r.missed == 0);
    row.correct = format!("missed {}", r.missed);
    row
}
