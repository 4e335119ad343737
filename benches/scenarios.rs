//! Scenario benchmark: filewatchd against the peers side by side in one run, on generated trees
//! (performance.md §3, §8): an opencode-style shadow git, Codex-style ghost commits in the tree
//! as a real repo, and agent-undo (`au`) where it can be installed. Workloads W1-W8 of
//! performance.md §8.3; each workload module under `benches/common/` runs one and builds its
//! rows. Prints Markdown for docs/benchmarks.md on stdout and progress on stderr. See `USAGE`.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use common::agent_undo;
use common::codex::Codex;
use common::daemon::{self, Daemon};
use common::edits::{
    EDIT_FILES, SED_CHAIN, SED_FILES, Tally, append_line, check_changes, run_sed, sed_baseline_reps,
    sed_script,
};
use common::gentree::{self, GenFile, GenTree};
use common::report::{self, Row, best_ratio, ratio_cell};
use common::rollback::{self, RollbackRun, Written};
use common::shadow::{self, Shadow};
use common::stats::{fmt_bytes, fmt_dur, fmt_int, fmt_med_p95, fmt_ratio, median, percentile, ratio};
use common::{burst, checkout, degraded, floor, restart, stall, storm, sysinfo, verify, verify_pass};

const USAGE: &str = "\
scenarios: filewatchd vs peers (opencode-style shadow git, Codex-style ghost commits, agent-undo),
side by side, on generated trees: workloads W1-W8 of shared/reference/performance.md §8.3

The bench builds nothing: it runs the release binary target/release/filewatchd. Build it first:

    cargo build --release && cargo bench --bench scenarios -- [--quick]

Options:
  --quick          t20k only (20,000 files): 5 turns, 3 sed runs, 3 rollbacks, 3 Codex snapshots,
                   1 checkout pair, 2 burst pairs, 1 tracked burst: about 4-5 minutes on 2 cores
                   (over the 3 minutes aimed at: W3b's burst alone takes 15-20 s with the daemon
                   running, W8 stalls 6 s by design; `--skip w3b,w8,au` saves about a minute);
                   agent-undo's first install (~14 minutes) is not included: it is built once and
                   cached in target/bench-tools/
                   (default: t20k and t100k, 15 turns, 7 sed runs, 5 rollbacks, 7 Codex snapshots,
                   2 checkout pairs, 3 burst pairs, 2 tracked bursts: about 15 minutes on 2 cores)
  --only NAME      run one tree: t20k or t100k
  --dir PATH       where to generate the trees (default: /tmp); needs ~1.5 GB free for t100k
  --cold           drop the page cache (echo 3 > /proc/sys/vm/drop_caches, needs root)
                   before each first-index measurement (shadow git and filewatchd)
  --reps N         per-turn repetitions (5-file edits, W1)
  --sed-reps N     repetitions of the sed workload (W2, at most 17)
  --rollback-reps N  repetitions of the rollback of a 1,000-file turn (W5)
  --codex-reps N   Codex ghost commits timed in W1 and W2 (the first N turns / sed runs;
                   default 3 with --quick, else 7); W4 and W5 time it in every repetition
  --checkout-reps N  W4 repetitions (each: git checkout B, then main)
  --burst-reps N   W3a pairs of bursts (daemon running / stopped); W3b runs half as many, rounded up
  --skip LIST      comma-separated workloads to leave out: codex, w3a, w3b, w4, w5, w7, w8,
                   verify (the verification pass), restart, au (agent-undo), w1d (degraded:
                   half the dirs unwatched, needs unshare -Ur)
  --bin PATH       filewatchd binary (default: $FILEWATCHD_BIN, else target/release/filewatchd)
  --au-bin PATH    agent-undo's `au` binary (default: install agent-undo 0.0.3 with
                   `cargo install --root target/bench-tools/agent-undo-0.0.3`, once)
  --keep           keep the generated trees, shadow and daemon state (prints where)
  --strict         exit 1 when a goal or a correctness check fails (default: report only)
  -h, --help       this text

Markdown (machine, one table per tree) goes to stdout, progress to stderr:
    cargo bench --bench scenarios -- --quick > /tmp/bench.md
";

/// Names `--skip` accepts.
const SKIPPABLE: &[&str] = &[
    "codex", "w3a", "w3b", "w4", "w5", "w7", "w8", "verify", "restart", "au", "w1d",
];

struct Opts {
    quick: bool,
    only: Option<String>,
    dir: PathBuf,
    cold: bool,
    reps: usize,
    sed_reps: usize,
    rollback_reps: usize,
    codex_reps: usize,
    checkout_reps: usize,
    burst_reps: usize,
    skip: BTreeSet<String>,
    bin: Option<PathBuf>,
    au_bin: Option<PathBuf>,
    keep: bool,
    strict: bool,
}

impl Opts {
    fn runs(&self, workload: &str) -> bool {
        !self.skip.contains(workload)
    }
}

