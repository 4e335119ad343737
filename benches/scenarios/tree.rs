//! The trees (t20k, t100k) and one tree's run: generate it and its peers, measure the floor,
//! start the daemon (its first index), run the workloads in order, stop it, then the rows
//! measured without it.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::opts::Opts;
use super::run::{Run, ticks_to_dur, u64_at};
use super::sed::{self, SedOut};
use super::setup::prepare_cache;
use super::{bulk, index, turns, undo};
use crate::common::agent_undo;
use crate::common::codex::Codex;
use crate::common::daemon::Daemon;
use crate::common::floor;
use crate::common::gentree::{self, GenTree};
use crate::common::report::Row;
use crate::common::shadow::Shadow;
use crate::common::stats::{fmt_bytes, fmt_dur, fmt_int};

#[derive(Clone, Copy)]
pub struct TreeSpec {
    pub name: &'static str,
    pub n: usize,
    pub mean: usize,
    pub seed: u64,
}

const T20K: TreeSpec = TreeSpec {
    name: "t20k",
    n: 20_000,
    mean: 15_000,
    seed: 1,
};
const T100K: TreeSpec = TreeSpec {
    name: "t100k",
    n: 100_000,
    mean: 4_000,
    seed: 2,
};

/// A real monorepo's size, source-like small files (opt-in: `--only t1m`).
const T1M: TreeSpec = TreeSpec {
    name: "t1m",
    n: 1_000_000,
    mean: 1_500,
    seed: 3,
};

/// The trees to run: `--only` one, `--quick` t20k, else t20k and t100k.
pub fn specs(o: &Opts) -> Vec<TreeSpec> {
    match (&o.only, o.quick) {
        (Some(n), _) if n == "t100k" => vec![T100K],
        (Some(n), _) if n == "t1m" => vec![T1M],
        (Some(_), _) | (None, true) => vec![T20K],
        (None, false) => vec![T20K, T100K],
    }
}

pub struct TreeResult {
    pub spec: TreeSpec,
    pub dirs: usize,
    pub bytes: u64,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    turn_samples: Vec<Duration>,
    pub correct_ok: bool,
}

/// Adds W1's t100k turn end against t20k's to t100k's table, after its W1 rows, when both ran.
pub fn add_flatness_row(results: &mut [TreeResult]) {
    let Some(a) = results
        .iter()
        .find(|r| r.spec.name == "t20k")
        .map(|r| r.turn_samples.clone())
    else {
        return;
    };
    let Some(b) = results.iter_mut().find(|r| r.spec.name == "t100k") else {
        return;
    };
    let row = turns::flatness_row(&a, &b.turn_samples);
    let at = b
        .rows
        .iter()
        .position(|r| r.workload.starts_with("W1:"))
        .map_or(b.rows.len(), |i| i + 1);
    b.rows.insert(at, row);
}

/// Generates the tree and takes the shadow's first snapshot.
fn prepare(o: &Opts, spec: TreeSpec, base: &Path) -> Result<(GenTree, Shadow, Duration, u64), String> {
    let name = spec.name;
    let tree = base.join("tree");
    eprintln!(
        "[{name}] generating {} files, mean {} B, seed {} in {}",
        spec.n,
        spec.mean,
        spec.seed,
        tree.display()
    );
    let t = Instant::now();
    let g = gentree::generate(&tree, spec.n, spec.mean, spec.seed).map_err(|e| format!("generate: {e}"))?;
    eprintln!(
        "[{name}] {} files, {} dirs, {} in {}",
        g.files.len(),
        g.dirs,
        fmt_bytes(g.bytes),
        fmt_dur(t.elapsed())
    );
    let n = gentree::count_files(&tree).map_err(|e| format!("count files: {e}"))?;
    if n != spec.n {
        return Err(format!("generated {n} files, wanted {}", spec.n));
    }
    let shadow_dir = base.join("shadow.git");
    let sh = Shadow::init(&shadow_dir, &tree)?;
    prepare_cache(o.cold);
    eprintln!("[{name}] first shadow snapshot (git add -A + write-tree)...");
    let (first, _) = sh.snapshot()?;
    let bytes = gentree::disk_usage(&shadow_dir);
    eprintln!("[{name}]   {}", fmt_dur(first));
    Ok((g, sh, first, bytes))
}

