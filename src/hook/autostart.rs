//! A hook reaches its workspace's daemon, and starts one when none runs (docs/agents.md), within
//! the hook's budget. While the daemon is not answering yet (starting, or running its first
//! index) the hook's markers go into the queue in its state directory (`crate::queue`), and
//! the daemon applies them in order once its index is ready, each at its place among the
//! writes it saw meanwhile. A session's start starts the daemon too, without waiting for it
//! (`start_early`), so the first index runs while the user types; a turn's end or a session's
//! end never does (a user who stopped the daemon stopped it).
//!
//! Never started: with `FILEWATCHD_AUTOSTART=0` (or `false`, `no`, `off`), with
//! `autostart = false` in the workspace's `.filewatchd.toml`, for a root that is the home
//! directory, `/` or holds the home directory (`lifecycle::guard`), or for one that is not a
//! project of the user's (`lifecycle::is_users_project`: a payload's `cwd` of `/etc`).

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Instant;

use super::events::{Action, Agent, HookEvent};
use crate::client::Client;
use crate::config::Config;
use crate::lifecycle::spawn::{self, Launch, StartLock, Waited};
use crate::lifecycle::{self, Located, Running, guard};
use crate::queue::{self, Marker};

/// The environment variable that turns autostart off.
pub const AUTOSTART_ENV: &str = "FILEWATCHD_AUTOSTART";
/// How often `answering` looks again at a daemon that is starting.
const POLL: std::time::Duration = std::time::Duration::from_millis(50);
/// How long one request of `answering`'s client may take (a large turn's diffs).
const REQUEST_TIME: std::time::Duration = std::time::Duration::from_secs(120);

/// How the hook's markers reach the daemon.
pub enum Reached {
    /// Over HTTP, now.
    Answering(Client),
    /// Through the queue; `note` is the one line the hook prints, if any.
    Queued { note: Option<String> },
}

/// Finds the daemon of the event's workspace, or queues the markers for one that is starting
/// (and starts it when none runs and the event opens a turn), all before `until`.
pub fn reach(
    agent: Agent,
    event: &HookEvent,
    state_dir: Option<&Path>,
    until: Instant,
) -> Result<Reached, String> {
    let timeout = until.saturating_duration_since(Instant::now());
    if env_points_elsewhere() {
        let client = Client::discover_within(event.cwd.as_deref(), state_dir, timeout)
            .map_err(|e| format!("{e:#}"))?;
        return Ok(Reached::Answering(client));
    }
    let loc = lifecycle::locate(None, state_dir, event.cwd.as_deref()).map_err(|e| format!("{e:#}"))?;
    if let Some(reached) = reach_running(&loc, agent, event, until)? {
        return Ok(reached);
    }
    if !matches!(
        event.action,
        Action::StartTurn { .. } | Action::CompleteAndContinue { .. }
    ) {
        return Err(format!(
            "no filewatchd is running for {}: start it with `filewatchd start`",
            loc.root.display()
        ));
    }
    may_start(&loc)?;
    start_and_queue(&loc, agent, event, until)
}

/// The daemon of the event's workspace when one answers now; `None` when none runs or it is
/// still starting (a tool call is never queued, and never starts a daemon).
pub fn reach_answering(
    event: &HookEvent,
    state_dir: Option<&Path>,
    until: Instant,
) -> Result<Option<Client>, String> {
    let timeout = until.saturating_duration_since(Instant::now());
    if env_points_elsewhere() {
        let client = Client::discover_within(event.cwd.as_deref(), state_dir, timeout);
        return client.map(Some).map_err(|e| format!("{e:#}"));
    }
    let loc = lifecycle::locate(None, state_dir, event.cwd.as_deref()).map_err(|e| format!("{e:#}"))?;
    match holder_of(&loc) {
        (loc, Running::Answering(_)) => Client::at(&loc.state_dir, timeout)
            .map(Some)
            .map_err(|e| format!("{e:#}")),
        _ => Ok(None),
    }
}

