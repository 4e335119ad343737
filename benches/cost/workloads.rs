//! The agent's commands: `sed -i` over 2,000 files, `git checkout` of 3,000 files, a code
//! generator writing 5,000 new files in 50 new directories, and an `npm install`-like burst of
//! 30,000 files into the ignored `node_modules/`, and `git add -A && git commit`. Generated files go into a new directory each
//! run and stay (creating files right after deleting many is slow on ext4, and would be
//! noise). Each round runs the command once for each side (`setup::Side`), in the same tree,
//! each side first in turn; each run changes the files anew (sed's script numbers its runs,
//! checkout goes back and forth). The watched run is a turn whose end marker must list
//! exactly the files the command changed.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::opts::Opts;
use super::setup::{Bench, Side, sh};
use crate::common::burst;
use crate::common::checkout;
use crate::common::edits::SED_FILES;
use crate::common::stats::{fmt_dur, median, ratio};

#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Sed,
    Checkout,
    Codegen,
    Npm,
    /// `git add -A && git commit`: the agent commits (the daemon records HEAD's move and the
    /// index at the end marker).
    Commit,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sed => "sed",
            Kind::Checkout => "checkout",
            Kind::Codegen => "codegen",
            Kind::Npm => "npm",
            Kind::Commit => "commit",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Kind::Sed => "`sed -i` over 2,000 files (1 process, via xargs)",
            Kind::Checkout => "`git checkout` of a branch changing 3,000 files",
            Kind::Codegen => "a code generator writing 5,000 new files in 50 new dirs",
            Kind::Npm => "`npm install`-like: 30,000 files in 300 new dirs into the ignored `node_modules/`",
            Kind::Commit => "`git add -A && git commit` of one changed file",
        }
    }

    /// Goal: the command's median wall time watched ≤ this × unwatched.
    pub fn goal(self) -> f64 {
        1.05
    }

    /// Goal for the end marker after the command: ≤ this × the shadow snapshot after the same
    /// command unwatched (the 2,000-file sed).
    pub fn marker_goal(self) -> Option<f64> {
        (self == Kind::Sed).then_some(0.10)
    }
}

/// `git commit` as the bench runs it: no automatic gc in the background (its packing removes
/// `.git/objects/??` directories under the next run's `find`).
const COMMIT: &str = "git -c gc.auto=0 -c user.name=bench -c user.email=b@e commit";

const CODEGEN_DIRS: usize = 50;
const CODEGEN_PER_DIR: usize = 100;

fn ticks_to_dur(ticks: u64, tck: u64) -> Duration {
    Duration::from_secs_f64(ticks as f64 / tck as f64)
}

/// One workload's samples.
pub struct Samples {
    pub kind: Kind,
    pub watched: Vec<Duration>,
    /// With the bare inotify watcher watching (`bare`).
    pub bare: Vec<Duration>,
    pub plain: Vec<Duration>,
    /// Each pair's watched / unwatched.
    pub pair_ratios: Vec<f64>,
    /// The end marker's answer after the watched command.
    pub end: Vec<Duration>,
    /// The shadow snapshot after the unwatched command.
    pub shadow: Vec<Duration>,
    /// Daemon CPU during the watched command.
    pub daemon_cpu: Vec<Duration>,
    pub captured_ok: usize,
    pub first_bad: Option<String>,
}

impl Samples {
    pub fn ratio(&self) -> f64 {
        ratio(median(&self.watched), median(&self.plain))
    }

    /// With the bare inotify watcher ÷ unwatched: what being watched costs at all.
    pub fn bare_ratio(&self) -> f64 {
        ratio(median(&self.bare), median(&self.plain))
    }

    /// filewatchd ÷ the bare inotify watcher: what filewatchd adds to that.
    pub fn over_bare_ratio(&self) -> f64 {
        ratio(median(&self.watched), median(&self.bare))
    }

    /// The median end marker ÷ the median shadow snapshot.
    pub fn marker_ratio(&self) -> f64 {
        ratio(median(&self.end), median(&self.shadow))
    }

    /// What the agent waits for, command and marker, with filewatchd ÷ the command alone.
    pub fn waited_ratio(&self) -> f64 {
        let waited: Vec<Duration> = self.watched.iter().zip(&self.end).map(|(c, m)| *c + *m).collect();
        ratio(median(&waited), median(&self.plain))
    }