/// One tree's run, from its generation to the rows measured after the daemon stopped.
pub fn run_tree(
    o: &Opts,
    spec: TreeSpec,
    bin: &Path,
    tck: u64,
    au: &agent_undo::Tool,
) -> Result<TreeResult, String> {
    let base = tempfile::Builder::new()
        .prefix(&format!("fwbench-{}-", spec.name))
        .tempdir_in(&o.dir)
        .map_err(|e| format!("temp dir in {}: {e}", o.dir.display()))?;
    let (mut r, (shadow_first, shadow_bytes_first)) = new_run(o, spec, base.path(), tck)?;
    let _watches = WatchLimit::at_least(2 * r.g.dirs, &mut r.notes);
    let floor = measure_floor(&mut r)?;
    let (d, fw_first) = start_daemon(&r, bin, &base.path().join("daemon.log"))?;
    let (rss_index, _) = d.rss();
    let version = d
        .status()?
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let store_index = index::first_index_row(&mut r, &d, (fw_first, shadow_first), &floor)?;
    let (fw_turn, sed) = run_workloads(&mut r, &d, rss_index)?;
    let (store_end, watcher) = watcher_summary(&d)?;
    let stop = stop_daemon(&mut r, d, bin, base.path())?;
    let shadow_end = rows_after_stop(&mut r, &sed, bin, base.path())?;
    index::storage_rows(&mut r, store_index, store_end, (shadow_bytes_first, shadow_end));
    if o.runs("au") {
        undo::au_rows(&mut r, au, &sed, base.path());
    }
    r.notes.push(format!(
        "Watcher before the restart: {watcher}. Daemon CPU during the {} peer snapshots of W1/W2: {} in all (they ran with the daemon idle). Daemon {stop}. filewatchd version {version}.",
        r.peer_runs,
        fmt_dur(ticks_to_dur(r.peer_daemon_ticks, tck)),
    ));
    keep_or_remove(&mut r, base);
    Ok(TreeResult {
        spec,
        dirs: r.g.dirs,
        bytes: r.g.bytes,
        rows: r.rows,
        notes: r.notes,
        turn_samples: fw_turn,
        correct_ok: r.correct_ok,
    })
}

/// Generates the tree and its peers (the tree made a real repo for Codex and W4, unless both
/// are skipped) and opens the run; returns the shadow's first snapshot (time, bytes) too.
fn new_run<'a>(
    o: &'a Opts,
    spec: TreeSpec,
    base: &Path,
    tck: u64,
) -> Result<(Run<'a>, (Duration, u64)), String> {
    let (g, sh, shadow_first, shadow_bytes_first) = prepare(o, spec, base)?;
    let codex = if o.runs("codex") || o.runs("w4") {
        Some(Codex::init_from_shadow(&sh)?)
    } else {
        None
    };
    let r = Run {
        o,
        name: spec.name,
        tree: base.join("tree"),
        state: base.join("state"),
        sh,
        codex,
        n: g.files.len(),
        g,
        tck,
        rows: Vec::new(),
        notes: Vec::new(),
        correct_ok: true,
        peer_daemon_ticks: 0,
        peer_runs: 0,
        fw_sed: None,
        fw_undo: None,
        checkout: None,
        burst_stopped: None,
    };
    Ok((r, (shadow_first, shadow_bytes_first)))
}

/// The floor of the first index (read + hash + zstd-1 of every file, nothing stored), in the
/// same cache state as the first index that follows.
fn measure_floor(r: &mut Run) -> Result<floor::Floor, String> {
    let (name, cold) = (r.name, r.o.cold);
    prepare_cache(cold);
    eprintln!("[{name}] the floor: read + hash + zstd-1 of every file, 8 threads, nothing stored...");
    let floor = floor::read_hash_compress(&r.tree)?;
    eprintln!(
        "[{name}]   {} for {} files",
        fmt_dur(floor.elapsed),
        fmt_int(floor.files as u64)
    );
    if !prepare_cache(cold) && cold {
        r.notes.push(
            "`--cold` was asked but dropping the page cache failed (not root?): the first indexes ran warm."
                .into(),
        );
    }
    Ok(floor)
}

/// Spawns the daemon on the tree: its first index (W6), spawn → ready.
fn start_daemon(r: &Run, bin: &Path, log: &Path) -> Result<(Daemon, Duration), String> {
    eprintln!("[{}] starting filewatchd (first index)...", r.name);
    let (d, fw_first) = Daemon::spawn(bin, &r.tree, &r.state, log, Duration::from_secs(1800))?;
    eprintln!(
        "[{}]   ready in {} (pid {}, {})",
        r.name,
        fmt_dur(fw_first),
        d.pid,
        d.url
    );
    Ok((d, fw_first))
}

