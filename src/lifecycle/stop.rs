//! Stopping a workspace's daemon. First through its API (`POST /v1/stop`, with the token of
//! its state directory, sent only to a server of this user's: `client`), on every platform;
//! the daemon's own shutdown then finishes what it was recording and closes the database, as
//! on `SIGTERM`. Where the API does not answer (a daemon still indexing has none yet, a
//! wedged one) or is an older daemon's without that route, `SIGTERM` to its pid, once it has
//! proved that pid is this workspace's filewatchd and this user's (it holds the tree's lock,
//! runs as this uid, is a filewatchd, and started when the daemon recorded:
//! `instance::process`); a build that cannot prove it (no `/proc`: the portable one) sends
//! nothing and says what to do instead. Then it waits (with a deadline) until the daemon has
//! exited and let go of the workspace. A daemon still indexing just ends, and its next start
//! indexes again.

use std::time::{Duration, Instant};

use anyhow::bail;

use super::{Located, Running, probe};
use crate::client::{ApiFailure, Client, NoDaemon};
use crate::instance::{self, process};
use crate::state;
use crate::wire::error::ErrorCode;
use crate::wire::status::Stopping;

/// How long `stop` waits for the daemon to exit.
pub const STOP_DEADLINE: Duration = Duration::from_secs(30);
/// How long `stop` waits for the daemon to answer `POST /v1/stop` (it answers at once).
const ASK_TIMEOUT: Duration = Duration::from_secs(5);

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
    let Some(pid) = target(loc, &running)? else {
        return Ok(Stopped::NotRunning);
    };
    check_holds(loc, pid)?;
    let client = api_of(loc, &running, pid);
    let unanswered = match &client {
        Ok(client) => match ask(client) {
            Ok(()) => None,
            Err(Unasked::Refused(err)) => return Err(err),
            Err(Unasked::NoAnswer(why)) => Some(why),
        },
        Err(why) => Some(why.clone()),
    };
    if let Some(why) = unanswered {
        signal(loc, pid, &running, &why)?;
    }
    wait_gone(loc, pid, client.as_ref().ok())
}

/// The pid of the daemon to stop; `None` when none runs.
fn target(loc: &Located, running: &Running) -> anyhow::Result<Option<u32>> {
    match running {
        Running::Stopped => Ok(None),
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
        other => Ok(Some(other.pid().unwrap_or_default())),
    }
}

/// The daemon's API, when `daemon.json` names `pid`; else why there is none to ask.
fn api_of(loc: &Located, running: &Running, pid: u32) -> Result<Client, String> {
    match running {
        Running::Answering(info) | Running::Silent(info) if info.pid == pid => {
            Client::at(&loc.state_dir, ASK_TIMEOUT).map_err(|err| format!("{err:#}"))
        }
        Running::Indexing { .. } => Err("it is still indexing and answers no API until it is done".into()),
        _ => Err("it has not written where its API listens".into()),
    }
}

/// Why the API did not take the request.
enum Unasked {
    /// It answered with an error: said as is, and nothing is signalled.
    Refused(anyhow::Error),
    /// It did not answer, or is an older daemon without the route.
    NoAnswer(String),
}

/// `POST /v1/stop`: the daemon has said (202) that it is shutting down.
fn ask(client: &Client) -> Result<(), Unasked> {
    let Err(err) = client.post_as::<Stopping>("/v1/stop", &serde_json::json!({})) else {
        return Ok(());
    };
    match err.downcast::<ApiFailure>() {
        // A daemon older than this client has no such route: it is stopped as before.
        Ok(failure)
            if matches!(
                failure.code,
                Some(ErrorCode::NotFound | ErrorCode::MethodNotAllowed)
            ) =>
        {
            Err(Unasked::NoAnswer(format!("it has no stop endpoint: {failure}")))
        }
        Ok(failure) => Err(Unasked::Refused(failure.into())),
        Err(err) if err.is::<NoDaemon>() => Err(Unasked::NoAnswer(format!(
            "nothing answered at {} within {} s",
            client.url(),
            ASK_TIMEOUT.as_secs()
        ))),
        Err(err) => Err(Unasked::NoAnswer(format!("{err:#}"))),
    }
}

/// `SIGTERM` to `pid`, once proved to be the daemon (`process::terminate`); where no pid can
/// be proved (no `/proc`), nothing is sent and the error says what to do instead.
fn signal(loc: &Located, pid: u32, running: &Running, why: &str) -> anyhow::Result<()> {
    let root = loc.root.display();
    if !process::CAN_PROVE {
        // Suggested, not sent: the user sees with `ps` that the pid is the daemon.
        let then = match running {
            Running::Indexing { .. } => format!(
                "run `filewatchd stop` again once `filewatchd status` shows it watching, or check with `ps -p {pid}` that it is filewatchd and end it now with `kill {pid}` (its next start indexes again)"
            ),
            _ => format!(
                "check with `ps -p {pid}` that it is filewatchd, then end it with `kill {pid}` (`kill -9 {pid}` if it is wedged); nothing recorded is lost"
            ),
        };
        bail!(
            "the filewatchd for {root} (pid {pid}) was not asked to stop over its API ({why}), and this build cannot prove from outside that pid {pid} is that daemon (it has no /proc), so it sends no signal: {then}"
        );
    }
    let started = recorded_start(loc, pid, running);
    if let Err(why) = process::terminate(pid, started) {
        bail!("not stopping pid {pid} for {root}: {why}. Nothing was signalled");
    }
    Ok(())
}

/// Polls until the daemon `pid` has exited and let go of the workspace, under a deadline.
fn wait_gone(loc: &Located, pid: u32, api: Option<&Client>) -> anyhow::Result<Stopped> {
    let until = Instant::now() + STOP_DEADLINE;
    while !let_go(loc, pid, api) {
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

/// Whether the daemon `pid` has let go of the workspace (its tree lock; where the tree locks
/// cannot be used, its state directory's) and exited. Where the OS cannot tell an exited
/// process from a zombie nobody reaped (no `/proc`), the sign of its exit is its API no longer
/// answering once its locks are free: the kernel frees them as the process ends.
fn let_go(loc: &Located, pid: u32, api: Option<&Client>) -> bool {
    let held = if instance::locks_usable(&loc.root) {
        holds(loc, pid)
    } else {
        state::is_held(&loc.state_dir)
    };
    if held {
        return false;
    }
    match process::has_exited(pid) {
        Some(exited) => exited,
        None => api.is_none_or(|api| api.get_as::<serde::de::IgnoredAny>("/v1/status").is_err()),
    }
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
