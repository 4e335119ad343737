//! Scenario benchmark: filewatchd against an opencode-style shadow git, side by side in one run,
//! on generated trees (performance.md §3, §8). Prints Markdown for docs/benchmarks.md on stdout
//! and progress on stderr. See `USAGE`.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use common::daemon::{self, Daemon};
use common::gentree::{self, GenFile};
use common::rollback::{self, RollbackRun, Written};
use common::shadow::{self, Shadow};
use common::stats::{fmt_bytes, fmt_dur, fmt_int, fmt_med_p95, fmt_ratio, median, pass};
use common::sysinfo;

const USAGE: &str = "\
scenarios: filewatchd vs an opencode-style shadow git, side by side, on generated trees

The bench builds nothing: it runs the release binary target/release/filewatchd. Build it first:

    cargo build --release && cargo bench --bench scenarios -- [--quick]

Options:
  --quick          t20k only (20,000 files), 5 turns, 3 sed runs, 3 rollbacks (about 1.5 minutes)
                   (default: t20k and t100k, 15 turns, 7 sed runs, 5 rollbacks: about 5-7 minutes
                   on 2 cores; --only t100k about 4 minutes)
  --only NAME      run one tree: t20k or t100k
  --dir PATH       where to generate the trees (default: /tmp); needs ~1.5 GB free for t100k
  --cold           drop the page cache (echo 3 > /proc/sys/vm/drop_caches, needs root)
                   before each first-index measurement (shadow git and filewatchd)
  --reps N         per-turn repetitions (5-file edits)
  --sed-reps N     repetitions of the sed workload (at most 18)
  --rollback-reps N  repetitions of the rollback of a 1,000-file turn (undo vs git restore)
  --bin PATH       filewatchd binary (default: $FILEWATCHD_BIN, else target/release/filewatchd)
  --keep           keep the generated trees, shadow and daemon state (prints where)
  --strict         exit 1 when a goal or a correctness check fails (default: report only)
  -h, --help       this text

Markdown (machine, one table per tree) goes to stdout, progress to stderr:
    cargo bench --bench scenarios -- --quick > /tmp/bench.md
";

struct Opts {
    quick: bool,
    only: Option<String>,
    dir: PathBuf,
    cold: bool,
    reps: usize,
    sed_reps: usize,
    rollback_reps: usize,
    bin: Option<PathBuf>,
    keep: bool,
    strict: bool,
}

fn parse_args() -> Result<Option<Opts>, String> {
    let mut o = Opts {
        quick: false,
        only: None,
        dir: std::env::temp_dir(),
        cold: false,
        reps: 0,
        sed_reps: 0,
        rollback_reps: 0,
        bin: None,
        keep: false,
        strict: false,
    };
    let mut args = std::env::args().skip(1);
    let num = |v: Option<String>, name: &str| -> Result<usize, String> {
        v.and_then(|s| s.parse().ok())
            .filter(|&n: &usize| n > 0)
            .ok_or_else(|| format!("{name} needs a positive number"))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--cold" => o.cold = true,
            "--keep" => o.keep = true,
            "--strict" => o.strict = true,
            "--dir" => o.dir = PathBuf::from(args.next().ok_or("--dir needs a path")?),
            "--bin" => o.bin = Some(PathBuf::from(args.next().ok_or("--bin needs a path")?)),
            "--only" => {
                let v = args.next().ok_or("--only needs t20k or t100k")?;
                if v != "t20k" && v != "t100k" {
                    return Err(format!("--only: unknown tree {v:?} (t20k or t100k)"));
                }
                o.only = Some(v);
            }
            "--reps" => o.reps = num(args.next(), "--reps")?,
            "--sed-reps" => o.sed_reps = num(args.next(), "--sed-reps")?,
            "--rollback-reps" => o.rollback_reps = num(args.next(), "--rollback-reps")?,
            "-h" | "--help" => return Ok(None),
            // `cargo bench` passes `--bench` to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    if o.reps == 0 {
        o.reps = if o.quick { 5 } else { 15 };
    }
    if o.sed_reps == 0 {
        o.sed_reps = if o.quick { 3 } else { 7 };
    }
    if o.rollback_reps == 0 {
        o.rollback_reps = if o.quick { 3 } else { 5 };
    }
    let max_sed = (1..SED_CHAIN.len())
        .filter(|&r| r + sed_baseline_reps(r) < SED_CHAIN.len())
        .max();
    if o.sed_reps > max_sed.unwrap_or(0) {
        return Err(format!("--sed-reps: at most {}", max_sed.unwrap_or(0)));
    }
    Ok(Some(o))
}

