//! The replay tier (G1-G3, G5 on histories nobody wrote for filewatchd): every commit of a real
//! project's history becomes a turn (`git checkout --force <next>` between the markers, as an
//! agent's shell would), each listing must equal `git diff --name-status --no-renames`, a
//! verification pass every 25 turns must find nothing, and then undos, redos, a rollback to
//! the start and its redo must each leave exactly git's tree for the matching commit (blob ids,
//! modes, symlink targets, the set of directories), and HEAD at that commit: the checkout
//! moves HEAD (detached) and the index, which are part of the turn and go back with its files
//! (docs/rollback.md, "Git").
//!
//! Two histories: fd's (`../shared/data/fd.bundle`, or `FILEWATCHD_REPLAY_BUNDLE`) and this
//! project's own (the checkout the test runs in, cloned). The commits are taken oldest first,
//! parents before children (`git rev-list --reverse --topo-order`: every commit, merged
//! branches included, so one step may jump from a branch's tip to the next line of history;
//! each turn is compared with git's diff from the commit checked out before it). By default
//! the first 400 commits of each (`FILEWATCHD_REPLAY_COMMITS=N` for another window), with 300
//! undos and 100 redos; `FILEWATCHD_REPLAY_FULL=1` replays every commit, undoes every turn and
//! redoes 300. A history
//! that is not there (no bundle, no `.git`, a shallow clone) is skipped with a message, except
//! in CI (`CI=true`), where it fails. `FILEWATCHD_REPLAY_SHOW=N` prints the first N failures
//! of each kind as they are found (15 by default; all are counted).
//! The figures printed at the end (end marker and undo latencies) are measurements, not
//! assertions.

/// Git as the reference.
mod git;
/// A turn's listing in git's terms.
mod listing;
/// One replay's phases.
mod run;
/// The workspace's tree in git's terms.
mod tree;

use std::path::{Path, PathBuf};

use crate::common::{self, machine};

use run::{Plan, replay};

// Each replay has the machine to itself (`machine::exclusive()`, taken first): its figures are
// its own, and the one on LazyFS keeps every core busy, which would starve other tests.

#[test]
fn fd_history_replays_as_turns_and_undoes_to_git_trees() {
    let _alone = machine::exclusive();
    let Some(bundle) = available(fd_bundle()) else {
        return;
    };
    replay(&bundle, "HEAD", plan("fd"));
}

/// fd's history on LazyFS (FUSE), workspace and state dir on the mount, with every core kept
/// busy as an agent's build would: `git checkout` and undos remove files the daemon may be
/// reading, and libfuse keeps those as `.fuse_hidden…` stand-ins until they are closed (a reader
/// starved at idle priority held them for seconds); a rename that replaces cannot be an
/// exchange. A shorter window.
#[test]
fn fd_history_replays_on_fuse() {
    let _alone = machine::exclusive();
    let Some(bundle) = available(fd_bundle()) else {
        return;
    };
    let lazy = match common::LazyFs::mount() {
        Ok(lazy) => lazy,
        Err(why) => return common::skip(&format!("LazyFS cannot run here: {why}")),
    };
    let ws = common::Workspace::at(&lazy.mnt.join("ws"), &lazy.mnt.join("state"));
    let mut plan = plan("fd on LazyFS");
    plan.commits = plan.commits.min(150);
    plan.undos = plan.undos.min(100);
    plan.redos = plan.redos.min(30);
    let _busy = BusyCores::start();
    run::replay_in(ws, &bundle, "HEAD", plan);
}

/// A thread per core spinning at normal priority until dropped: a machine busy with a build.
struct BusyCores {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyCores {
    fn start() -> BusyCores {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        BusyCores { stop, threads }
    }
}

impl Drop for BusyCores {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            thread.join().ok();
        }
    }
}

#[test]
fn own_history_replays_as_turns_and_undoes_to_git_trees() {
    let _alone = machine::exclusive();
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(head) = available(git::head_of_full_history(checkout)) else {
        return;
    };
    replay(checkout, &head, plan("filewatchd"));
}

/// The fd bundle: `FILEWATCHD_REPLAY_BUNDLE`, else `../shared/data/fd.bundle` beside the checkout.
fn fd_bundle() -> Result<PathBuf, String> {
    let bundle = match std::env::var_os("FILEWATCHD_REPLAY_BUNDLE") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/fd.bundle"),
    };
    match bundle.canonicalize() {
        Ok(path) => Ok(path),
        Err(e) => Err(format!(
            "no fd bundle at {} ({e}); set FILEWATCHD_REPLAY_BUNDLE",
            bundle.display()
        )),
    }
}

/// What to replay, or `None` after saying why not; in CI a missing history is a failure.
fn available<T>(found: Result<T, String>) -> Option<T> {
    match found {
        Ok(found) => Some(found),
        Err(why) => {
            common::skip(&why);
            None
        }
    }
}

/// The window: 400 commits (`FILEWATCHD_REPLAY_COMMITS`), 300 undos and 100 redos; or, with
/// `FILEWATCHD_REPLAY_FULL=1`, every commit and every undo, and 300 redos.
fn plan(name: &'static str) -> Plan {
    if std::env::var("FILEWATCHD_REPLAY_FULL").is_ok_and(|v| v == "1") {
        return Plan {
            name,
            commits: usize::MAX,
            undos: usize::MAX,
            redos: 300,
        };
    }
    let commits = std::env::var("FILEWATCHD_REPLAY_COMMITS").map_or(400, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("FILEWATCHD_REPLAY_COMMITS={v:?} is not a number of commits"))
    });
    Plan {
        name,
        commits,
        undos: 300,
        redos: 100,
    }
}