/// The state directory of the daemon that runs for the event's workspace: where the hook
/// records its agent process (`agents`). `None` when the environment names a daemon elsewhere.
pub fn state_dir_of(event: &HookEvent, state_dir: Option<&Path>) -> Option<PathBuf> {
    if env_points_elsewhere() {
        return None;
    }
    let loc = lifecycle::locate(None, state_dir, event.cwd.as_deref()).ok()?;
    Some(holder_of(&loc).0.state_dir)
}

/// `FILEWATCHD_URL` or `FILEWATCHD_TOKEN` names a daemon: that one, found as the CLI finds it.
pub fn env_points_elsewhere() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    set("FILEWATCHD_URL") || set("FILEWATCHD_TOKEN")
}

/// A session started: starts the daemon of its workspace when none runs (the same refusals
/// as a prompt's), and returns as soon as the daemon holds the workspace, before its first
/// index is done. The line to print, if any.
pub fn start_early(
    event: &HookEvent,
    state_dir: Option<&Path>,
    until: Instant,
) -> Result<Option<String>, String> {
    if env_points_elsewhere() {
        return Ok(None);
    }
    let loc = lifecycle::locate(None, state_dir, event.cwd.as_deref()).map_err(|e| format!("{e:#}"))?;
    if !matches!(holder_of(&loc).1, Running::Stopped) {
        return Ok(None);
    }
    may_start(&loc)?;
    let fail = |e: anyhow::Error| format!("cannot start filewatchd for {}: {e:#}", loc.root.display());
    let Ok(_lock) = StartLock::take(&loc, until) else {
        return Ok(None); // another hook or `start` is starting it
    };
    if !matches!(holder_of(&loc).1, Running::Stopped) {
        return Ok(None);
    }
    let mut spawned = spawn::spawn(&loc, &Launch::default()).map_err(fail)?;
    let (root, pid, log) = (loc.root.display(), spawned.pid(), spawned.log.clone());
    let log = log.display();
    match spawned.wait(&loc, until, |running| !matches!(running, Running::Stopped)) {
        Waited::Exited { status, log_tail } => Err(did_not_start(&loc, &status, &log_tail, &log)),
        _ => Ok(Some(format!(
            "started filewatchd for {root} (pid {pid}, log {log}): it indexes the workspace while you type"
        ))),
    }
}

/// For a client that needs answers, not a queue (`filewatchd mcp`): the daemon of the
/// workspace `loc` names, started as a hook starts it when none runs (the same refusals), and
/// waited for until it answers or `until` passes. Also the state directory it keeps.
pub fn answering(loc: &Located, until: Instant) -> Result<(Client, PathBuf), String> {
    let (theirs, running) = holder_of(loc);
    if let Running::Answering(_) = running {
        return client_at(&theirs);
    }
    if !matches!(running, Running::Stopped) {
        return wait_until_answering(&theirs, until);
    }
    may_start(loc)?;
    let fail = |e: anyhow::Error| format!("cannot start filewatchd for {}: {e:#}", loc.root.display());
    let lock = StartLock::take(loc, until).map_err(fail)?;
    if !matches!(holder_of(loc).1, Running::Stopped) {
        drop(lock);
        return wait_until_answering(loc, until);
    }
    let mut spawned = spawn::spawn(loc, &Launch::default()).map_err(fail)?;
    let log = spawned.log.display().to_string();
    match spawned.wait(loc, until, |r| matches!(r, Running::Answering(_))) {
        Waited::Ready(_) => client_at(loc),
        Waited::Pending => Err(format!(
            "started filewatchd for {} (pid {}, log {log}); it is still indexing the workspace: try again once `filewatchd status` says it is done",
            loc.root.display(),
            spawned.pid()
        )),
        Waited::Exited { status, log_tail } => Err(did_not_start(loc, &status, &log_tail, &log)),
    }
}