fn parse_skip(v: Option<String>) -> Result<BTreeSet<String>, String> {
    let v = v.ok_or("--skip needs a list, e.g. w3a,w8")?;
    let mut out = BTreeSet::new();
    for w in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let w = w.to_ascii_lowercase();
        if !SKIPPABLE.contains(&w.as_str()) {
            return Err(format!(
                "--skip: unknown workload {w:?} (one of {})",
                SKIPPABLE.join(", ")
            ));
        }
        out.insert(w);
    }
    Ok(out)
}

fn defaults(o: &mut Opts) {
    let pick = |v: usize, quick: usize, full: usize| match v {
        0 if o.quick => quick,
        0 => full,
        v => v,
    };
    o.reps = pick(o.reps, 5, 15);
    o.sed_reps = pick(o.sed_reps, 3, 7);
    o.rollback_reps = pick(o.rollback_reps, 3, 5);
    o.codex_reps = pick(o.codex_reps, 3, 7);
    o.checkout_reps = pick(o.checkout_reps, 1, 2);
    o.burst_reps = pick(o.burst_reps, 2, 5);
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
        codex_reps: 0,
        checkout_reps: 0,
        burst_reps: 0,
        skip: BTreeSet::new(),
        bin: None,
        au_bin: None,
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
            "--au-bin" => o.au_bin = Some(PathBuf::from(args.next().ok_or("--au-bin needs a path")?)),
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
            "--codex-reps" => o.codex_reps = num(args.next(), "--codex-reps")?,
            "--checkout-reps" => o.checkout_reps = num(args.next(), "--checkout-reps")?,
            "--burst-reps" => o.burst_reps = num(args.next(), "--burst-reps")?,
            "--skip" => o.skip.extend(parse_skip(args.next())?),
            "-h" | "--help" => return Ok(None),
            // `cargo bench` passes `--bench` to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    defaults(&mut o);
    // sed runs, then the runs without the daemon, then agent-undo's run: all on the chain.
    let max_sed = (1..SED_CHAIN.len())
        .filter(|&r| r + sed_baseline_reps(r) + 1 < SED_CHAIN.len())
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

/// What one tree's run shares between its workloads.
struct Run<'a> {
    o: &'a Opts,
    name: &'static str,
    tree: PathBuf,
    state: PathBuf,
    sh: Shadow,
    /// The tree as a real repo (Codex peer and W4), unless both are skipped.
    codex: Option<Codex>,
    g: GenTree,
    /// Files in the tree as generated.
    n: usize,
    tck: u64,
    rows: Vec<Row>,
    notes: Vec<String>,
    correct_ok: bool,
    /// Daemon CPU while the peers snapshotted (they run with the daemon idle).
    peer_daemon_ticks: u64,
    peer_runs: usize,
    /// filewatchd's medians of W2's capture and W5's undo, for agent-undo's ratios.
    fw_sed: Option<Duration>,
    fw_undo: Option<Duration>,
    /// W4's result, for the "checkout without the daemon" row at the end.
    checkout: Option<checkout::CheckoutRun>,
    /// W3a's burst with the daemon stopped: the W3b burst's baseline.
    burst_stopped: Option<Duration>,
}

impl Run<'_> {
    /// The correctness check of `verify` (the index against a fresh hash of the disk), added to
    /// `correct_ok`; returns its text for the row.
    fn verify(&mut self, what: &str) -> String {
        let c = verify::check(&self.tree, &self.state, &["node_modules"]);
        eprintln!("{}", verify::progress(self.name, what, &c));
        self.correct_ok &= c.ok();
        c.text()
    }

    /// Appends a row whose `correct` gets the verification after `what`.
    fn push_verified(&mut self, mut row: Row, what: &str) {
        let v = self.verify(what);
        row.correct = if row.correct.is_empty() {
            v
        } else {
            format!("{}; {v}", row.correct)
        };
        self.rows.push(row);
    }

    /// The Codex peer, when it runs.
    fn codex_peer(&self) -> Option<&Codex> {
        self.codex.as_ref().filter(|_| self.o.runs("codex"))
    }

    /// Times `f` (a peer's snapshot) and adds the daemon's CPU meanwhile to the tally.
    fn peer<T>(&mut self, d: &Daemon, f: impl FnOnce(&Self) -> Result<T, String>) -> Result<T, String> {
        let before = d.sample();
        let out = f(self)?;
        self.peer_daemon_ticks += d.sample().ticks - before.ticks;
        self.peer_runs += 1;
        Ok(out)
    }
}