    pub fn pass(&self) -> bool {
        let marker = self
            .kind
            .marker_goal()
            .is_none_or(|goal| self.marker_ratio() <= goal);
        self.ratio() <= self.kind.goal() && marker && self.first_bad.is_none()
    }
}

pub fn run_all(b: &mut Bench, o: &Opts) -> Result<Vec<Samples>, String> {
    write_sed_list(b)?;
    let mut out = Vec::new();
    for kind in [Kind::Sed, Kind::Checkout, Kind::Codegen, Kind::Npm, Kind::Commit] {
        if o.runs(kind.name()) {
            if kind == Kind::Commit {
                // What the other workloads left is committed first, untimed: each timed run
                // then commits its one file, whichever side goes first.
                sh(
                    &b.tree,
                    &format!("git add -A && {COMMIT} -qm 'before the commit runs'"),
                )?;
            }
            out.push(run_one(b, kind, o.pairs)?);
        }
    }
    Ok(out)
}

fn run_one(b: &mut Bench, kind: Kind, pairs: usize) -> Result<Samples, String> {
    let mut s = Samples {
        kind,
        watched: Vec::new(),
        bare: Vec::new(),
        plain: Vec::new(),
        pair_ratios: Vec::new(),
        end: Vec::new(),
        shadow: Vec::new(),
        daemon_cpu: Vec::new(),
        captured_ok: 0,
        first_bad: None,
    };
    for pair in 0..pairs {
        // Each side goes first, second and third in turn.
        let mut order = Side::ALL;
        order.rotate_left(pair % Side::ALL.len());
        let mut times = [Duration::ZERO; 3];
        for (k, side) in order.into_iter().enumerate() {
            let run = pair * Side::ALL.len() + k;
            times[side as usize] = match side {
                Side::Filewatchd => watched_run(b, kind, run, &mut s)?,
                Side::Bare => {
                    b.unwatched(side)?;
                    timed(b, kind, run)?
                }
                Side::Plain => {
                    b.unwatched(side)?;
                    // What the other sides changed is not this command's to snapshot.
                    b.shadow.snapshot()?;
                    let dt = timed(b, kind, run)?;
                    s.shadow.push(b.shadow.snapshot()?.0);
                    dt
                }
            };
        }
        let [watched, bare, plain] = times;
        eprintln!(
            "[{}] round {}: watched {} bare inotify {} unwatched {} ({:.2}×, bare {:.2}×)",
            kind.name(),
            pair + 1,
            fmt_dur(watched),
            fmt_dur(bare),
            fmt_dur(plain),
            ratio(watched, plain),
            ratio(bare, plain)
        );
        s.watched.push(watched);
        s.bare.push(bare);
        s.plain.push(plain);
        s.pair_ratios.push(ratio(watched, plain));
    }
    Ok(s)
}

/// The command with the daemon watching, inside a turn; checks what its end marker lists.
fn watched_run(b: &mut Bench, kind: Kind, run: usize, s: &mut Samples) -> Result<Duration, String> {
    b.watched()?.turn_start()?;
    let before = b.daemon()?.sample();
    let dt = timed(b, kind, run)?;
    let daemon = b.daemon()?;
    let cpu = daemon.sample().ticks - before.ticks;
    let (end, turn) = daemon.turn_end()?;
    s.end.push(end);
    s.daemon_cpu.push(ticks_to_dur(cpu, b.tck));
    let expected = expected(b, kind, run);
    match compare(&turn, &expected) {
        None => s.captured_ok += 1,
        Some(bad) => {
            eprintln!("[{}] run {}: {bad}", kind.name(), run + 1);
            s.first_bad.get_or_insert(bad);
        }
    }
    Ok(dt)
}

/// `sync`s what earlier runs left dirty and stats every file (as a daemon's restart does
/// before its side's run: every side's command then finds the inodes in memory alike), then
/// times the command alone.
fn timed(b: &Bench, kind: Kind, run: usize) -> Result<Duration, String> {
    sh(&b.tree, "sync && find . -printf '%s' > /dev/null")?;
    let t0 = Instant::now();
    command(kind, &b.tree, run)?;
    Ok(t0.elapsed())
}

/// Run `run`'s sed script: the first match of `fn` and the digits after it on each line
/// becomes `fn` and the run's number, so every run rewrites every file that holds `fn`.
fn sed_script(run: usize) -> String {
    format!("s/fn[0-9]*/fn{run}/")
}