/// The daemon it started exited: the last line of its log says why.
fn did_not_start(loc: &Located, status: &ExitStatus, log_tail: &[String], log: &impl Display) -> String {
    let why = log_tail.last().cloned().unwrap_or_else(|| status.to_string());
    format!(
        "filewatchd for {} did not start: {why} (log {log})",
        loc.root.display()
    )
}

fn client_at(loc: &Located) -> Result<(Client, PathBuf), String> {
    Client::at(&loc.state_dir, REQUEST_TIME)
        .map(|client| (client, loc.state_dir.clone()))
        .map_err(|e| format!("{e:#}"))
}

/// A daemon just starting or indexing: polled (it writes `daemon.json` once it listens).
fn wait_until_answering(loc: &Located, until: Instant) -> Result<(Client, PathBuf), String> {
    loop {
        match lifecycle::probe(loc) {
            Running::Answering(_) => return client_at(loc),
            Running::Stopped => {
                return Err(format!(
                    "the filewatchd for {} stopped while starting",
                    loc.root.display()
                ));
            }
            running if Instant::now() >= until => {
                let pid = running.pid().map_or_else(String::new, |p| format!(" (pid {p})"));
                return Err(format!(
                    "the filewatchd for {}{pid} is not answering yet (still indexing?): `filewatchd status` shows its progress",
                    loc.root.display()
                ));
            }
            _ => std::thread::sleep(POLL), // polling the daemon's state under a deadline
        }
    }
}

/// What runs for `loc`: a daemon that keeps its state elsewhere (`--state-dir`) but watches
/// this very tree is the one, with its own state directory.
fn holder_of(loc: &Located) -> (Located, Running) {
    match lifecycle::probe_quietly(loc) {
        Running::Elsewhere(holder) => {
            let theirs = Located {
                root: loc.root.clone(),
                state_dir: holder.state_dir,
                explicit_state: true,
                passed_over: None,
            };
            let running = lifecycle::probe_quietly(&theirs);
            (theirs, running)
        }
        running => (loc.clone(), running),
    }
}

/// The daemon that runs for `loc`, answering or about to; `None` when none runs. A daemon
/// that keeps its state elsewhere (`--state-dir`) but watches this very tree is the one.
fn reach_running(
    loc: &Located,
    agent: Agent,
    event: &HookEvent,
    until: Instant,
) -> Result<Option<Reached>, String> {
    let (loc, running) = holder_of(loc);
    let timeout = until.saturating_duration_since(Instant::now());
    match running {
        Running::Answering(_) => Client::at(&loc.state_dir, timeout)
            .map(|client| Some(Reached::Answering(client)))
            .map_err(|e| format!("{e:#}")),
        Running::Indexing { .. } => {
            queue_markers(&loc, agent, event)?;
            Ok(Some(Reached::Queued { note: None }))
        }
        Running::Silent(info) => Err(format!(
            "the filewatchd for {} (pid {}, {}) is not answering",
            loc.root.display(),
            info.pid,
            info.url
        )),
        Running::Elsewhere(holder) => Err(format!(
            "the filewatchd watching {} changed while the hook looked (now pid {})",
            loc.root.display(),
            holder.pid
        )),
        Running::Stopped => Ok(None),
    }
}

/// Whether a hook may start a daemon for `loc`; the refusal says why and what to do.
fn may_start(loc: &Located) -> Result<(), String> {
    let root = loc.root.display();
    if let Some(risk) = guard::risk(&loc.root) {
        return Err(format!(
            "no filewatchd is running for {root}, and hooks never start one there ({risk}): start one for your project with `filewatchd start --root DIR`"
        ));
    }
    if std::env::var(AUTOSTART_ENV).is_ok_and(|v| is_off(&v)) {
        return Err(format!(
            "no filewatchd is running for {root} ({AUTOSTART_ENV} is off): start it with `filewatchd start`"
        ));
    }
    if !lifecycle::is_users_project(loc) {
        return Err(format!(
            "no filewatchd is running for {root}, and hooks start one only in a project of yours (a git repository, an agent's project settings, a {}) or one filewatchd has recorded before: start it with `filewatchd start`",
            crate::config::CONFIG_FILE
        ));
    }
    let config =
        Config::load(&loc.root, None).map_err(|e| format!("cannot start filewatchd for {root}: {e}"))?;
    if !config.autostart {
        return Err(format!(
            "no filewatchd is running for {root} (autostart = false in its {}): start it with `filewatchd start`",
            crate::config::CONFIG_FILE
        ));
    }
    Ok(())
}

