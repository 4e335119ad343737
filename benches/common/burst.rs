//! W3 (performance.md §8.3): an npm-like burst of 30,000 small files in 300 new dirs
//! (`p###/lib/m##.js`), written as fast as the bench can.
//!
//! - W3a: into a gitignored `node_modules/`. The burst's wall time with the daemon running is
//!   compared with the same burst while the daemon is SIGSTOPped (alternating, after one
//!   untimed warm-up burst; the median of each); the inotify watches of the daemon (`/proc/<pid>/fdinfo`) must include none of the
//!   burst's directories, and no version may be recorded (`latest_seq` unchanged across the
//!   turn, `changes` empty).
//! - W3b: into a new tracked dir `npm/`: burst exit → end marker, every file in `changes`
//!   with the BLAKE3 of what was written, `store_bytes` growth against the raw bytes, and the
//!   opencode shadow snapshot of the same tree for comparison. The dir is removed afterwards in
//!   a turn of its own (its deletions checked, its time reported).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::daemon::Daemon;
use super::report::Row;
use super::shadow::Shadow;
use super::stats::{fmt_bytes, fmt_dur, fmt_int, fmt_med_p95, fmt_ratio, median, ratio};

pub const BURST_DIRS: usize = 300;
pub const BURST_PER_DIR: usize = 100;
pub const BURST_FILES: usize = BURST_DIRS * BURST_PER_DIR;

/// What one burst wrote: relative path (under the burst's base) → BLAKE3, and raw bytes.
pub struct Burst {
    pub files: HashMap<String, [u8; 32]>,
    pub bytes: u64,
}

fn content(tag: &str, d: usize, f: usize) -> String {
    format!("module.exports = \"{tag}-p{d:03}-m{f:02}\";\n")
}

/// Writes `p###/lib/m##.js` under `base` (`prefix` = `base` relative to the root, for the
/// returned paths).
pub fn write_burst(base: &Path, prefix: &str, tag: &str) -> Result<Burst, String> {
    let mut out = Burst {
        files: HashMap::with_capacity(BURST_FILES),
        bytes: 0,
    };
    for d in 0..BURST_DIRS {
        let dir = base.join(format!("p{d:03}/lib"));
        fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        for f in 0..BURST_PER_DIR {
            let text = content(tag, d, f);
            let p = dir.join(format!("m{f:02}.js"));
            fs::write(&p, &text).map_err(|e| format!("write {}: {e}", p.display()))?;
            out.bytes += text.len() as u64;
            out.files.insert(
                format!("{prefix}/p{d:03}/lib/m{f:02}.js"),
                *blake3::hash(text.as_bytes()).as_bytes(),
            );
        }
    }
    Ok(out)
}

/// Inodes of every inotify watch the process holds (the `inotify wd:` lines of the fdinfo of
/// each of its inotify fds).
pub fn watched_inodes(pid: u32) -> Vec<u64> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return out;
    };
    for e in rd.flatten() {
        let is_inotify = fs::read_link(e.path())
            .map(|l| l.to_string_lossy().contains("inotify"))
            .unwrap_or(false);
        if !is_inotify {
            continue;
        }
        let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", e.file_name().to_string_lossy()))
            .unwrap_or_default();
        for l in info.lines().filter(|l| l.starts_with("inotify wd:")) {
            let ino = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix("ino:"))
                .and_then(|h| u64::from_str_radix(h, 16).ok());
            out.extend(ino);
        }
    }
    out
}

/// Inodes of `dir` and every directory beneath it.
fn dir_inodes(dir: &Path) -> HashSet<u64> {
    let mut out = HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(md) = fs::symlink_metadata(&d) {
            out.insert(md.ino());
        }
        if let Ok(rd) = fs::read_dir(&d) {
            for e in rd.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    stack.push(e.path());
                }
            }
        }
    }
    out
}

/// Empties `dir` (keeps `dir` itself), then `sync`, so the next burst starts on a quiet disk.
fn empty_dir(dir: &Path) -> Result<(), String> {
    let rd = fs::read_dir(dir).map_err(|e| format!("read_dir {}: {e}", dir.display()))?;
    for e in rd.flatten() {
        fs::remove_dir_all(e.path()).map_err(|e2| format!("rm -r {}: {e2}", e.path().display()))?;
    }
    let _ = Command::new("sync").status();
    Ok(())
}