/// W1: turns of 5 appended files; returns filewatchd's samples (for the t100k flatness row).
fn w1_turns(r: &mut Run, d: &Daemon) -> Result<Vec<Duration>, String> {
    let name = r.name;
    let picks: Vec<String> =
        r.g.files
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 10 == 7)
            .map(|(_, f)| f.rel.clone())
            .collect();
    let (mut fw, mut sh, mut cx) = (Vec::new(), Vec::new(), Vec::new());
    let mut tally = Tally::default();
    eprintln!("[{name}] W1: {} turns of {EDIT_FILES} appended files", r.o.reps);
    for rep in 0..r.o.reps {
        d.turn_start()?;
        let set: Vec<&String> = (0..EDIT_FILES)
            .map(|k| &picks[(rep * EDIT_FILES + k) % picks.len()])
            .collect();
        for (k, f) in set.iter().enumerate() {
            append_line(&r.tree.join(f), &format!("// fwbench edit {rep}.{k}\n"))?;
        }
        let (dt, turn) = d.turn_end()?;
        let expected: BTreeSet<&str> = set.iter().map(|f| f.as_str()).collect();
        tally.add(&check_changes(&turn, &expected), expected.len());
        let (sdt, _) = r.peer(d, |r| r.sh.snapshot())?;
        let cdt = codex_turn(r, d, rep)?;
        eprintln!(
            "[{name}]   turn {rep}: filewatchd {} | shadow {} | codex {}",
            fmt_dur(dt),
            fmt_dur(sdt),
            cdt.map(fmt_dur).unwrap_or_else(|| "–".into())
        );
        fw.push(dt);
        sh.push(sdt);
        cx.extend(cdt);
    }
    let st = d.status()?;
    let (ok, mut text) = tracked_text(&st, r.n);
    r.correct_ok &= ok && tally.ok();
    text += &tally.text(EDIT_FILES, "turns");
    let m = median(&fw);
    let best = best_ratio(m, &[Some(median(&sh)), (!cx.is_empty()).then(|| median(&cx))]);
    let mut row = Row::new(format!(
        "W1: turn end after editing {EDIT_FILES} files (n={})",
        r.o.reps
    ));
    row.fw = fmt_med_p95(&fw);
    row.shadow = fmt_med_p95(&sh);
    row.codex = peer_cell(&cx);
    row.ratio = ratio_cell(best);
    row.floor = "~1 ms: hash ~75 KB + 1 fsync'd SQLite tx".into();
    row.goal = "p95 ≤ 10 ms; ≤ 0.1× best peer".into();
    row.pass = Some(percentile(&fw, 95.0) <= Duration::from_millis(10) && best.is_some_and(|b| b <= 0.1));
    row.correct = text;
    r.push_verified(row, "W1");
    Ok(fw)
}

/// W1 again with the daemon at the inotify watch limit (half the dirs unwatched), after the
/// main daemon stopped: the same index, restarted in a user namespace of its own.
fn degraded_row(r: &mut Run, bin: &Path, log: &Path) -> Result<(), String> {
    eprintln!(
        "[{}] W1d: turns with half the dirs unwatched (watch limit)",
        r.name
    );
    let picks: Vec<String> =
        r.g.files
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 10 == 3)
            .map(|(_, f)| f.rel.clone())
            .collect();
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

/// The Codex ghost commit of repetition `rep`, timed, if the peer runs and `rep` is among the
/// first `--codex-reps`.
fn codex_turn(r: &mut Run, d: &Daemon, rep: usize) -> Result<Option<Duration>, String> {
    if r.codex_peer().is_none() || rep >= r.o.codex_reps {
        return Ok(None);
    }
    let (dt, _) = r.peer(d, |r| {
        r.codex_peer().ok_or("no Codex repo".to_string())?.snapshot()
    })?;
    Ok(Some(dt))
}

/// "1.47 s (p95 1.52 s, n=5)" or "not run".
fn peer_cell(samples: &[Duration]) -> String {
    if samples.is_empty() {
        return "not run".into();
    }
    format!("{} n={}", fmt_med_p95(samples), samples.len())
}

/// What W2 hands on to the "sed without the daemon" row measured at the end.
struct SedOut {
    list: Vec<u8>,
    files: usize,
    sed_time: Vec<Duration>,
    row_at: usize,
}