fn is_off(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "0" | "false" | "no" | "off"
    )
}

/// Queues the markers, starts the daemon and waits (within the budget) until it answers, so
/// that on a small workspace the turn is open when the hook returns.
fn start_and_queue(
    loc: &Located,
    agent: Agent,
    event: &HookEvent,
    until: Instant,
) -> Result<Reached, String> {
    let fail = |e: anyhow::Error| format!("cannot start filewatchd for {}: {e:#}", loc.root.display());
    let _lock = match StartLock::take(loc, until) {
        Ok(lock) => lock,
        Err(_) => {
            return reach_running(loc, agent, event, until)?
                .ok_or_else(|| "another start is under way".into());
        }
    };
    // Another hook may have started it while this one waited for the lock.
    if let Some(reached) = reach_running(loc, agent, event, until)? {
        return Ok(reached);
    }
    let queued = queue_markers(loc, agent, event)?;
    let mut spawned = spawn::spawn(loc, &Launch::default()).map_err(fail)?;
    let waited = spawned.wait(loc, until, |r| matches!(r, Running::Answering(_)));
    said_of(loc, &spawned, waited, &queued)
}

/// What the hook says once the daemon it started answers, still indexes, or exited (then its
/// markers are taken back, unless another starter's daemon took the workspace and applies them).
fn said_of(
    loc: &Located,
    spawned: &spawn::Spawned,
    waited: Waited,
    queued: &[PathBuf],
) -> Result<Reached, String> {
    let (root, pid, log) = (loc.root.display(), spawned.pid(), spawned.log.display());
    let note = match waited {
        Waited::Ready(_) => format!("started filewatchd for {root} (pid {pid}, log {log})"),
        Waited::Pending => format!(
            "started filewatchd for {root} (pid {pid}, log {log}); it is indexing the workspace, and this turn opens once that is done (`filewatchd status` shows the progress)"
        ),
        Waited::Exited { status, log_tail } => {
            if !matches!(lifecycle::probe_quietly(loc), Running::Stopped) {
                return Ok(Reached::Queued { note: None });
            }
            queue::remove(queued);
            return Err(did_not_start(loc, &status, &log_tail, &log));
        }
    };
    Ok(Reached::Queued { note: Some(note) })
}

fn queue_markers(loc: &Located, agent: Agent, event: &HookEvent) -> Result<Vec<PathBuf>, String> {
    queue::push(&loc.state_dir, &markers(agent, event), crate::model::now_ms())
        .map_err(|e| format!("cannot queue the turn marker in {}: {e}", loc.state_dir.display()))
}

/// The markers the event would have sent.
fn markers(agent: Agent, event: &HookEvent) -> Vec<Marker> {
    let session = event.session.clone();
    let start = |label: Option<String>, turn_ref: Option<String>| Marker::TurnStart {
        session: session.clone(),
        label,
        turn_ref,
        agent: Some(agent.name().to_string()),
    };
    let end = |label: Option<String>| Marker::TurnEnd {
        session: session.clone(),
        label,
    };
    match &event.action {
        Action::StartTurn { label, turn_ref } => vec![start(label.clone(), turn_ref.clone())],
        Action::EndTurn | Action::CloseStale => vec![end(None)],
        Action::CompleteAndContinue { label, next_ref } => {
            vec![end(label.clone()), start(None, next_ref.clone())]
        }
        Action::StartDaemon | Action::ToolCall(_) | Action::Nothing => Vec::new(),
    }
}