#[derive(Clone, Copy)]
struct TreeSpec {
    name: &'static str,
    n: usize,
    mean: usize,
    seed: u64,
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

/// Files the sed workload touches: `git ls-files | awk 'NR%10==3'`, the first 2,000.
const SED_FILES: usize = 2_000;
/// Files edited per turn.
const EDIT_FILES: usize = 5;
/// The sed workload's chain of replacements: run r does `s/f<CHAIN[r-1]>/f<CHAIN[r]>/` (run 0:
/// `s/fn/fx/`). No generated word contains `f` followed by one of these letters, so every run
/// changes exactly the files that had `fn`, and always to content never seen before (alternating
/// fn→fx→fn would let both content-addressed stores skip writing from the third run on).
const SED_CHAIN: &[u8] = b"nxyzwvqkjutsrpmlhgdcba";

fn sed_script(r: usize) -> String {
    format!("s/f{}/f{}/", SED_CHAIN[r] as char, SED_CHAIN[r + 1] as char)
}

struct Row {
    workload: String,
    fw: String,
    peer: String,
    ratio: String,
    goal: String,
    pass: Option<bool>,
    correct: String,
}

struct TreeResult {
    spec: TreeSpec,
    dirs: usize,
    bytes: u64,
    rows: Vec<Row>,
    notes: Vec<String>,
    turn_samples: Vec<Duration>,
    correct_ok: bool,
}

fn find_binary(o: &Opts) -> Result<PathBuf, String> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(b) = &o.bin {
        candidates.push(b.clone());
    } else if let Some(b) = std::env::var_os("FILEWATCHD_BIN") {
        candidates.push(PathBuf::from(b));
    } else {
        if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            let t = PathBuf::from(t);
            let t = if t.is_relative() { manifest.join(t) } else { t };
            candidates.push(t.join("release/filewatchd"));
        }
        candidates.push(manifest.join("target/release/filewatchd"));
        // The bench runs from <target>/release/deps/scenarios-<hash>.
        if let Ok(exe) = std::env::current_exe()
            && let Some(rel) = exe.parent().and_then(Path::parent)
        {
            candidates.push(rel.join("filewatchd"));
        }
    }
    candidates.dedup();
    for c in &candidates {
        if c.is_file() {
            warn_if_stale(c, &manifest);
            return Ok(c.clone());
        }
    }
    Err(format!(
        "filewatchd binary not found (looked at {}).\n\
         The benchmark does not build the daemon: run `cargo build --release` first, i.e.\n\n    \
         cargo build --release && cargo bench --bench scenarios -- --quick\n",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn newest_mtime(p: &Path) -> Option<SystemTime> {
    let md = fs::metadata(p).ok()?;
    let mut best = md.modified().ok();
    if md.is_dir() {
        for e in fs::read_dir(p).ok()?.flatten() {
            if let Some(t) = newest_mtime(&e.path()) {
                best = best.max(Some(t));
            }
        }
    }
    best
}

fn warn_if_stale(bin: &Path, manifest: &Path) {
    let bin_t = fs::metadata(bin).and_then(|m| m.modified()).ok();
    let src_t = newest_mtime(&manifest.join("src")).max(newest_mtime(&manifest.join("Cargo.toml")));
    if let (Some(b), Some(s)) = (bin_t, src_t)
        && s > b
    {
        eprintln!(
            "warning: {} is older than src/ or Cargo.toml: run `cargo build --release` to measure the current code",
            bin.display()
        );
    }
}

/// `sync`, and with `--cold` drop the page cache. Returns false if dropping failed.
fn prepare_cache(cold: bool) -> bool {
    let _ = Command::new("sync").status();
    if !cold {
        return true;
    }
    fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

/// Outcome of comparing an end marker's `changes` with the files we changed.
struct ChangeCheck {
    got: usize,
    missing: usize,
    extra: usize,
}

impl ChangeCheck {
    fn ok(&self, expected: usize) -> bool {
        self.got == expected && self.missing == 0 && self.extra == 0
    }
}

fn check_changes(turn: &Value, expected: &BTreeSet<&str>) -> ChangeCheck {
    let changes = turn
        .get("changes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let paths: BTreeSet<&str> = changes
        .iter()
        .filter_map(|c| c.get("path").and_then(Value::as_str))
        .collect();
    ChangeCheck {
        got: changes.len(),
        missing: expected.iter().filter(|p| !paths.contains(*p)).count(),
        extra: paths.iter().filter(|p| !expected.contains(*p)).count(),
    }
}

/// Per-workload correctness tally.
#[derive(Default)]
struct Tally {
    turns: usize,
    turns_ok: usize,
    first_bad: Option<String>,
}

impl Tally {
    fn add(&mut self, c: &ChangeCheck, expected: usize) {
        self.turns += 1;
        if c.ok(expected) {
            self.turns_ok += 1;
        } else if self.first_bad.is_none() {
            self.first_bad = Some(format!(
                "got {} changes, expected {expected} ({} missing, {} unexpected)",
                c.got, c.missing, c.extra
            ));
        }
    }
    fn ok(&self) -> bool {
        self.turns_ok == self.turns
    }
}

fn u64_at(v: &Value, ptr: &str) -> Option<u64> {
    v.pointer(ptr).and_then(Value::as_u64)
}

fn tracked_text(st: &Value, n: usize) -> (bool, String) {
    match u64_at(st, "/tracked_files") {
        Some(t) if t as usize == n => (true, format!("tracked {}/{}", fmt_int(t), fmt_int(n as u64))),
        Some(t) => (
            false,
            format!("**tracked {} ≠ {} files**", fmt_int(t), fmt_int(n as u64)),
        ),
        None => (false, "**status has no tracked_files**".into()),
    }
}

fn ticks_to_dur(ticks: u64, tck: u64) -> Duration {
    Duration::from_secs_f64(ticks as f64 / tck as f64)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn append_line(path: &Path, line: &str) -> Result<(), String> {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    f.write_all(line.as_bytes())
        .map_err(|e| format!("append to {}: {e}", path.display()))
}

/// `xargs -0 sed -i -e SCRIPT --` over the NUL-separated paths in `list`, run in `tree`.
fn run_sed(tree: &Path, list: &[u8], script: &str) -> Result<(), String> {
    let mut child = Command::new("xargs")
        .args(["-0", "sed", "-i", "-e", script, "--"])
        .current_dir(tree)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn xargs sed: {e}"))?;
    {
        let mut stdin = child.stdin.take().ok_or("no stdin for xargs")?;
        stdin
            .write_all(list)
            .map_err(|e| format!("write to xargs: {e}"))?;
    }
    let status = child.wait().map_err(|e| format!("wait for xargs sed: {e}"))?;
    if !status.success() {
        return Err(format!("xargs sed -i -e {script}: {status}"));
    }
    Ok(())
}

/// Runs of the sed workload repeated after the daemon stopped, for sed's own time without it.
fn sed_baseline_reps(sed_reps: usize) -> usize {
    sed_reps.min(3)
}

fn run_tree(o: &Opts, spec: TreeSpec, bin: &Path, tck: u64) -> Result<TreeResult, String> {
    let name = spec.name;
    let base = tempfile::Builder::new()
        .prefix(&format!("fwbench-{name}-"))
        .tempdir_in(&o.dir)
        .map_err(|e| format!("temp dir in {}: {e}", o.dir.display()))?;
    let tree = base.path().join("tree");
    let shadow_dir = base.path().join("shadow.git");
    let state = base.path().join("state");
    let log = base.path().join("daemon.log");
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut correct_ok = true;

    // --- tree -------------------------------------------------------------------------------
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
    let sh = Shadow::init(&shadow_dir, &tree)?;

    // --- 1. first index -----------------------------------------------------------------------
    let cold_ok = prepare_cache(o.cold);
    eprintln!("[{name}] first shadow snapshot (git add -A + write-tree)...");
    let (shadow_first, _) = sh.snapshot()?;
    let shadow_bytes_first = gentree::disk_usage(&shadow_dir);
    eprintln!("[{name}]   {}", fmt_dur(shadow_first));
    let cold_ok = prepare_cache(o.cold) && cold_ok;
    if o.cold && !cold_ok {
        notes.push(
            "`--cold` was asked but dropping the page cache failed (not root?): both first indexes ran warm."
                .into(),
        );
    }
    eprintln!("[{name}] starting filewatchd (first index)...");
    let (mut d, fw_first) = Daemon::spawn(bin, &tree, &state, &log, Duration::from_secs(1800))?;
    eprintln!(
        "[{name}]   ready in {} (pid {}, {})",
        fmt_dur(fw_first),
        d.pid,
        d.url
    );
    let (rss_index, _) = d.rss();
    let st = d.status()?;
    let store_index = u64_at(&st, "/store_bytes").unwrap_or(0);
    let version = st
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let (ok, text) = tracked_text(&st, n);
    correct_ok &= ok;
    let r = ratio(fw_first, shadow_first);
    rows.push(Row {
        workload: "first index: spawn → ready, vs first shadow snapshot".into(),
        fw: fmt_dur(fw_first),
        peer: fmt_dur(shadow_first),
        ratio: fmt_ratio(r),
        goal: "≤ 0.3×".into(),
        pass: Some(r <= 0.3),
        correct: text,
    });

    let mut shadow_daemon_ticks = 0u64;
    let mut shadow_runs = 0usize;

    // --- 2. per-turn, 5 files edited ------------------------------------------------------------
    let edit_picks: Vec<&GenFile> = g
        .files
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 == 7)
        .map(|(_, f)| f)
        .collect();
    let mut fw_turn = Vec::new();
    let mut sh_turn = Vec::new();
    let mut tally = Tally::default();
    eprintln!(
        "[{name}] per-turn: {} turns of {EDIT_FILES} appended files",
        o.reps
    );
    for r in 0..o.reps {
        d.turn_start()?;
        let set: Vec<&GenFile> = (0..EDIT_FILES)
            .map(|k| edit_picks[(r * EDIT_FILES + k) % edit_picks.len()])
            .collect();
        for (k, f) in set.iter().enumerate() {
            append_line(&tree.join(&f.rel), &format!("// fwbench edit {r}.{k}\n"))?;
        }
        let (dt, turn) = d.turn_end()?;
        let expected: BTreeSet<&str> = set.iter().map(|f| f.rel.as_str()).collect();
        tally.add(&check_changes(&turn, &expected), expected.len());
        let before = d.sample();
        let (sdt, _) = sh.snapshot()?;
        shadow_daemon_ticks += d.sample().ticks - before.ticks;
        shadow_runs += 1;
        eprintln!(
            "[{name}]   turn {r}: filewatchd {} | shadow {}",
            fmt_dur(dt),
            fmt_dur(sdt)
        );
        fw_turn.push(dt);
        sh_turn.push(sdt);
    }
    let st = d.status()?;
    let (ok, mut text) = tracked_text(&st, n);
    correct_ok &= ok && tally.ok();
    text += &match &tally.first_bad {
        None => format!(
            "; changes = {EDIT_FILES} in {}/{} turns",
            tally.turns_ok, tally.turns
        ),
        Some(b) => format!(
            "; **changes wrong in {}/{} turns** (first: {b})",
            tally.turns - tally.turns_ok,
            tally.turns
        ),
    };
    let r = ratio(median(&fw_turn), median(&sh_turn));
    rows.push(Row {
        workload: format!("turn end after editing {EDIT_FILES} files (n={})", o.reps),
        fw: fmt_med_p95(&fw_turn),
        peer: fmt_med_p95(&sh_turn),
        ratio: fmt_ratio(r),
        goal: "≤ 0.1×".into(),
        pass: Some(r <= 0.1),
        correct: text,
    });

    // --- 3. sed -i over 2,000 files ----------------------------------------------------------
    let sed_picks: Vec<&GenFile> = g
        .files
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 == 2)
        .map(|(_, f)| f)
        .take(SED_FILES)
        .collect();
    let expected: BTreeSet<&str> = sed_picks
        .iter()
        .filter(|f| f.has_fn)
        .map(|f| f.rel.as_str())
        .collect();
    let mut list = Vec::new();
    for f in &sed_picks {
        list.extend_from_slice(f.rel.as_bytes());
        list.push(0);
    }
    let mut capture = Vec::new();
    let mut sed_time = Vec::new();
    let mut sh_sed = Vec::new();
    let mut daemon_cpu = Vec::new();
    let mut sed_cpu = Vec::new();
    let mut tally = Tally::default();
    eprintln!(
        "[{name}] sed: {} runs of sed -i over {} files ({} contain the pattern)",
        o.sed_reps,
        sed_picks.len(),
        expected.len()
    );
    for r in 0..o.sed_reps {
        d.turn_start()?;
        let script = sed_script(r);
        let cpu0 = d.sample();
        let ch0 = daemon::children_ticks();
        let t0 = Instant::now();
        run_sed(&tree, &list, &script)?;
        let t_exit = Instant::now();
        let ch1 = daemon::children_ticks();
        let (_, turn) = d.turn_end()?;
        let cap = t_exit.elapsed();
        let cpu1 = d.sample();
        tally.add(&check_changes(&turn, &expected), expected.len());
        let before = d.sample();
        let (sdt, _) = sh.snapshot()?;
        shadow_daemon_ticks += d.sample().ticks - before.ticks;
        shadow_runs += 1;
        eprintln!(
            "[{name}]   sed {r} ({script}): sed {} | exit → end marker {} | shadow {}",
            fmt_dur(t_exit - t0),
            fmt_dur(cap),
            fmt_dur(sdt)
        );
        capture.push(cap);
        sed_time.push(t_exit - t0);
        sh_sed.push(sdt);
        daemon_cpu.push(ticks_to_dur(cpu1.ticks - cpu0.ticks, tck));
        sed_cpu.push(ticks_to_dur(ch1 - ch0, tck));
    }
    let st = d.status()?;
    let (ok, mut text) = tracked_text(&st, n);
    correct_ok &= ok && tally.ok();
    text += &match &tally.first_bad {
        None => format!(
            "; changes = {} in {}/{} runs",
            expected.len(),
            tally.turns_ok,
            tally.turns
        ),
        Some(b) => format!(
            "; **changes wrong in {}/{} runs** (first: {b})",
            tally.turns - tally.turns_ok,
            tally.turns
        ),
    };
    let r = ratio(median(&capture), median(&sh_sed));
    rows.push(Row {
        workload: format!(
            "`sed -i` over {} files: sed exit → end marker (n={})",
            fmt_int(sed_picks.len() as u64),
            o.sed_reps
        ),
        fw: fmt_med_p95(&capture),
        peer: fmt_med_p95(&sh_sed),
        ratio: fmt_ratio(r),
        goal: "≤ 0.5×".into(),
        pass: Some(r <= 0.5),
        correct: text,
    });
    let r = ratio(median(&daemon_cpu), median(&sed_cpu));
    rows.push(Row {
        workload: "daemon CPU during sed + capture, vs sed's own CPU".into(),
        fw: fmt_dur(median(&daemon_cpu)),
        peer: format!("{} (sed)", fmt_dur(median(&sed_cpu))),
        ratio: fmt_ratio(r),
        goal: "≤ 1× (perf. W2)".into(),
        pass: Some(r <= 1.0),
        correct: String::new(),
    });
    let sed_alone_row_at = rows.len();
    notes.push(format!(
        "sed workload: `xargs -0 sed -i -e SCRIPT` (one sed process). {} of the {} files contain `fn`: that many change in each run (run 1 is `s/fn/fx/`, run 2 `s/fx/fy/`, and so on, so every run writes content never seen before); sed rewrites the other files byte for byte, which is not a change.",
        fmt_int(expected.len() as u64),
        fmt_int(sed_picks.len() as u64)
    ));

    // --- 4. rollback of a 1,000-file turn (W5) -------------------------------------------------
    let rb = rollback::run(name, &d, &sh, &tree, &g.files, o.rollback_reps, tck)?;
    let (rb_rows, rb_notes) = rollback_rows(&rb);
    correct_ok &= rb.ok();
    rows.extend(rb_rows);
    notes.extend(rb_notes);

    // --- 5. idle CPU ---------------------------------------------------------------------------
    eprintln!("[{name}] idle: 1 s settle, then 5 s measured");
    std::thread::sleep(Duration::from_secs(1));
    let s0 = d.sample();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let s1 = d.sample();
    let secs = t.elapsed().as_secs_f64();
    let cpu_pct = (s1.ticks - s0.ticks) as f64 / tck as f64 / secs * 100.0;
    let wakeups = (s1.switches - s0.switches) as f64 / secs;
    rows.push(Row {
        workload: "idle: daemon CPU over 5 s (after 1 s of quiet)".into(),
        fw: format!("{cpu_pct:.1} % ({wakeups:.1} wake-ups/s)"),
        peer: "–".into(),
        ratio: "–".into(),
        goal: "≈ 0 % (≤ 0.5 %)".into(),
        pass: Some(cpu_pct <= 0.5),
        correct: String::new(),
    });

    // --- 6. memory, final state ------------------------------------------------------------------
    let (rss_end, hwm) = d.rss();
    let st = d.status()?;
    let files_now = gentree::count_files(&tree).map_err(|e| format!("count files: {e}"))?;
    let (ok, text) = tracked_text(&st, files_now);
    correct_ok &= ok;
    rows.push(Row {
        workload: "daemon RSS: after first index / at end (peak)".into(),
        fw: format!(
            "{} / {} ({})",
            fmt_bytes(rss_index),
            fmt_bytes(rss_end),
            fmt_bytes(hwm)
        ),
        peer: "–".into(),
        ratio: "–".into(),
        goal: "report; peak ≤ 100 MB (perf. W6)".into(),
        pass: Some(hwm <= 100_000_000),
        correct: format!("at end: {text}"),
    });
    let store_end = u64_at(&st, "/store_bytes").unwrap_or(0);
    let w = |k: &str| {
        u64_at(&st, &format!("/watcher/{k}"))
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into())
    };
    let stop = d.stop();

    // --- sed alone: the same workload with the daemon stopped (continuing the chain) -----------
    let mut sed_alone = Vec::new();
    for r in 0..sed_baseline_reps(o.sed_reps) {
        let script = sed_script(o.sed_reps + r);
        let t0 = Instant::now();
        run_sed(&tree, &list, &script)?;
        sed_alone.push(t0.elapsed());
        eprintln!(
            "[{name}]   sed without the daemon ({script}): {}",
            fmt_dur(sed_alone[r])
        );
    }
    rows.insert(
        sed_alone_row_at,
        Row {
            workload: format!(
                "`sed -i` over {} files, its own wall time: daemon running vs stopped",
                fmt_int(sed_picks.len() as u64)
            ),
            fw: fmt_med_p95(&sed_time),
            peer: format!(
                "{} (daemon stopped, n={})",
                fmt_dur(median(&sed_alone)),
                sed_alone.len()
            ),
            ratio: fmt_ratio(ratio(median(&sed_time), median(&sed_alone))),
            goal: "info: slowdown of the agent's command".into(),
            pass: None,
            correct: String::new(),
        },
    );
    let shadow_bytes_end = gentree::disk_usage(&shadow_dir);
    let share = store_index as f64 / g.bytes as f64;
    rows.push(Row {
        workload: "storage after the first index: `store_bytes` vs the shadow on disk".into(),
        fw: format!("{} ({share:.2}× the tree)", fmt_bytes(store_index)),
        peer: format!(
            "{} ({:.2}× the tree)",
            fmt_bytes(shadow_bytes_first),
            shadow_bytes_first as f64 / g.bytes as f64
        ),
        ratio: fmt_ratio(store_index as f64 / shadow_bytes_first as f64),
        goal: "≤ 0.35× the tree (perf. W6)".into(),
        pass: Some(share <= 0.35),
        correct: String::new(),
    });
    rows.push(Row {
        workload: "storage at the end (all workloads recorded)".into(),
        fw: fmt_bytes(store_end),
        peer: fmt_bytes(shadow_bytes_end),
        ratio: fmt_ratio(store_end as f64 / shadow_bytes_end as f64),
        goal: "info".into(),
        pass: None,
        correct: String::new(),
    });
    notes.push(format!(
        "Storage: filewatchd `store_bytes` {} after the first index ({:.2}× the tree), {} at the end; shadow git on disk {} after its first snapshot, {} at the end.",
        fmt_bytes(store_index),
        store_index as f64 / g.bytes as f64,
        fmt_bytes(store_end),
        fmt_bytes(shadow_bytes_first),
        fmt_bytes(shadow_bytes_end)
    ));
    notes.push(format!(
        "Watcher at the end: watched_dirs {}, rescans {}, overflows {}. Daemon CPU during the {} shadow snapshots: {} in all (they ran with the daemon idle). Daemon {}.",
        w("watched_dirs"),
        w("rescans"),
        w("overflows"),
        shadow_runs,
        fmt_dur(ticks_to_dur(shadow_daemon_ticks, tck)),
        stop
    ));
    notes.push(format!("filewatchd version {version}."));

    if o.keep {
        let p = base.keep();
        eprintln!("[{name}] kept {}", p.display());
        notes.push(format!("Kept in `{}`.", p.display()));
    } else {
        eprintln!("[{name}] removing {}", base.path().display());
    }
    Ok(TreeResult {
        spec,
        dirs: g.dirs,
        bytes: g.bytes,
        rows,
        notes,
        turn_samples: fw_turn,
        correct_ok,
    })
}

/// "1,000 (all the turn's files) in 5/5 runs", or what differed.
fn written_text(ws: &[Written], n: usize) -> String {
    let exact = ws.iter().filter(|w| w.exact(n)).count();
    if exact == ws.len() {
        return format!(
            "{} files, all of them the turn's, in {exact}/{} runs",
            fmt_int(n as u64),
            ws.len()
        );
    }
    let list: Vec<String> = ws
        .iter()
        .map(|w| {
            let mut s = format!("{} ({} of the turn's)", w.total, w.of_turn);
            if w.appeared_or_vanished > 0 {
                s += &format!(" + {} appeared/vanished", w.appeared_or_vanished);
            }
            s
        })
        .collect();
    format!(
        "**not exactly the {} turn files**: {}",
        fmt_int(n as u64),
        list.join(", ")
    )
}

/// Rows and notes of the rollback workload (W5).
fn rollback_rows(rb: &RollbackRun) -> (Vec<Row>, Vec<String>) {
    let reps = rb.reps();
    let n = rb.files;
    let r = ratio(median(&rb.fw), median(&rb.git));
    let mut correct = format!(
        "written: filewatchd {}; git {}",
        written_text(&rb.fw_written, n),
        written_text(&rb.git_written, n)
    );
    correct += &format!(
        "; undo answer applied with {} `done` actions in {}/{reps}; pre-turn bytes back: filewatchd {}/{reps}, git {}/{reps}",
        fmt_int(n as u64),
        rb.answers_ok,
        rb.fw_content_ok,
        rb.git_content_ok
    );
    if rb.turns_ok != reps {
        correct += &format!(
            "; **turn end listed the {n} files in only {}/{reps}**",
            rb.turns_ok
        );
    }
    if !rb.problems.is_empty() {
        correct += &format!("; **{}**", rb.problems.join("; "));
    }
    let rows = vec![
        Row {
            workload: format!(
                "rollback of a turn that changed {} files: `POST …/undo` → answer, vs `git restore --source <tree> --worktree -- .` (n={reps})",
                fmt_int(n as u64)
            ),
            fw: fmt_med_p95(&rb.fw),
            peer: fmt_med_p95(&rb.git),
            ratio: fmt_ratio(r),
            goal: "≤ 1.0× (perf. W5: ≤ 0.3 s, ≤ 0.5 s durable)".into(),
            pass: Some(r <= 1.0),
            correct,
        },
        Row {
            workload: "rollback CPU: daemon during the undo, vs git's own".into(),
            fw: fmt_dur(median(&rb.fw_cpu)),
            peer: format!("{} (git)", fmt_dur(median(&rb.git_cpu))),
            ratio: fmt_ratio(ratio(median(&rb.fw_cpu), median(&rb.git_cpu))),
            goal: "info".into(),
            pass: None,
            correct: String::new(),
        },
    ];
    let uniq = |v: &[String]| {
        let mut u: Vec<&str> = v.iter().map(String::as_str).collect();
        u.dedup();
        u.join(", ")
    };
    let notes = vec![format!(
        "Rollback workload: each run opens a turn, appends a line to {} files (every {}th file of the sorted list, disjoint from the other workloads' files), ends it and takes the shadow's turn-end snapshot (untimed); then `POST /v1/sessions/bench/undo` `{{}}` is timed until its answer; `redo` (untimed) puts the turn back and a barrier lets the daemon record its own writes; then `git --git-dir=$SHADOW --work-tree=. restore --source <pre-turn tree id> --worktree -- .` is timed, followed by a barrier. “written” = (inode, mtime_ns) changed between stat walks of the whole tree before and after. filewatchd writes each file temp + fsync + rename (durable); git writes without fsync. Latest recorded origin of a restored file: {} after the undo, {} after git.",
        fmt_int(n as u64),
        rb.step,
        uniq(&rb.origin_after_undo),
        uniq(&rb.origin_after_git)
    )];
    (rows, notes)
}

fn print_table(t: &TreeResult) {
    println!(
        "### {}: {} files in {} dirs, {} (mean {} B, seed {})\n",
        t.spec.name,
        fmt_int(t.spec.n as u64),
        fmt_int(t.dirs as u64),
        fmt_bytes(t.bytes),
        fmt_int(t.spec.mean as u64),
        t.spec.seed
    );
    println!(
        "| workload | filewatchd median | shadow git median | ratio (fw/peer) | goal | pass | correctness |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &t.rows {
        let p = match r.pass {
            Some(ok) => pass(ok),
            None => "–",
        };
        let c = if r.correct.is_empty() { "–" } else { &r.correct };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.workload, r.fw, r.peer, r.ratio, r.goal, p, c
        );
    }
    println!();
    for n in &t.notes {
        println!("- {n}");
    }
    println!();
}

fn run() -> Result<i32, String> {
    let Some(o) = parse_args()? else {
        print!("{USAGE}");
        return Ok(0);
    };
    let bin = match find_binary(&o) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return Ok(1);
        }
    };
    for tool in ["git", "sed", "xargs"] {
        if Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_err()
        {
            return Err(format!("`{tool}` is needed and was not found"));
        }
    }
    fs::create_dir_all(&o.dir).map_err(|e| format!("--dir {}: {e}", o.dir.display()))?;
    let dir = fs::canonicalize(&o.dir).map_err(|e| format!("--dir {}: {e}", o.dir.display()))?;
    let o = Opts { dir, ..o };
    let tck = daemon::clk_tck();

    let specs: Vec<TreeSpec> = match (&o.only, o.quick) {
        (Some(n), _) if n == "t100k" => vec![T100K],
        (Some(_), _) | (None, true) => vec![T20K],
        (None, false) => vec![T20K, T100K],
    };
    eprintln!("filewatchd: {}", bin.display());
    let load_start = sysinfo::loadavg();
    let started = Instant::now();
    let mut results = Vec::new();
    for spec in &specs {
        results.push(run_tree(&o, *spec, &bin, tck)?);
    }

    // Flatness: the 5-file turn end on t100k against t20k, when both ran.
    if let (Some(a), Some(b)) = (
        results
            .iter()
            .find(|r| r.spec.name == "t20k")
            .map(|r| r.turn_samples.clone()),
        results.iter_mut().find(|r| r.spec.name == "t100k"),
    ) {
        let (m20, m100) = (median(&a), median(&b.turn_samples));
        let limit = m20.mul_f64(1.5) + Duration::from_millis(2);
        b.rows.insert(
            2,
            Row {
                workload: format!("turn end after {EDIT_FILES} edits: t100k vs t20k (same within noise)"),
                fw: format!("{} (t100k)", fmt_dur(m100)),
                peer: format!("{} (filewatchd, t20k)", fmt_dur(m20)),
                ratio: fmt_ratio(ratio(m100, m20)),
                goal: "≤ 1.5× t20k + 2 ms".into(),
                pass: Some(m100 <= limit),
                correct: String::new(),
            },
        );
    }

    // --- report ---------------------------------------------------------------------------------
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    println!("## Scenario benchmark: filewatchd vs an opencode-style shadow git\n");
    println!(
        "- Date: {}; filewatchd commit {}; git {}.",
        sysinfo::date(),
        sysinfo::project_commit(&manifest).unwrap_or_else(|| "(none)".into()),
        shadow::git_version()
    );
    println!(
        "- Machine: nproc {}, {}; MemTotal {}; kernel {}.",
        sysinfo::nproc(),
        sysinfo::cpu_model(),
        sysinfo::mem_total(),
        sysinfo::kernel()
    );
    println!(
        "- Disk of the trees (`df -hT {}`): {}.",
        o.dir.display(),
        sysinfo::disk(&o.dir)
    );
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    println!(
        "- Run: `cargo bench --bench scenarios{}`; per tree: turns of {EDIT_FILES} edits × {}, sed runs × {}, rollbacks × {}; took {}; 1-min load average {} at the start, {} at the end (anything above ~0.1 before the start means something else was running).",
        if args.is_empty() {
            String::new()
        } else {
            format!(" -- {}", args.join(" "))
        },
        o.reps,
        o.sed_reps,
        o.rollback_reps,
        fmt_dur(started.elapsed()),
        load_start,
        sysinfo::loadavg()
    );
    println!(
        "- First index: {}. filewatchd = spawn of `filewatchd serve` until `daemon.json` exists and `GET /v1/status` answers 200; shadow = the first `git --git-dir=$SHADOW --work-tree=. -c core.autocrlf=false add -A . && git ... write-tree` into an empty `git init --bare` dir outside the tree.",
        if o.cold {
            "page cache dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before each"
        } else {
            "warm (trees just generated; `sync` before each)"
        }
    );
    println!(
        "- Turns: start marker (untimed), the edits, then the end marker `POST /v1/sessions/bench/turns/current/end`, timed (its barrier covers every write before it). For sed, the time runs from sed's exit to the end marker's response. The shadow snapshot of the same edits runs right after the end marker has returned, in the same tree, with the daemon alive but idle (its CPU during the snapshots is in the notes), so the two never compete for the 2 cores."
    );
    println!(
        "- Rollback: a turn of {} appended files, then `POST /v1/sessions/bench/undo` until its answer vs `git restore --source <pre-turn tree> --worktree -- .` from the shadow, alternating in the same tree; both restore the same files (checked byte for byte, and by the inode/mtime of every file in the tree).",
        fmt_int(rollback::ROLLBACK_FILES as u64)
    );
    println!(
        "- Ratios are of medians; p95 is the nearest-rank 95th percentile. Correctness: `tracked_files` against the files in the tree, and the end marker's `changes` against the exact set of files changed.\n"
    );
    let mut all_ok = true;
    for r in &results {
        print_table(r);
        all_ok &= r.correct_ok && r.rows.iter().all(|x| x.pass != Some(false));
    }
    eprintln!("done in {}", fmt_dur(started.elapsed()));
    Ok(if o.strict && !all_ok { 1 } else { 0 })
}

fn main() {
    let code = match run() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    };
    std::process::exit(code);
}
