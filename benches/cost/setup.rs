//! The three copies: a generated tree made a git repo (branch `B` changes the checkout's
//! files), copied byte for byte; the release daemon runs on the first ("watched"), a bare
//! inotify watcher (`bare`) on the second, nothing on the third ("plain").

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::opts::Opts;
use crate::common::checkout;
use crate::common::daemon::{self, Daemon};
use crate::common::gentree::{self, GenTree};
use crate::common::shadow::Shadow;
use crate::common::stats::{fmt_bytes, fmt_dur, fmt_int};

/// Who watches the copy a command runs in.
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
    pub watched: PathBuf,
    pub bare: PathBuf,
    pub plain: PathBuf,
    pub daemon: Daemon,
    /// An opencode-style shadow git of the unwatched copy: what an agent without filewatchd
    /// waits for after each command instead of the end marker.
    pub shadow: Shadow,
    pub g: GenTree,
    pub tck: u64,
    pub bin: PathBuf,
}

/// t20k's shape (benches/scenarios): mean 15,000 B, seed 1.
const MEAN: usize = 15_000;
const SEED: u64 = 1;

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
        let watched = base.join("watched");
        let bare = base.join("bare");
        let plain = base.join("plain");
        let t = Instant::now();
        let g = gentree::generate(&watched, o.files, MEAN, SEED).map_err(|e| format!("generate: {e}"))?;
        eprintln!(
            "generated {} files in {} dirs ({}) in {}",
            fmt_int(g.files.len() as u64),
            fmt_int(g.dirs as u64),
            fmt_bytes(g.bytes),
            fmt_dur(t.elapsed())
        );
        make_repo(&watched, &g)?;
        for copy in [&bare, &plain] {
            sh(&base, &format!("cp -a {} {}", quote(&watched), quote(copy)))?;
        }
        let armed = super::bare::start(&bare)?;
        eprintln!(
            "bare inotify watcher: {} directories armed",
            fmt_int(armed as u64)
        );
        let shadow = Shadow::init(&base.join("shadow.git"), &plain)?;
        shadow.snapshot()?;
        let state = base.join("state");
        let log = base.join("daemon.log");
        let (daemon, ready) = Daemon::spawn(&o.bin, &watched, &state, &log, Duration::from_secs(600))?;
        eprintln!("daemon ready after {} (first index)", fmt_dur(ready));
        Ok(Bench {
            _temp: temp,
            watched,
            bare,
            plain,
            daemon,
            shadow,
            g,
            tck: daemon::clk_tck(),
            bin: o.bin.clone(),
        })
    }

    /// The copy a side runs in.
    pub fn tree(&self, side: Side) -> &Path {
        match side {
            Side::Filewatchd => &self.watched,
            Side::Bare => &self.bare,
            Side::Plain => &self.plain,
        }
    }

    pub fn finish(&mut self) {
        let how = self.daemon.stop();
        eprintln!("daemon stopped: {how}");
    }
}

/// `git init`, everything committed on `main` (`.gitignore` names `node_modules/`), and branch
/// `B` with `s/fn/fq/` on the checkout workload's files; the work tree is left on `main`.
fn make_repo(tree: &Path, g: &GenTree) -> Result<(), String> {
    std::fs::write(tree.join(".gitignore"), "node_modules/\n")
        .map_err(|e| format!("write .gitignore: {e}"))?;
    // No automatic gc: one in the background would pack objects while `cp -a` copies them.
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

pub fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}