/// The workloads with the daemon running, in order; returns W1's samples and what W2 hands on.
fn run_workloads(r: &mut Run, d: &Daemon, rss_index: u64) -> Result<(Vec<Duration>, SedOut), String> {
    let fw_turn = turns::w1_turns(r, d)?;
    let sed = sed::w2_sed(r, d)?;
    if r.o.runs("w5") {
        undo::w5_rollback(r, d)?;
    }
    if r.o.runs("w4") {
        bulk::w4_checkout(r, d)?;
    }
    bulk::w3_bursts(r, d)?;
    if r.o.runs("w7") {
        bulk::w7_storm(r, d)?;
    }
    bulk::idle_row(r, d);
    if r.o.runs("w8") {
        bulk::w8_stall(r, d)?;
    }
    index::rss_row(r, d, rss_index)?;
    if r.o.runs("verify") {
        index::verify_pass_row(r, d)?;
    }
    Ok((fw_turn, sed))
}

/// `store_bytes` and the watcher's counters, from the status after the workloads.
fn watcher_summary(d: &Daemon) -> Result<(u64, String), String> {
    let st = d.status()?;
    let store_end = u64_at(&st, "/store_bytes").unwrap_or(0);
    let w = |k: &str| u64_at(&st, &format!("/watcher/{k}")).map_or("?".into(), |v| v.to_string());
    let watcher = format!(
        "watched_dirs {}, hints {}, rescans {}, overflows {}, vanished {}, unstable {}",
        w("watched_dirs"),
        w("hints"),
        w("rescans"),
        w("overflows"),
        w("vanished"),
        w("unstable")
    );
    Ok((store_end, watcher))
}

/// The restart (W6) unless skipped, then the daemon's stop; returns how it stopped.
fn stop_daemon(r: &mut Run, d: Daemon, bin: &Path, base: &Path) -> Result<String, String> {
    let mut d = d;
    if r.o.runs("restart") {
        d = index::restart_row(r, d, bin, &base.join("daemon-restart.log"))?;
    }
    Ok(d.stop())
}

/// With the daemon stopped: W1d, sed and the checkouts alone; returns the shadow's size at
/// the end.
fn rows_after_stop(r: &mut Run, sed: &SedOut, bin: &Path, base: &Path) -> Result<u64, String> {
    if r.o.runs("w1d") {
        turns::degraded_row(r, bin, &base.join("daemon-degraded.log"))?;
    }
    sed::sed_alone_row(r, sed)?;
    bulk::checkout_alone_row(r)?;
    Ok(gentree::disk_usage(&base.join("shadow.git")))
}

fn keep_or_remove(r: &mut Run, base: tempfile::TempDir) {
    if r.o.keep {
        let p = base.keep();
        eprintln!("[{}] kept {}", r.name, p.display());
        r.notes.push(format!("Kept in `{}`.", p.display()));
    } else {
        eprintln!("[{}] removing {}", r.name, base.path().display());
    }
}

/// `fs.inotify.max_user_watches` raised for a tree's run (t1m needs ~71,000 watches; Debian's
/// default is 8,192 or a RAM-based value), put back when the run ends, by error or not.
struct WatchLimit {
    before: Option<u64>,
}

const MAX_USER_WATCHES: &str = "/proc/sys/fs/inotify/max_user_watches";

impl WatchLimit {
    fn at_least(want: usize, notes: &mut Vec<String>) -> WatchLimit {
        let now: Option<u64> = std::fs::read_to_string(MAX_USER_WATCHES)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        let Some(now) = now.filter(|&n| n < want as u64) else {
            return WatchLimit { before: None };
        };
        match std::fs::write(MAX_USER_WATCHES, want.to_string()) {
            Ok(()) => {
                notes.push(format!(
                    "`fs.inotify.max_user_watches` raised from {now} to {want} for this tree's run, and restored after."
                ));
                WatchLimit { before: Some(now) }
            }
            Err(e) => {
                notes.push(format!(
                    "`fs.inotify.max_user_watches` is {now}, below the {want} this tree wants, and could not be raised ({e}): part of the tree ran unwatched."
                ));
                WatchLimit { before: None }
            }
        }
    }
}

impl Drop for WatchLimit {
    fn drop(&mut self) {
        if let Some(before) = self.before
            && let Err(e) = std::fs::write(MAX_USER_WATCHES, before.to_string())
        {
            eprintln!("cannot restore {MAX_USER_WATCHES} to {before}: {e}");
        }
    }
}
