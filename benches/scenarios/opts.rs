//! The command line: `USAGE`, the options and their defaults (`--quick` or the full run).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::common::edits::{SED_CHAIN, sed_baseline_reps};

pub const USAGE: &str = "\
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
  --only NAME      run one tree: t20k, t100k or t1m (1,000,000 files in ~71,000 dirs, ~1.5 GB:
                   opt-in, about 30-40 minutes; it runs W6, W1, W2, W5, the restart, idle, the
                   verification pass and the degraded turn end (w1d) only, and raises
                   fs.inotify.max_user_watches for its run when it is below twice the tree's
                   dirs, restoring it after: root)
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

/// Workloads the t1m tree leaves out.
const T1M_SKIPS: &[&str] = &["codex", "w3a", "w3b", "w4", "w7", "w8", "au"];

pub struct Opts {
    pub quick: bool,
    pub only: Option<String>,
    pub dir: PathBuf,
    pub cold: bool,
    pub reps: usize,
    pub sed_reps: usize,
    pub rollback_reps: usize,
    pub codex_reps: usize,
    pub checkout_reps: usize,
    pub burst_reps: usize,
    pub skip: BTreeSet<String>,
    pub bin: Option<PathBuf>,
    pub au_bin: Option<PathBuf>,
    pub keep: bool,
    pub strict: bool,
}

impl Opts {
    pub fn runs(&self, workload: &str) -> bool {
        !self.skip.contains(workload)
    }

    /// Nothing given yet: the counts are 0 until `defaults` picks them.
    fn unset() -> Opts {
        Opts {
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
        }
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

fn parse_only(v: Option<String>) -> Result<String, String> {
    let v = v.ok_or("--only needs t20k, t100k or t1m")?;
    if !["t20k", "t100k", "t1m"].contains(&v.as_str()) {
        return Err(format!("--only: unknown tree {v:?} (t20k, t100k or t1m)"));
    }
    Ok(v)
}

fn positive(v: Option<String>, name: &str) -> Result<usize, String> {
    v.and_then(|s| s.parse().ok())
        .filter(|&n: &usize| n > 0)
        .ok_or_else(|| format!("{name} needs a positive number"))
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

/// The options, or `None` for `--help`.
pub fn parse_args() -> Result<Option<Opts>, String> {
    let mut o = Opts::unset();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if !parse_arg(&mut o, &a, &mut args)? {
            return Ok(None);
        }
    }
    defaults(&mut o);
    if o.only.as_deref() == Some("t1m") {
        // The million-file tree measures only the goals set for it; the rest would take hours.
        o.skip.extend(T1M_SKIPS.iter().map(|w| w.to_string()));
    }
    check_sed_reps(&o)?;
    Ok(Some(o))
}

/// Applies one argument, taking its value from `args`; false for `--help`.
fn parse_arg(o: &mut Opts, a: &str, args: &mut impl Iterator<Item = String>) -> Result<bool, String> {
    match a {
        "--quick" => o.quick = true,
        "--cold" => o.cold = true,
        "--keep" => o.keep = true,
        "--strict" => o.strict = true,
        "--dir" => o.dir = PathBuf::from(args.next().ok_or("--dir needs a path")?),
        "--bin" => o.bin = Some(PathBuf::from(args.next().ok_or("--bin needs a path")?)),
        "--au-bin" => o.au_bin = Some(PathBuf::from(args.next().ok_or("--au-bin needs a path")?)),
        "--only" => o.only = Some(parse_only(args.next())?),
        "--reps" => o.reps = positive(args.next(), "--reps")?,
        "--sed-reps" => o.sed_reps = positive(args.next(), "--sed-reps")?,
        "--rollback-reps" => o.rollback_reps = positive(args.next(), "--rollback-reps")?,
        "--codex-reps" => o.codex_reps = positive(args.next(), "--codex-reps")?,
        "--checkout-reps" => o.checkout_reps = positive(args.next(), "--checkout-reps")?,
        "--burst-reps" => o.burst_reps = positive(args.next(), "--burst-reps")?,
        "--skip" => o.skip.extend(parse_skip(args.next())?),
        "-h" | "--help" => return Ok(false),
        // `cargo bench` passes `--bench` to every bench binary.
        "--bench" => {}
        other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
    }
    Ok(true)
}

/// sed runs, then the runs without the daemon, then agent-undo's run: all on the chain.
fn check_sed_reps(o: &Opts) -> Result<(), String> {
    let max_sed = (1..SED_CHAIN.len())
        .filter(|&r| r + sed_baseline_reps(r) + 1 < SED_CHAIN.len())
        .max()
        .unwrap_or(0);
    if o.sed_reps > max_sed {
        return Err(format!("--sed-reps: at most {max_sed}"));
    }
    Ok(())
}