fn command(kind: Kind, tree: &Path, run: usize) -> Result<(), String> {
    match kind {
        Kind::Sed => sh(
            tree,
            &format!("xargs -0 sed -i -e '{}' -- < .git/bench-sed", sed_script(run)),
        ),
        Kind::Checkout => {
            let branch = if run.is_multiple_of(2) { "B" } else { "main" };
            let st = Command::new("git")
                .args(["checkout", "-q", branch])
                .current_dir(tree)
                .status()
                .map_err(|e| format!("git checkout: {e}"))?;
            st.success()
                .then_some(())
                .ok_or(format!("git checkout {branch}: {st}"))
        }
        Kind::Codegen => codegen(tree, run),
        Kind::Npm => {
            let base = format!("node_modules/run{run}");
            burst::write_burst(&tree.join(&base), &base, &format!("n{run}")).map(|_| ())
        }
        Kind::Commit => sh(
            tree,
            &format!("echo {run} > committed.txt && git add -A && {COMMIT} -qm run{run}"),
        ),
    }
    .map_err(|e| format!("{} in {}: {e}", kind.name(), tree.display()))
}

fn codegen(tree: &Path, run: usize) -> Result<(), String> {
    for d in 0..CODEGEN_DIRS {
        let dir = tree.join(format!("gen{run}/m{d:02}"));
        fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        for f in 0..CODEGEN_PER_DIR {
            let text = format!(
                "// generated (run {run})\npub fn item_{d}_{f}() -> u64 {{\n    {}\n}}\n{}",
                d * 1000 + f,
                "pub const PAD: &str = \"generated code generated code generated code\";\n".repeat(20)
            );
            let p = dir.join(format!("f{f:03}.rs"));
            fs::write(&p, text).map_err(|e| format!("write {}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// The files (not directories) the watched command changes.
fn expected(b: &Bench, kind: Kind, run: usize) -> BTreeSet<String> {
    match kind {
        Kind::Sed => sed_picks(b)
            .into_iter()
            .filter(|(_, has_fn)| *has_fn)
            .map(|(p, _)| p)
            .collect(),
        Kind::Checkout => checkout::picks(&b.g.files)
            .iter()
            .map(|f| f.rel.clone())
            .collect(),
        Kind::Codegen => (0..CODEGEN_DIRS)
            .flat_map(|d| (0..CODEGEN_PER_DIR).map(move |f| format!("gen{run}/m{d:02}/f{f:03}.rs")))
            .collect(),
        Kind::Npm => BTreeSet::new(),
        Kind::Commit => BTreeSet::from(["committed.txt".to_string()]),
    }
}

/// Every 10th file of the sorted list from the 3rd, 2,000 of them (W2's), with whether each
/// contains the pattern (those change in every run).
pub fn sed_picks(b: &Bench) -> Vec<(String, bool)> {
    b.g.files
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 == 2)
        .map(|(_, f)| (f.rel.clone(), f.has_fn))
        .take(SED_FILES)
        .collect()
}

/// Writes sed's file list (NUL-separated) into the tree's `.git/`.
pub fn write_sed_list(b: &Bench) -> Result<(), String> {
    let mut list = Vec::new();
    for (p, _) in sed_picks(b) {
        list.extend_from_slice(p.as_bytes());
        list.push(0);
    }
    let f = b.tree.join(".git/bench-sed");
    fs::write(&f, &list).map_err(|e| format!("write {}: {e}", f.display()))
}

/// `None` when the marker listed exactly `expected` (directories aside), else what differs.
fn compare(turn: &Value, expected: &BTreeSet<String>) -> Option<String> {
    let changes = turn
        .get("changes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let listed: BTreeSet<String> = changes
        .iter()
        .filter(|c| c.get("kind").and_then(Value::as_str) != Some("dir"))
        .filter_map(|c| c.get("path").and_then(Value::as_str).map(str::to_string))
        .collect();
    if &listed == expected {
        return None;
    }
    let missing = expected.difference(&listed).count();
    let extra: Vec<&String> = listed.difference(expected).take(3).collect();
    Some(format!(
        "end marker listed {} files, expected {}: {missing} missing, unexpected {extra:?}",
        listed.len(),
        expected.len()
    ))
}