fn seq(d: &Daemon) -> Result<u64, String> {
    Ok(d.status()?
        .pointer("/latest_seq")
        .and_then(Value::as_u64)
        .unwrap_or(0))
}

fn changes(v: &Value) -> Vec<Value> {
    v.get("changes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// W3a's measurements.
#[derive(Default)]
pub struct IgnoredRun {
    pub running: Vec<Duration>,
    pub stopped: Vec<Duration>,
    /// Largest number of the daemon's watches on a directory of `node_modules/` (after a burst).
    pub watches_inside: usize,
    /// The daemon's watch count before the first burst and the largest seen after one.
    pub watches_before: usize,
    pub watches_after: usize,
    /// Versions recorded across the bursts' turns (`latest_seq` delta) and changes listed.
    pub seq_delta: u64,
    pub changes: usize,
    /// The daemon's CPU time over all the running bursts (turn markers included).
    pub daemon_cpu: Duration,
}

/// W3a: see the module's doc. `reps` pairs of bursts (daemon running / stopped).
pub fn run_ignored(
    name: &str,
    d: &Daemon,
    tree: &Path,
    (reps, tck): (usize, u64),
) -> Result<IgnoredRun, String> {
    let gi = tree.join(".gitignore");
    let mut text = fs::read_to_string(&gi).unwrap_or_default();
    if !text.lines().any(|l| l == "node_modules/") {
        text.push_str("node_modules/\n");
        fs::write(&gi, &text).map_err(|e| format!("write {}: {e}", gi.display()))?;
    }
    d.sync()?; // the daemon has read the new rule before node_modules/ exists
    let nm = tree.join("node_modules");
    fs::create_dir_all(&nm).map_err(|e| format!("mkdir {}: {e}", nm.display()))?;
    d.sync()?;
    let mut out = IgnoredRun {
        watches_before: watched_inodes(d.pid).len(),
        ..Default::default()
    };
    eprintln!(
        "[{name}] W3a: {reps} × 2 bursts of {BURST_FILES} files into gitignored node_modules/ (daemon running / SIGSTOPped), {} watches before",
        out.watches_before
    );
    // One untimed burst first: the first 30,000 inodes of a run cost more (ext4 allocates
    // fresh inode tables), whichever side would come first.
    write_burst(&nm, "node_modules", "warm-up")?;
    empty_dir(&nm)?;
    for r in 0..reps {
        for running in [r % 2 == 0, r % 2 != 0] {
            let _ = Command::new("sync").status();
            let tag = format!("ign{r}{}", if running { "r" } else { "s" });
            if running {
                let s0 = seq(d)?;
                let cpu0 = d.sample().ticks;
                d.turn_start()?;
                let t0 = Instant::now();
                write_burst(&nm, "node_modules", &tag)?;
                out.running.push(t0.elapsed());
                let (_, turn) = d.turn_end()?;
                out.daemon_cpu += Duration::from_secs_f64((d.sample().ticks - cpu0) as f64 / tck as f64);
                out.changes += changes(&turn).len();
                out.seq_delta += seq(d)?.saturating_sub(s0);
                let w = watched_inodes(d.pid);
                let inside = dir_inodes(&nm);
                out.watches_inside = out
                    .watches_inside
                    .max(w.iter().filter(|i| inside.contains(i)).count());
                out.watches_after = out.watches_after.max(w.len());
            } else {
                d.signal("STOP")?;
                let t0 = Instant::now();
                let res = write_burst(&nm, "node_modules", &tag);
                let dt = t0.elapsed();
                d.signal("CONT")?;
                res?;
                out.stopped.push(dt);
                d.sync()?;
            }
            let last = if running {
                out.running.last()
            } else {
                out.stopped.last()
            };
            eprintln!(
                "[{name}]   burst {r} ({}): {}",
                if running {
                    "daemon running"
                } else {
                    "daemon stopped"
                },
                fmt_dur(last.copied().unwrap_or_default())
            );
            empty_dir(&nm)?;
        }
    }
    Ok(out)
}

/// W3b's measurements.
#[derive(Default)]
pub struct TrackedRun {
    /// Burst wall time (daemon running) and burst exit → end marker answered.
    pub burst: Vec<Duration>,
    pub capture: Vec<Duration>,
    /// opencode shadow snapshot after the burst.
    pub shadow: Vec<Duration>,
    /// Per repetition: files of the burst listed as changes with the right hash.
    pub captured: Vec<usize>,
    /// Per repetition: `store_bytes` growth and the burst's raw bytes.
    pub stored: Vec<(u64, u64)>,
    /// Per repetition: growth of the state dir on disk (index + WAL + blob files).
    pub state_disk: Vec<u64>,
    /// Daemon CPU (user + sys) from the burst's start to the end marker's answer.
    pub cpu: Vec<Duration>,
    /// Removing the dir afterwards: rm → end marker, deletions listed.
    pub cleanup: Vec<Duration>,
    pub deleted: Vec<usize>,
    pub problems: Vec<String>,
}

fn store_bytes(d: &Daemon) -> Result<u64, String> {
    Ok(d.status()?
        .pointer("/store_bytes")
        .and_then(Value::as_u64)
        .unwrap_or(0))
}

/// Files of `want` listed in `changes` as added files with the expected hash.
fn count_captured(ch: &[Value], want: &HashMap<String, [u8; 32]>) -> usize {
    ch.iter()
        .filter(|c| c.get("kind").and_then(Value::as_str) == Some("file"))
        .filter(|c| {
            let (Some(p), Some(h)) = (
                c.get("path").and_then(Value::as_str),
                c.get("hash").and_then(Value::as_str),
            ) else {
                return false;
            };
            want.get(p).is_some_and(|w| hex(w) == h)
        })
        .count()
}

pub fn hex(h: &[u8; 32]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// W3b: see the module's doc.
pub fn run_tracked(
    name: &str,
    d: &Daemon,
    sh: &Shadow,
    tree: &Path,
    state: &Path,
    (reps, tck): (usize, u64),
) -> Result<TrackedRun, String> {
    let mut out = TrackedRun::default();
    let base = tree.join("npm");
    eprintln!("[{name}] W3b: {reps} × burst of {BURST_FILES} files into a new tracked dir npm/");
    for r in 0..reps {
        let _ = Command::new("sync").status();
        let (b0, disk0) = (store_bytes(d)?, super::gentree::disk_usage(state));
        d.turn_start()?;
        let cpu0 = d.sample().ticks;
        let t0 = Instant::now();
        let burst = write_burst(&base, "npm", &format!("trk{r}"))?;
        let t_exit = Instant::now();
        let (_, turn) = d.turn_end()?;
        let cap = t_exit.elapsed();
        let cpu = Duration::from_secs_f64((d.sample().ticks - cpu0) as f64 / tck as f64);
        out.cpu.push(cpu);
        let ch = changes(&turn);
        let got = count_captured(&ch, &burst.files);
        let b1 = store_bytes(d)?;
        out.stored.push((b1.saturating_sub(b0), burst.bytes));
        out.state_disk
            .push(super::gentree::disk_usage(state).saturating_sub(disk0));
        let (sdt, _) = sh.snapshot()?;
        eprintln!(
            "[{name}]   burst {r}: {} (daemon CPU {}) | exit → end marker {} ({got}/{BURST_FILES} files with the right hash, {} changes) | shadow {}",
            fmt_dur(t_exit - t0),
            fmt_dur(cpu),
            fmt_dur(cap),
            ch.len(),
            fmt_dur(sdt)
        );
        out.burst.push(t_exit - t0);
        out.capture.push(cap);
        out.captured.push(got);
        out.shadow.push(sdt);
        // Remove it again, in a turn of its own.
        d.turn_start()?;
        let t0 = Instant::now();
        fs::remove_dir_all(&base).map_err(|e| format!("rm -r {}: {e}", base.display()))?;
        let (_, turn) = d.turn_end()?;
        out.cleanup.push(t0.elapsed());
        let deleted = changes(&turn)
            .iter()
            .filter(|c| {
                c.get("change").and_then(Value::as_str) == Some("deleted")
                    && c.get("kind").and_then(Value::as_str) == Some("file")
            })
            .count();
        out.deleted.push(deleted);
        if got != BURST_FILES || deleted != BURST_FILES {
            out.problems.push(format!(
                "rep {r}: {got}/{BURST_FILES} files captured with the right hash, {deleted}/{BURST_FILES} deletions listed"
            ));
        }
        sh.snapshot()?; // the shadow's index follows the tree again (untimed)
    }
    Ok(out)
}

/// The W3a row (without the disk-vs-index text, which the caller appends).
pub fn ignored_row(r: &IgnoredRun) -> Row {
    let (run, stop) = (median(&r.running), median(&r.stopped));
    let slowdown = ratio(run, stop);
    let mut row = Row::new(format!(
        "W3a: burst of {} files in {BURST_DIRS} new dirs under a gitignored `node_modules/`: burst wall time, daemon running vs SIGSTOPped (n={} each)",
        fmt_int(BURST_FILES as u64),
        r.running.len()
    ));
    row.fw = format!("{} (stopped: {})", fmt_med_p95(&r.running), fmt_dur(stop));
    row.ratio = format!("{} (running / stopped)", fmt_ratio(slowdown));
    row.floor = format!(
        "0 (ignored: no watch, no event); daemon CPU over the {} running bursts and their turn markers: {}",
        r.running.len(),
        fmt_dur(r.daemon_cpu)
    );
    row.goal = "no watches in `node_modules/`; 0 rows; ≤ 1.01× the burst without the daemon".into();
    row.pass = Some(r.watches_inside == 0 && r.seq_delta == 0 && r.changes == 0 && slowdown <= 1.01);
    row.correct = format!(
        "watches on `node_modules/` dirs: {} (daemon's watches {} before, ≤ {} after); versions recorded over the turns: {}; changes listed: {}",
        r.watches_inside, r.watches_before, r.watches_after, r.seq_delta, r.changes
    );
    row
}

/// The W3b rows: capture time, storage, and the removal afterwards.
/// `stopped`: W3a's burst with the daemon stopped (the same burst's wall time without it).
pub fn tracked_rows(r: &TrackedRun, stopped: Option<Duration>) -> Vec<Row> {
    let n = r.capture.len();
    let cap = median(&r.capture);
    let all = r.captured.iter().all(|&c| c == BURST_FILES);
    let (stored, raw) = r.stored.iter().fold((0, 0), |a, s| (a.0 + s.0, a.1 + s.1));
    let share = stored as f64 / raw.max(1) as f64;
    let mut row = Row::new(format!(
        "W3b: the same burst into a new tracked dir `npm/`: burst exit → end marker (n={n})"
    ));
    row.fw = fmt_med_p95(&r.capture);
    row.shadow = format!("{} (snapshot after the burst)", fmt_med_p95(&r.shadow));
    row.codex = "not snapshotted: Codex leaves out untracked dirs of ≥ 200 files".into();
    row.ratio = fmt_ratio(ratio(cap, median(&r.shadow)));
    row.floor = format!(
        "≈ 0 if capture keeps up; the burst itself took {} (with the daemon stopped, W3a: {}); daemon CPU from the burst's start to the answer: {}",
        fmt_dur(median(&r.burst)),
        stopped.map(fmt_dur).unwrap_or_else(|| "not run".into()),
        fmt_dur(median(&r.cpu))
    );
    row.goal = "100 % captured; ≤ 1.5 s after the burst".into();
    row.pass = Some(all && cap <= Duration::from_millis(1500));
    row.correct = format!(
        "files listed with the BLAKE3 of what was written: {}",
        r.captured
            .iter()
            .map(|c| format!("{}/{}", fmt_int(*c as u64), fmt_int(BURST_FILES as u64)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !r.problems.is_empty() {
        row.correct += &format!("; **{}**", r.problems.join("; "));
    }
    let disk: u64 = r.state_disk.iter().sum::<u64>() / r.state_disk.len().max(1) as u64;
    let mut st = Row::new("W3b storage: `store_bytes` growth over the burst vs its raw bytes");
    st.fw = format!(
        "{} for {} raw ({share:.2}×); state dir on disk +{}",
        fmt_bytes(stored / n.max(1) as u64),
        fmt_bytes(raw / n.max(1) as u64),
        fmt_bytes(disk)
    );
    st.goal = "≤ 1.5× raw bytes (small blobs packed)".into();
    st.pass = Some(share <= 1.5);
    let mut rm = Row::new(format!(
        "W3b cleanup: `rm -r npm/` ({} files) → end marker",
        fmt_int(BURST_FILES as u64)
    ));
    rm.fw = fmt_med_p95(&r.cleanup);
    rm.goal = "info".into();
    rm.correct = format!(
        "deletions listed: {}",
        r.deleted
            .iter()
            .map(|c| fmt_int(*c as u64))
            .collect::<Vec<_>>()
            .join(", ")
    );
    vec![row, st, rm]
}