/// W2: `sed -i` over 2,000 files, sed exit → end marker, against both peers' snapshots.
fn w2_sed(r: &mut Run, d: &Daemon) -> Result<SedOut, String> {
    let name = r.name;
    let picks: Vec<&GenFile> =
        r.g.files
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
    let n_files = picks.len();
    let expected_ref: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    let (mut capture, mut sed_time, mut sh, mut cx) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut daemon_cpu, mut sed_cpu) = (Vec::new(), Vec::new());
    let mut tally = Tally::default();
    eprintln!(
        "[{name}] W2: {} runs of sed -i over {n_files} files ({} contain the pattern)",
        r.o.sed_reps,
        expected.len()
    );
    for rep in 0..r.o.sed_reps {
        d.turn_start()?;
        let script = sed_script(rep);
        let (cpu0, ch0) = (d.sample(), daemon::children_ticks());
        let t0 = Instant::now();
        run_sed(&r.tree, &list, &script)?;
        let t_exit = Instant::now();
        let ch1 = daemon::children_ticks();
        let (_, turn) = d.turn_end()?;
        let cap = t_exit.elapsed();
        let cpu1 = d.sample();
        tally.add(&check_changes(&turn, &expected_ref), expected.len());
        let (sdt, _) = r.peer(d, |r| r.sh.snapshot())?;
        let cdt = codex_turn(r, d, rep)?;
        eprintln!(
            "[{name}]   sed {rep} ({script}): sed {} | exit → end marker {} | shadow {} | codex {}",
            fmt_dur(t_exit - t0),
            fmt_dur(cap),
            fmt_dur(sdt),
            cdt.map(fmt_dur).unwrap_or_else(|| "–".into())
        );
        capture.push(cap);
        sed_time.push(t_exit - t0);
        sh.push(sdt);
        cx.extend(cdt);
        daemon_cpu.push(ticks_to_dur(cpu1.ticks - cpu0.ticks, r.tck));
        sed_cpu.push(ticks_to_dur(ch1 - ch0, r.tck));
    }
    let st = d.status()?;
    let (ok, mut text) = tracked_text(&st, r.n);
    r.correct_ok &= ok && tally.ok();
    text += &tally.text(expected.len(), "runs");
    let m = median(&capture);
    r.fw_sed = Some(m);
    let best = best_ratio(m, &[Some(median(&sh)), (!cx.is_empty()).then(|| median(&cx))]);
    let mut row = Row::new(format!(
        "W2: `sed -i` over {} files: sed exit → end marker (n={})",
        fmt_int(n_files as u64),
        r.o.sed_reps
    ));
    row.fw = fmt_med_p95(&capture);
    row.shadow = fmt_med_p95(&sh);
    row.codex = peer_cell(&cx);
    row.ratio = ratio_cell(best);
    row.floor = "~0.3 s: read+hash ~30 MB, zstd-1, blob writes (~0.4 s with fsync)".into();
    row.goal = "≤ 0.5 s; ≤ 0.5× best peer".into();
    row.pass = Some(m <= Duration::from_millis(500) && best.is_some_and(|b| b <= 0.5));
    row.correct = text;
    r.push_verified(row, "W2");
    let cr = ratio(median(&daemon_cpu), median(&sed_cpu));
    let mut row = Row::new("W2: daemon CPU during sed + capture, vs sed's own CPU");
    row.fw = fmt_dur(median(&daemon_cpu));
    row.shadow = format!("{} (sed's own)", fmt_dur(median(&sed_cpu)));
    row.ratio = fmt_ratio(cr);
    row.goal = "≤ 1× sed's CPU (perf. W2)".into();
    row.pass = Some(cr <= 1.0);
    r.rows.push(row);
    r.notes.push(format!(
        "W2 (sed): `xargs -0 sed -i -e SCRIPT` (one sed process). {} of the {} files contain `fn`: that many change in each run (run 1 is `s/fn/fx/`, run 2 `s/fx/fy/`, and so on, so every run writes content never seen before); sed rewrites the other files byte for byte, which is not a change.",
        fmt_int(expected.len() as u64),
        fmt_int(n_files as u64)
    ));
    Ok(SedOut {
        list,
        files: n_files,
        sed_time,
        row_at: r.rows.len(),
    })
}

/// W5: the rollback of a 1,000-file turn against `git restore` from the shadow and the Codex
/// restore.
fn w5_rollback(r: &mut Run, d: &Daemon) -> Result<(), String> {
    let rb = rollback::run(
        r.name,
        d,
        &r.sh,
        r.codex_peer(),
        &r.tree,
        &r.g.files,
        r.o.rollback_reps,
        r.tck,
    )?;
    let (rows, notes) = rollback_rows(&rb);
    r.correct_ok &= rb.ok();
    r.fw_undo = Some(median(&rb.fw));
    let mut rows = rows.into_iter();
    if let Some(first) = rows.next() {
        r.push_verified(first, "W5");
    }
    r.rows.extend(rows);
    r.notes.extend(notes);
    Ok(())
}

