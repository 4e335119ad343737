//! Stopping a workspace's daemon: `SIGTERM` to its pid, once it has proved that pid is this
//! workspace's filewatchd and this user's (it holds the tree's lock, runs as this uid, is a
//! filewatchd, and started when the daemon recorded: `instance::process`), then waiting (with a deadline) until it has exited and let go of
//! the workspace. The daemon's own shutdown finishes what it was recording and closes the
//! database; a daemon still indexing just ends, and its next start indexes again.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;

use super::{Located, Running, probe};
use crate::instance::{self, process};

/// How long `stop` waits for the daemon to exit.
pub const STOP_DEADLINE: Duration = Duration::from_secs(30);

/// What `stop` did.
#[derive(Debug)]
pub enum Stopped {
    NotRunning,
    /// The daemon with this pid has exited.
    Exited(u32),
}

/// Stops the daemon of `loc` and waits until it has exited.
pub fn stop(loc: &Located) -> anyhow::Result<Stopped> {
    let running = probe(loc);
    let pid = match &running {
        Running::Stopped => return Ok(Stopped::NotRunning),
        Running::Elsewhere(other) => bail!(
            "the filewatchd watching {} (pid {}) keeps its state in {}, not {}: stop it with `filewatchd stop --state-dir {}`",
            loc.root.display(),
            other.pid,
            other.state_dir.display(),
            loc.state_dir.display(),
            other.state_dir.display()
        ),
        Running::Indexing { pid: None, .. } => bail!(
            "the filewatchd for {} is still starting and has not said its pid yet: try again in a moment",
            loc.root.display()
        ),
        other => other.pid().unwrap_or_default(),
    };
    check_holds(loc, pid)?;
    let started = recorded_start(loc, pid, &running);
    if let Err(why) = process::terminate(pid, started) {
        bail!(
            "not stopping pid {pid} for {}: {why}. Nothing was signalled",
            loc.root.display()
        );
    }
    let until = Instant::now() + STOP_DEADLINE;
    // Exited, and the workspace let go of.
    while !gone(pid) || holds(loc, pid) {
        if Instant::now() >= until {
            bail!(
                "the filewatchd for {} (pid {pid}) has not exited after {} s (a large rollback may be finishing): `kill -9 {pid}` ends it at once, and nothing recorded is lost",
                loc.root.display(),
                STOP_DEADLINE.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20)); // polling the process under a deadline
    }
    Ok(Stopped::Exited(pid))
}

/// Where the tree locks can be used, `pid` must hold this workspace's tree: a `daemon.json`
/// left behind must never make `stop` signal a stranger (`process::terminate` proves the rest).
fn check_holds(loc: &Located, pid: u32) -> anyhow::Result<()> {
    if holds(loc, pid) || !instance::locks_usable(&loc.root) {
        return Ok(());
    }
    bail!(
        "pid {pid} does not hold {} (the daemon it names may have exited): nothing was stopped",
        loc.root.display()
    )
}

/// When the daemon `pid` said it started: in its tree lock's note, else in what its state
/// directory holds (`daemon.json`, `indexing.json`).
fn recorded_start(loc: &Located, pid: u32, running: &Running) -> Option<u64> {
    let noted = holder(loc).filter(|h| h.pid == pid).and_then(|h| h.started);
    let written = match running {
        Running::Answering(info) | Running::Silent(info) if info.pid == pid => info.started,
        Running::Indexing {
            progress: Some(p), ..
        } if p.pid == pid => p.started,
        _ => None,
    };
    noted.or(written)
}

/// Whether `pid` holds the tree lock of `loc` (with `loc`'s state directory).
fn holds(loc: &Located, pid: u32) -> bool {
    holder(loc).is_some_and(|h| h.pid == pid)
}

/// The daemon holding the tree lock of `loc.root` for `loc.state_dir`, or (its root removed
/// or replaced) the one whose tree lock's note names `loc.state_dir`.
fn holder(loc: &Located) -> Option<instance::Holder> {
    instance::holder_of(&loc.root)
        .filter(|h| h.state_dir == loc.state_dir)
        .or_else(|| instance::holder_for_state(&loc.state_dir))
}

/// Whether `pid` has exited: no such process, or a zombie nobody has reaped yet whose threads
/// have all ended (the main thread of a multi-threaded process is a zombie before the others
/// have let go of its files, and with them its locks).
fn gone(pid: u32) -> bool {
    let status = Path::new("/proc").join(pid.to_string()).join("status");
    let Ok(text) = std::fs::read_to_string(status) else {
        return true;
    };
    let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    let zombie = field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'));
    zombie
        && field("Threads:")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n <= 1)
}
