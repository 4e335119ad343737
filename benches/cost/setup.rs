//! One tree, a generated one made a git repo (branch `B` changes the checkout's files), and
//! who watches it while a command runs: the release daemon, a bare inotify watcher
//! (`bare`), or nothing. Separate copies of a tree differ by more than the 5 % the goal
//! allows on this machine's disk (their files lie elsewhere on it), so every side runs in the
//! same one: the daemon is stopped for the other two and started again before its own run
//! (untimed; it records what changed meanwhile as changed while stopped, and is let settle).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::bare;
use super::opts::Opts;
use crate::common::checkout;
use crate::common::daemon::{self, Daemon};
use crate::common::gentree::{self, GenTree};
use crate::common::shadow::Shadow;
use crate::common::stats::{fmt_bytes, fmt_dur, fmt_int};

/// Who watches the tree while a command runs.
#[derive(Clone, Copy, PartialEq)]
pub enum Side {
    Filewatchd,
    Bare,
    Plain,
}

impl Side {
    pub const ALL: [Side; 3] = [Side::Filewatchd, Side::Bare, Side::Plain];
}

pub struct Bench {
    /// Removed at the end unless `--dir` named it.
    _temp: Option<tempfile::TempDir>,
    base: PathBuf,
    pub tree: PathBuf,
    /// Running while the daemon's side runs.
    daemon: Option<Daemon>,
    starts: usize,
    bare: Option<bare::Watcher>,
    /// An opencode-style shadow git of the tree: what an agent without filewatchd waits for
    /// after each command instead of the end marker.
    pub shadow: Shadow,
    pub g: GenTree,
    pub tck: u64,
    pub bin: PathBuf,
}

/// t20k's shape (benches/scenarios): mean 15,000 B, seed 1.
const MEAN: usize = 15_000;
const SEED: u64 = 1;
/// A (re)started daemon has settled once its CPU time stood still this long.
const SETTLED: Duration = Duration::from_millis(300);

impl Bench {
    pub fn prepare(o: &Opts) -> Result<Bench, String> {
        let (temp, base) = match &o.dir {
            Some(d) => (None, d.clone()),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("fw-cost-")
                    .tempdir_in("/tmp")
                    .map_err(|e| format!("temp dir: {e}"))?;
                let p = t.path().to_path_buf();
                (Some(t), p)
            }
        };
        let tree = base.join("tree");
        let t = Instant::now();
        let g = gentree::generate(&tree, o.files, MEAN, SEED).map_err(|e| format!("generate: {e}"))?;
        eprintln!(
            "generated {} files in {} dirs ({}) in {}",
            fmt_int(g.files.len() as u64),
            fmt_int(g.dirs as u64),
            fmt_bytes(g.bytes),
            fmt_dur(t.elapsed())
        );
        make_repo(&tree, &g)?;
        let shadow = Shadow::init(&base.join("shadow.git"), &tree)?;
        shadow.snapshot()?;
        let mut bench = Bench {
            _temp: temp,
            base,
            tree,
            daemon: None,
            starts: 0,
            bare: None,
            shadow,
            g,
            tck: daemon::clk_tck(),
            bin: o.bin.clone(),
        };
        bench.watched()?;
        Ok(bench)
    }

    /// The daemon, started (and let settle) if it was stopped; the bare watcher stopped.
    pub fn watched(&mut self) -> Result<&Daemon, String> {
        self.bare = None;
        if self.daemon.is_none() {
            let log = self.base.join(format!("daemon-{}.log", self.starts));
            let state = self.base.join("state");
            let (daemon, ready) =
                Daemon::spawn(&self.bin, &self.tree, &state, &log, Duration::from_secs(600))?;
            let what = if self.starts == 0 {
                "first index"
            } else {
                "restart"
            };
            eprintln!("daemon ready after {} ({what})", fmt_dur(ready));
            self.starts += 1;
            daemon.sync()?;
            settle(&daemon);
            self.daemon = Some(daemon);
        }
        self.daemon()
    }

    /// The daemon `watched` started.
    pub fn daemon(&self) -> Result<&Daemon, String> {
        self.daemon
            .as_ref()
            .ok_or_else(|| "the daemon is not running".to_string())
    }

    /// The daemon stopped, and the bare watcher armed for `Side::Bare` (stopped otherwise).
    pub fn unwatched(&mut self, side: Side) -> Result<(), String> {
        self.stop_daemon();
        self.bare = None;
        if side == Side::Bare {
            self.bare = Some(bare::start(&self.tree)?);
        }
        Ok(())
    }

    fn stop_daemon(&mut self) {
        if let Some(mut daemon) = self.daemon.take() {
            let how = daemon.stop();
            if !how.starts_with("stopped by SIGTERM") {
                eprintln!("daemon: {how}");
            }
        }
    }

    pub fn finish(&mut self) {
        self.bare = None;
        self.stop_daemon();
    }
}

/// Waits (at most a minute) until the daemon's CPU time stands still for `SETTLED`: what a
/// start leaves to do after it answers (the integrity check, a checkpoint) is done.
fn settle(daemon: &Daemon) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ticks = daemon.sample().ticks;
    while Instant::now() < deadline {
        std::thread::sleep(SETTLED);
        let now = daemon.sample().ticks;
        if now == ticks {
            return;
        }
        ticks = now;
    }
}

/// `git init`, everything committed on `main` (`.gitignore` names `node_modules/`), and branch
/// `B` with `s/fn/fq/` on the checkout workload's files; the work tree is left on `main`.
fn make_repo(tree: &Path, g: &GenTree) -> Result<(), String> {
    std::fs::write(tree.join(".gitignore"), "node_modules/\n")
        .map_err(|e| format!("write .gitignore: {e}"))?;
    // No automatic gc: one in the background would pack objects while a command runs.
    let git = "git -c user.name=bench -c user.email=bench@localhost -c core.autocrlf=false \
               -c gc.auto=0 -c maintenance.auto=false";
    sh(
        tree,
        &format!("git init -q -b main && {git} add -A && {git} commit -q -m base"),
    )?;
    let picks = checkout::picks(&g.files);
    let mut list = Vec::new();
    for f in &picks {
        list.extend_from_slice(f.rel.as_bytes());
        list.push(0);
    }
    let list_file = tree.join(".git/bench-picks");
    std::fs::write(&list_file, list).map_err(|e| format!("write picks: {e}"))?;
    sh(
        tree,
        &format!(
            "git checkout -q -b B && xargs -0 sed -i -e 's/fn/fq/' -- < .git/bench-picks \
             && {git} commit -q -a -m B && git checkout -q main"
        ),
    )?;
    eprintln!("repo made: branch B changes {} files", picks.len());
    Ok(())
}

pub fn sh(dir: &Path, script: &str) -> Result<(), String> {
    let st = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .map_err(|e| format!("sh -c {script:?}: {e}"))?;
    if !st.success() {
        return Err(format!("sh -c {script:?}: {st}"));
    }
    Ok(())
}