fn w4_checkout(r: &mut Run, d: &Daemon) -> Result<(), String> {
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
fn checkout_alone_row(r: &mut Run) -> Result<(), String> {
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

fn w3_bursts(r: &mut Run, d: &Daemon) -> Result<(), String> {
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

fn w7_storm(r: &mut Run, d: &Daemon) -> Result<(), String> {
    let out = storm::run(r.name, d, &r.tree, r.tck)?;
    r.push_verified(storm::row(&out), "W7");
    Ok(())
}

fn w8_stall(r: &mut Run, d: &Daemon) -> Result<(), String> {
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

fn idle_row(r: &mut Run, d: &Daemon) {
    eprintln!("[{}] idle: 1 s settle, then 5 s measured", r.name);
    std::thread::sleep(Duration::from_secs(1));
    let s0 = d.sample();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let s1 = d.sample();
    let secs = t.elapsed().as_secs_f64();
    let cpu_pct = (s1.ticks - s0.ticks) as f64 / r.tck as f64 / secs * 100.0;
    let wakeups = (s1.switches - s0.switches) as f64 / secs;
    let mut row = Row::new("idle: daemon CPU over 5 s (after 1 s of quiet)");
    row.fw = format!("{cpu_pct:.1} % ({wakeups:.1} wake-ups/s)");
    row.floor = "0".into();
    row.goal = "≈ 0 % (≤ 0.5 %)".into();
    row.pass = Some(cpu_pct <= 0.5);
    r.rows.push(row);
}

/// Generates the tree, takes the shadow's first snapshot and makes the tree a real repo.
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

/// The first index (W6): spawn → ready against the shadow's first snapshot.
fn first_index_row(
    r: &mut Run,
    d: &Daemon,
    (fw_first, shadow_first): (Duration, Duration),
    floor: &floor::Floor,
) -> Result<u64, String> {
    let st = d.status()?;
    let store = u64_at(&st, "/store_bytes").unwrap_or(0);
    let (ok, text) = tracked_text(&st, r.n);
    r.correct_ok &= ok;
    let q = ratio(fw_first, shadow_first);
    let mut row = Row::new("W6: first index: spawn → ready, vs first shadow snapshot");
    row.fw = fmt_dur(fw_first);
    row.shadow = fmt_dur(shadow_first);
    row.ratio = fmt_ratio(q);
    row.floor = format!(
        "{}: read + hash + zstd-1, 8 threads, nothing stored (measured just before, same cache state)",
        fmt_dur(floor.elapsed)
    );
    row.goal = "≤ 0.3×; cold ≤ 5 s, warm ≤ 2 s (t100k)".into();
    row.pass = Some(q <= 0.3);
    row.correct = text;
    r.push_verified(row, "the first index");
    Ok(store)
}

fn rss_row(r: &mut Run, d: &Daemon, rss_index: u64) -> Result<(), String> {
    let (rss_end, hwm) = d.rss();
    let st = d.status()?;
    let files_now = gentree::count_files(&r.tree).map_err(|e| format!("count files: {e}"))?;
    let (ok, text) = tracked_text(&st, files_now);
    r.correct_ok &= ok;
    let mut row = Row::new("W6: daemon RSS: after first index / at end (peak)");
    row.fw = format!(
        "{} / {} ({})",
        fmt_bytes(rss_index),
        fmt_bytes(rss_end),
        fmt_bytes(hwm)
    );
    row.goal = "peak ≤ 100 MB (perf. W6)".into();
    row.pass = Some(hwm <= 100_000_000);
    row.correct = format!("at end: {text}");
    r.rows.push(row);
    Ok(())
}

fn restart_row(r: &mut Run, d: Daemon, bin: &Path, log: &Path) -> Result<Daemon, String> {
    let (d2, out) = restart::run(r.name, d, bin, &r.tree, &r.state, log, r.tck)?;
    let row = restart::row(&out, r.g.bytes);
    r.correct_ok &= out.before == out.after;
    r.push_verified(row, "the restart");
    Ok(d2)
}

/// Runs `sed` again with the daemon stopped, for sed's own time.
fn sed_alone_row(r: &mut Run, sed: &SedOut) -> Result<(), String> {
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

/// Copies `files` (relative paths) from `tree` into a new `dest`, keeping their paths.
fn copy_subset(tree: &Path, dest: &Path, files: &[String]) -> Result<(), String> {
    for f in files {
        let to = dest.join(f);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("mkdir {}: {e}", parent.display()))?;
        }
        fs::copy(tree.join(f), &to).map_err(|e| format!("copy {f}: {e}"))?;
    }
    Ok(())
}

/// agent-undo after filewatchd stopped, on a copy of the tree holding only the files of its two
/// turns (its `au init` hashes and stores every file with one fsync each: 52 s for t20k in a
/// trial, far over the quick run's budget): W2's sed (the next script of the chain) and W5's
/// 1,000-file turn, each undone.
fn au_rows(r: &mut Run, au: &agent_undo::Tool, sed: &SedOut, base: &Path) {
    let sed_files: Vec<String> = sed
        .list
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let undo_files: Vec<String> = rollback::picks(&r.g.files)
        .iter()
        .map(|f| f.rel.clone())
        .collect();
    let au_tree = base.join("au-tree");
    let all: Vec<String> = sed_files.iter().chain(&undo_files).cloned().collect();
    if au.bin.is_some()
        && let Err(e) = copy_subset(&r.tree, &au_tree, &all)
    {
        r.rows
            .extend(agent_undo::not_measured(&format!("copying its tree: {e}")));
        return;
    }
    let inputs = agent_undo::Inputs {
        tree: &au_tree,
        sed_files,
        sed_script: sed_script(r.o.sed_reps + sed_baseline_reps(r.o.sed_reps)),
        undo_files,
        fw_sed: r.fw_sed,
        fw_undo: r.fw_undo,
        log: base.join("au-serve.log"),
    };
    let (rows, notes) = agent_undo::run(r.name, au, &inputs);
    r.rows.extend(rows);
    r.notes.extend(notes);
}

fn storage_rows(r: &mut Run, store_index: u64, store_end: u64, shadow: (u64, u64)) {
    let share = store_index as f64 / r.g.bytes as f64;
    let mut row = Row::new("W6: storage after the first index: `store_bytes` vs the shadow on disk");
    row.fw = format!("{} ({share:.2}× the tree)", fmt_bytes(store_index));
    row.shadow = format!(
        "{} ({:.2}× the tree)",
        fmt_bytes(shadow.0),
        shadow.0 as f64 / r.g.bytes as f64
    );
    row.ratio = fmt_ratio(store_index as f64 / shadow.0 as f64);
    row.goal = "≤ 0.35× the tree (perf. W6)".into();
    row.pass = Some(share <= 0.35);
    r.rows.push(row);
    let mut row = Row::new("storage at the end (all workloads recorded)");
    row.fw = fmt_bytes(store_end);
    row.shadow = fmt_bytes(shadow.1);
    row.ratio = fmt_ratio(store_end as f64 / shadow.1 as f64);
    row.goal = "info".into();
    r.rows.push(row);
}

fn run_tree(
    o: &Opts,
    spec: TreeSpec,
    bin: &Path,
    tck: u64,
    au: &agent_undo::Tool,
) -> Result<TreeResult, String> {
    let name = spec.name;
    let base = tempfile::Builder::new()
        .prefix(&format!("fwbench-{name}-"))
        .tempdir_in(&o.dir)
        .map_err(|e| format!("temp dir in {}: {e}", o.dir.display()))?;
    let (g, sh, shadow_first, shadow_bytes_first) = prepare(o, spec, base.path())?;
    let codex = if o.runs("codex") || o.runs("w4") {
        Some(Codex::init_from_shadow(&sh)?)
    } else {
        None
    };
    let mut r = Run {
        o,
        name,
        tree: base.path().join("tree"),
        state: base.path().join("state"),
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
    let log = base.path().join("daemon.log");
    prepare_cache(o.cold);
    eprintln!("[{name}] the floor: read + hash + zstd-1 of every file, 8 threads, nothing stored...");
    let floor = floor::read_hash_compress(&r.tree)?;
    eprintln!(
        "[{name}]   {} for {} files",
        fmt_dur(floor.elapsed),
        fmt_int(floor.files as u64)
    );
    if !prepare_cache(o.cold) && o.cold {
        r.notes.push(
            "`--cold` was asked but dropping the page cache failed (not root?): the first indexes ran warm."
                .into(),
        );
    }
    eprintln!("[{name}] starting filewatchd (first index)...");
    let (d, fw_first) = Daemon::spawn(bin, &r.tree, &r.state, &log, Duration::from_secs(1800))?;
    eprintln!(
        "[{name}]   ready in {} (pid {}, {})",
        fmt_dur(fw_first),
        d.pid,
        d.url
    );
    let (rss_index, _) = d.rss();
    let version = d
        .status()?
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let store_index = first_index_row(&mut r, &d, (fw_first, shadow_first), &floor)?;

    let fw_turn = w1_turns(&mut r, &d)?;
    let sed = w2_sed(&mut r, &d)?;
    if o.runs("w5") {
        w5_rollback(&mut r, &d)?;
    }
    if o.runs("w4") {
        w4_checkout(&mut r, &d)?;
    }
    w3_bursts(&mut r, &d)?;
    if o.runs("w7") {
        w7_storm(&mut r, &d)?;
    }
    idle_row(&mut r, &d);
    if o.runs("w8") {
        w8_stall(&mut r, &d)?;
    }
    rss_row(&mut r, &d, rss_index)?;
    if o.runs("verify") {
        eprintln!("[{name}] verification pass (POST /v1/verify)...");
        let out = verify_pass::run(name, &d, tck)?;
        r.push_verified(verify_pass::row(name, &out), "the verification passes");
    }
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
    let mut d = d;
    if o.runs("restart") {
        d = restart_row(&mut r, d, bin, &base.path().join("daemon-restart.log"))?;
    }
    let stop = d.stop();
    if o.runs("w1d") {
        degraded_row(&mut r, bin, &base.path().join("daemon-degraded.log"))?;
    }
    sed_alone_row(&mut r, &sed)?;
    checkout_alone_row(&mut r)?;
    let shadow_end = gentree::disk_usage(&base.path().join("shadow.git"));
    storage_rows(&mut r, store_index, store_end, (shadow_bytes_first, shadow_end));
    if o.runs("au") {
        au_rows(&mut r, au, &sed, base.path());
    }
    r.notes.push(format!(
        "Watcher before the restart: {watcher}. Daemon CPU during the {} peer snapshots of W1/W2: {} in all (they ran with the daemon idle). Daemon {stop}. filewatchd version {version}.",
        r.peer_runs,
        fmt_dur(ticks_to_dur(r.peer_daemon_ticks, tck)),
    ));
    if o.keep {
        let p = base.keep();
        eprintln!("[{name}] kept {}", p.display());
        r.notes.push(format!("Kept in `{}`.", p.display()));
    } else {
        eprintln!("[{name}] removing {}", base.path().display());
    }
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
    let codex = (!rb.codex.is_empty()).then(|| median(&rb.codex));
    let best = best_ratio(median(&rb.fw), &[Some(median(&rb.git)), codex]);
    let mut correct = format!(
        "written: filewatchd {}; shadow git {}",
        written_text(&rb.fw_written, n),
        written_text(&rb.git_written, n)
    );
    if codex.is_some() {
        // Information, not a check: `--staged` resets the repo's index to the ghost commit, and
        // git rewrites every path whose index entry it replaced (here: the files of earlier
        // workloads, uncommitted in the repo), with the same bytes.
        let w: Vec<String> = rb
            .codex_written
            .iter()
            .map(|w| format!("{} ({} of the turn's)", w.total, w.of_turn))
            .collect();
        correct += &format!("; codex wrote {} (info)", w.join(", "));
    }
    correct += &format!(
        "; undo answer applied with {} `done` actions in {}/{reps}; pre-turn bytes back: filewatchd {}/{reps}, shadow git {}/{reps}",
        fmt_int(n as u64),
        rb.answers_ok,
        rb.fw_content_ok,
        rb.git_content_ok
    );
    if codex.is_some() {
        correct += &format!(", codex {}/{}", rb.codex_content_ok, rb.codex.len());
    }
    if rb.turns_ok != reps {
        correct += &format!(
            "; **turn end listed the {n} files in only {}/{reps}**",
            rb.turns_ok
        );
    }
    if !rb.problems.is_empty() {
        correct += &format!("; **{}**", rb.problems.join("; "));
    }
    let mut row = Row::new(format!(
        "W5: rollback of a turn that changed {} files: `POST …/undo` → answer; shadow: `git restore --source <tree> --worktree -- .`; codex: `git restore --source <ghost> --worktree --staged -- .` (n={reps})",
        fmt_int(n as u64)
    ));
    row.fw = fmt_med_p95(&rb.fw);
    row.shadow = fmt_med_p95(&rb.git);
    row.codex = if codex.is_some() {
        fmt_med_p95(&rb.codex)
    } else {
        "not run".into()
    };
    row.ratio = ratio_cell(best);
    row.floor = "write+rename 0.21 s; with fsync 0.39 s".into();
    row.goal = "≤ 1.0× best peer (perf. W5: ≤ 0.3 s, ≤ 0.5 s durable)".into();
    row.pass = Some(best.is_some_and(|b| b <= 1.0));
    row.correct = correct;
    let mut cpu = Row::new("W5: rollback CPU: daemon during the undo, vs git's own");
    cpu.fw = fmt_dur(median(&rb.fw_cpu));
    cpu.shadow = format!("{} (git)", fmt_dur(median(&rb.git_cpu)));
    if codex.is_some() {
        cpu.codex = format!("{} (git)", fmt_dur(median(&rb.codex_cpu)));
    }
    cpu.ratio = fmt_ratio(ratio(median(&rb.fw_cpu), median(&rb.git_cpu)));
    cpu.goal = "info".into();
    let uniq = |v: &[String]| {
        let mut u: Vec<&str> = v.iter().map(String::as_str).collect();
        u.dedup();
        u.join(", ")
    };
    let notes = vec![format!(
        "W5 (rollback): each run opens a turn, appends a line to {} files (every {}th file of the sorted list, disjoint from the other workloads' files), ends it and takes the shadow's turn-end snapshot (untimed); then `POST /v1/sessions/bench/undo` `{{}}` is timed until its answer; `redo` (untimed) puts the turn back and a barrier lets the daemon record its own writes; then `git --git-dir=$SHADOW --work-tree=. restore --source <pre-turn tree id> --worktree -- .` is timed, followed by a barrier; then (Codex) the same lines are appended again outside any turn, a barrier, and `git restore --source <ghost commit of the pre-turn tree> --worktree --staged -- .` in the real repo is timed, followed by a barrier. “written” = (inode, mtime_ns) changed between stat walks of the whole tree (`.git/` left out) before and after. filewatchd writes each file temp + fsync + rename (durable); git writes without fsync. Latest recorded origin of a restored file: {} after the undo, {} after git.",
        fmt_int(n as u64),
        rb.step,
        uniq(&rb.origin_after_undo),
        uniq(&rb.origin_after_git)
    )];
    (vec![row, cpu], notes)
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
    println!("{}", report::HEADER);
    for r in &t.rows {
        println!("{}", report::line(r));
    }
    println!();
    for n in &t.notes {
        println!("- {n}");
    }
    println!();
}

/// The t100k turn end against t20k's, when both ran (W1: flat from t20k to t100k).
fn flatness_row(results: &mut [TreeResult]) {
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
    let (m20, m100) = (median(&a), median(&b.turn_samples));
    let limit = m20.mul_f64(1.5) + Duration::from_millis(2);
    let mut row = Row::new(format!(
        "W1: turn end after {EDIT_FILES} edits: t100k vs t20k (same within noise)"
    ));
    row.fw = format!("{} (t100k)", fmt_dur(m100));
    row.shadow = format!("{} (filewatchd, t20k)", fmt_dur(m20));
    row.ratio = fmt_ratio(ratio(m100, m20));
    row.goal = "≤ 1.5× t20k + 2 ms".into();
    row.pass = Some(m100 <= limit);
    let at = b
        .rows
        .iter()
        .position(|r| r.workload.starts_with("W1:"))
        .map_or(b.rows.len(), |i| i + 1);
    b.rows.insert(at, row);
}

fn print_header(o: &Opts, started: Instant, load_start: &str, au: &agent_undo::Tool) {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    println!("## Scenario benchmark: filewatchd vs opencode shadow git, Codex ghost commits, agent-undo\n");
    println!(
        "- Date: {}; filewatchd commit {}; git {}; agent-undo: {}.",
        sysinfo::date(),
        sysinfo::project_commit(&manifest).unwrap_or_else(|| "(none)".into()),
        shadow::git_version(),
        au.describe()
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
        "- Run: `cargo bench --bench scenarios{}`; per tree: turns × {}, sed runs × {}, rollbacks × {}, Codex snapshots in W1/W2 × {}, checkout pairs × {}, burst pairs × {}{}; took {}; 1-min load average {} at the start, {} at the end (anything above ~0.1 before the start means something else was running).",
        if args.is_empty() {
            String::new()
        } else {
            format!(" -- {}", args.join(" "))
        },
        o.reps,
        o.sed_reps,
        o.rollback_reps,
        o.codex_reps,
        o.checkout_reps,
        o.burst_reps,
        if o.skip.is_empty() {
            String::new()
        } else {
            format!(
                "; skipped: {}",
                o.skip.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        },
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
        "- Peers: **opencode shadow** = `git --git-dir=$SHADOW --work-tree=. add -A . && … write-tree` (performance.md §1.1); **codex ghost** = in the tree made a real repo (untimed: `git init`, the shadow's objects as an alternate, its index, base commit = its tree): `git status --porcelain=2 -z --untracked-files=all`, then with `GIT_INDEX_FILE=<tmp>/index` `git read-tree HEAD`, `git add --all`, `git write-tree`, `git commit-tree <tree> -p HEAD -m snap` (§1.4); **agent-undo** = `au` 0.0.3 from crates.io (its own row group below the table's filewatchd rows)."
    );
    println!(
        "- Turns: start marker (untimed), the workload, then the end marker `POST /v1/sessions/bench/turns/current/end`, timed (its barrier covers every write before it). The peers' snapshots of the same state run right after the end marker has returned, with the daemon alive but idle, so they never compete for the 2 cores. Ratio = filewatchd's median / the best peer's median; p95 is the nearest-rank 95th percentile."
    );
    println!(
        "- Correctness: the end markers' `changes` against the exact set of files changed, `tracked_files` against the files in the tree, and after each workload **disk = index**: every tracked file on disk hashed with BLAKE3 by the bench and compared with the latest version the daemon recorded for it (read from `<state>/index.sqlite` through the crate's own `store::sql::each_present`, on a read-only connection: the HTTP API has no call that lists every path's latest hash), plus recorded-but-gone paths.\n"
    );
}

fn check_tools() -> Result<(), String> {
    for tool in ["git", "sed", "xargs", "tar", "grep", "kill", "sync"] {
        let ok = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !ok {
            return Err(format!("`{tool}` is needed and was not found"));
        }
    }
    Ok(())
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
    check_tools()?;
    fs::create_dir_all(&o.dir).map_err(|e| format!("--dir {}: {e}", o.dir.display()))?;
    let dir = fs::canonicalize(&o.dir).map_err(|e| format!("--dir {}: {e}", o.dir.display()))?;
    let o = Opts { dir, ..o };
    let tck = daemon::clk_tck();
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let au = if o.runs("au") {
        agent_undo::Tool::find_or_install(o.au_bin.as_deref(), &manifest)
    } else {
        agent_undo::Tool::skipped()
    };

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
        results.push(run_tree(&o, *spec, &bin, tck, &au)?);
    }
    flatness_row(&mut results);
    print_header(&o, started, &load_start, &au);
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
