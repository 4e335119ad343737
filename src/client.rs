//! The HTTP API's client: finding the daemon of the workspace a command runs in, and talking
//! to it. The CLI and the agent hooks use it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::error::{Code, Details, ErrorAnswer, ErrorCode};

/// Whether a log event may be written at all, whatever `RUST_LOG` asks for: not the HTTP
/// client's wire dumps (`ureq_proto` at trace level: every byte of a request, its bearer token
/// included, and of the answer, file contents included). Its debug lines redact the
/// `Authorization` header and stay.
pub fn loggable(meta: &tracing::Metadata<'_>) -> bool {
    let wire = meta.target() == "ureq_proto" || meta.target().starts_with("ureq_proto::");
    !(wire && *meta.level() == tracing::Level::TRACE)
}
use crate::restore::finish::{PathNow, PathState};
use crate::state;

/// Where the daemon is and how to get in.
pub struct Client {
    url: String,
    token: String,
    agent: ureq::Agent,
    /// No daemon runs: the API's reads answered in this process (`api::offline`).
    local: Option<Box<dyn Local>>,
}

/// The API answered in this process rather than over HTTP: reads only.
pub trait Local: Send + Sync {
    /// `GET path`: the status and body the API would answer.
    fn get(&self, path: &str) -> anyhow::Result<(u16, Vec<u8>)>;
}

/// An answer that was not a success: its status and the daemon's error.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiFailure {
    pub status: u16,
    /// `None` when the daemon sent no code this client knows.
    pub code: Option<ErrorCode>,
    /// A code this client does not know: the daemon's own word.
    pub unknown_code: Option<String>,
    pub message: String,
    pub body: Value,
}

/// The most of a read's answer this client takes into memory as JSON. A turn's diffs can be
/// past it in one answer: the CLI and the MCP server ask for them page by page (`offset`,
/// `limit`). The answer to a change (`POST`, `PUT`, `DELETE`) and `get_whole`'s are read
/// whatever their size: an undo of 40,000 paths is done once answered, and its answer is
/// what the user is told.
pub const ANSWER_LIMIT: u64 = 10 << 20;
/// What "whatever their size" is: more than any answer's memory.
const WHOLE: u64 = 1 << 40;

/// An answer longer than `ANSWER_LIMIT`: nothing wrong with it but its size.
#[derive(Debug, thiserror::Error)]
#[error(
    "the daemon's answer ({status}) is larger than the {} MiB this client reads at once: ask for less (a page of it, a path)",
    ANSWER_LIMIT >> 20
)]
pub struct TooLarge {
    pub status: u16,
}

/// No daemon answers for the workspace: none runs, it is still indexing, or it stopped. The
/// message (the whole chain of causes) says which and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct NoDaemon(anyhow::Error);

/// What to do next, added to a refusal of the daemon the user can act on.
pub trait Hint<T> {
    /// When the daemon refused with `code`, its message gains `what_to_do`, unless it names
    /// a command to run already (a revert's missing hunk says how to list the hunks).
    fn hint(self, code: ErrorCode, what_to_do: &str) -> anyhow::Result<T>;
}

impl<T> Hint<T> for anyhow::Result<T> {
    fn hint(self, code: ErrorCode, what_to_do: &str) -> anyhow::Result<T> {
        self.map_err(|err| match err.downcast::<ApiFailure>() {
            Ok(mut failure) if failure.code == Some(code) && !failure.message.contains("`filewatchd ") => {
                failure.message = format!("{}: {what_to_do}", failure.message);
                failure.into()
            }
            Ok(failure) => failure.into(),
            Err(err) => err,
        })
    }
}

impl Client {
    /// `FILEWATCHD_URL` / `FILEWATCHD_TOKEN` first; else `--state-dir`; else the state
    /// directory of the nearest ancestor of `start` (or of the current directory) that has a
    /// running daemon.
    pub fn discover(start: Option<&Path>, state_dir: Option<&Path>) -> anyhow::Result<Self> {
        Self::discover_within(start, state_dir, Duration::from_secs(600))
    }

    /// As `discover`, with every request bounded by `timeout` (agent hooks must be quick).
    pub fn discover_within(
        start: Option<&Path>,
        state_dir: Option<&Path>,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Self::locate(start, state_dir, timeout).map_err(|err| NoDaemon(err).into())
    }

    fn locate(start: Option<&Path>, state_dir: Option<&Path>, timeout: Duration) -> anyhow::Result<Self> {
        let env_url = std::env::var("FILEWATCHD_URL").ok().filter(|u| !u.is_empty());
        let env_token = std::env::var("FILEWATCHD_TOKEN").ok().filter(|t| !t.is_empty());
        if let (Some(url), Some(token)) = (env_url.clone(), env_token.clone()) {
            return Ok(Self::new(url, token, timeout));
        }
        let dir = match state_dir {
            Some(dir) => dir.to_path_buf(),
            None => find_state_dir(start)?,
        };
        let info = running_info(&dir)?;
        // The workspace's token goes only to the daemon it belongs to (docs/security.md).
        if let Some(url) = env_url.filter(|url| url.trim_end_matches('/') != info.url.trim_end_matches('/')) {
            bail!(
                "FILEWATCHD_URL is {url}, not the URL of this workspace's daemon ({}): its token is sent only to its own daemon; to reach another, set FILEWATCHD_TOKEN beside FILEWATCHD_URL",
                info.url
            );
        }
        let token = match env_token {
            Some(token) => token,
            None => state::read_token(&dir)?,
        };
        Self::new(info.url, token, timeout).of_this_user()
    }

    /// The daemon whose `daemon.json` and `token` are in the state directory `dir`, whatever
    /// the environment says.
    pub fn at(dir: &Path, timeout: Duration) -> anyhow::Result<Self> {
        let info = running_info(dir)?;
        Self::new(info.url, state::read_token(dir)?, timeout).of_this_user()
    }

    /// This client, once the server at its URL is a process of this user (or root): the check
    /// the daemon makes of its clients, from the other side. A daemon killed with `kill -9`
    /// leaves its `daemon.json`, and another user may listen on its port since; the token
    /// must never reach them.
    fn of_this_user(self) -> anyhow::Result<Self> {
        match crate::platform::listener_uid(&self.url) {
            Ok(Some(uid)) if !state::is_trusted_owner(uid) => Err(NoDaemon(anyhow!(
                "the server at {} belongs to uid {uid}, not to you (uid {}): it is not your daemon, which has stopped; nothing was sent to it. Start yours with `filewatchd start`",
                self.url,
                state::euid()
            ))
            .into()),
            // Not reachable now: said by the first request, as for any daemon that stopped.
            // No `sock_diag` here: the lock checked by `running_info` is the guard.
            _ => Ok(self),
        }
    }

    fn new(url: String, token: String, timeout: Duration) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .into();
        Self {
            url: url.trim_end_matches('/').to_string(),
            token,
            agent,
            local: None,
        }
    }

    /// The daemon's address, as a message names it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A client whose reads `local` answers (no daemon runs); every other request is refused.
    pub fn local(local: Box<dyn Local>) -> Self {
        let mut client = Self::new(String::new(), String::new(), Duration::from_secs(1));
        client.local = Some(local);
        client
    }

    /// Refused without a daemon: what would record or write.
    fn check_daemon(&self) -> anyhow::Result<()> {
        match self.local {
            Some(_) => Err(NoDaemon(anyhow!(
                "no filewatchd is running for this workspace: start it with `filewatchd start` in the workspace"
            ))
            .into()),
            None => Ok(()),
        }
    }

    /// `GET path`, the answer read as its `crate::wire` type.
    pub fn get_as<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        if let Some(local) = &self.local {
            let (status, bytes) = local.get(path)?;
            return typed(path, self.judge(status, &bytes)?);
        }
        typed(path, self.call("GET", path, None)?)
    }

    /// `GET path` read whole whatever its size (a listing of every path of many turns).
    pub fn get_whole<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        if self.local.is_some() {
            return self.get_as(path);
        }
        typed(path, self.call_whole("GET", path)?)
    }

    fn call_whole(&self, method: &str, path: &str) -> anyhow::Result<Value> {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {}", self.token));
        let sent = request
            .body(())
            .map_err(ureq::Error::from)
            .and_then(|r| self.agent.run(r));
        self.answer(sent, WHOLE)
    }

    /// `POST path` with `body`, the answer read as its `crate::wire` type.
    pub fn post_as<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> anyhow::Result<T> {
        typed(path, self.call("POST", path, Some(serde_json::to_vec(body)?))?)
    }

    /// `PUT path` with `body`, the answer read as its `crate::wire` type.
    pub fn put_as<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> anyhow::Result<T> {
        typed(path, self.call("PUT", path, Some(serde_json::to_vec(body)?))?)
    }

    /// `DELETE path`, the answer read as its `crate::wire` type.
    pub fn delete_as<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        typed(path, self.call("DELETE", path, None)?)
    }

    /// One request to the daemon: a body is JSON. Only reads are answered without a daemon.
    fn call(&self, method: &str, path: &str, body: Option<Vec<u8>>) -> anyhow::Result<Value> {
        if method != "GET" {
            self.check_daemon()?;
        }
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {}", self.token));
        // A URL that makes no request (a bad FILEWATCHD_URL) is a daemon not reached, as
        // one that does not answer.
        let sent = match body {
            Some(body) => request
                .header("Content-Type", "application/json")
                .body(body)
                .map_err(ureq::Error::from)
                .and_then(|request| self.agent.run(request)),
            None => request
                .body(())
                .map_err(ureq::Error::from)
                .and_then(|request| self.agent.run(request)),
        };
        let limit = if method == "GET" { ANSWER_LIMIT } else { WHOLE };
        self.answer(sent, limit)
    }

    /// A raw answer (file content); errors are still JSON.
    pub fn get_bytes(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        if let Some(local) = &self.local {
            let (status, bytes) = local.get(path)?;
            if (200..300).contains(&status) {
                return Ok(bytes);
            }
            return self.judge(status, &bytes).map(|_| Vec::new());
        }
        let request = self
            .agent
            .get(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {}", self.token));
        let mut response = request.call().map_err(|e| self.unreachable(e))?;
        if response.status().is_success() {
            let limit = 1 << 40;
            return Ok(response.body_mut().with_config().limit(limit).read_to_vec()?);
        }
        self.answer(Ok(response), ANSWER_LIMIT).map(|_| Vec::new())
    }

    fn unreachable(&self, e: ureq::Error) -> anyhow::Error {
        NoDaemon(anyhow!(
            "the daemon at {} is not answering ({e}); it may have stopped: start it with `filewatchd start` in the workspace",
            self.url
        ))
        .into()
    }

    fn answer(
        &self,
        sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        limit: u64,
    ) -> anyhow::Result<Value> {
        let mut response = sent.map_err(|e| self.unreachable(e))?;
        let status = response.status().as_u16();
        let read = response.body_mut().with_config().limit(limit).read_to_vec();
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(ureq::Error::BodyExceedsLimit(_)) => return Err(TooLarge { status }.into()),
            Err(e) => {
                return Err(anyhow!(e).context(format!("the daemon's answer ({status}) broke off")));
            }
        };
        let body: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("the daemon answered {status} with a body that is not JSON"))?;
        judged(status, body)
    }

    /// An answer given in this process, judged as one over HTTP.
    fn judge(&self, status: u16, bytes: &[u8]) -> anyhow::Result<Value> {
        let body: Value = serde_json::from_slice(bytes)
            .with_context(|| format!("the index answered {status} with a body that is not JSON"))?;
        judged(status, body)
    }
}

/// A success's body as the type the route answers with; a body that is not one is the
/// daemon's fault (another version?), said as such.
fn typed<T: DeserializeOwned>(path: &str, body: Value) -> anyhow::Result<T> {
    let route = path.split('?').next().unwrap_or(path);
    serde_json::from_value(body).with_context(|| {
        format!("the daemon's answer to {route} is not what this filewatchd reads (is the daemon another version? `filewatchd restart`)")
    })
}

/// The body of a success; else the daemon's error as an `ApiFailure`.
fn judged(status: u16, body: Value) -> anyhow::Result<Value> {
    if (200..300).contains(&status) {
        return Ok(body);
    }
    let error = ErrorAnswer::deserialize(&body).ok().map(|answer| answer.error);
    let (code, unknown_code) = match error.as_ref().map(|e| &e.code) {
        Some(Code::Known(code)) => (Some(*code), None),
        Some(Code::Unknown(word)) => (None, Some(word.clone())),
        None => (None, None),
    };
    let message = error.map_or_else(String::new, |e| match e.details {
        Some(Details::Rollback(failed)) => {
            e.message + &path_states(&failed.paths) + &temps_left(failed.temps_left)
        }
        _ => e.message,
    });
    Err(ApiFailure {
        status,
        code,
        unknown_code,
        message,
        body,
    }
    .into())
}

/// A failed rollback that could not put everything back lists where each path is.
fn path_states(paths: &[PathNow]) -> String {
    let lines: Vec<String> = paths
        .iter()
        .map(|p| {
            let state = match p.state {
                PathState::AsBefore => "as before the rollback",
                PathState::RolledBack => "rolled back (not yet put back)",
                PathState::Absent => "absent (not yet re-created)",
                PathState::Unreachable => "behind a symlink (not yet put back)",
                PathState::Changed => "changed by someone else",
            };
            format!("\n  {}: {state}", p.path)
        })
        .collect();
    lines.concat()
}

/// A failed rollback's temp files that could not be removed.
fn temps_left(note: Option<String>) -> String {
    note.map_or_else(String::new, |note| format!("\n  {note}"))
}

fn find_state_dir(start: Option<&Path>) -> anyhow::Result<PathBuf> {
    let start = match start {
        Some(dir) => dir.to_path_buf(),
        None => state::working_dir()?,
    };
    let home = state::state_home()?;
    let Ok(canonical) = crate::platform::ext::canonical(&start) else {
        return recorded_state_dir(&home, &start);
    };
    for dir in canonical.ancestors() {
        let candidate = state::project_dir(&home, dir);
        if candidate.join("daemon.json").is_file() {
            return Ok(candidate);
        }
        if state::is_held(&candidate) {
            bail!(
                "the filewatchd for {} is still indexing it (`filewatchd status` shows the progress); try again once it is done",
                dir.display()
            );
        }
    }
    bail!(
        "no filewatchd is running for {} or any directory above it; start one with `filewatchd start` in the workspace (or set FILEWATCHD_URL and FILEWATCHD_TOKEN)",
        canonical.display()
    )
}

/// The `daemon.json` of `dir`'s daemon, when that daemon still runs: a daemon that was
/// killed leaves its file behind, naming a port anyone may have taken since; only the lock
/// the kernel dropped when it died tells.
fn running_info(dir: &Path) -> anyhow::Result<state::DaemonInfo> {
    let info = state::read_info(dir)?;
    if !state::is_held(dir) {
        bail!(
            "the filewatchd that wrote {} (pid {}, {}) is no longer running: it was stopped without cleaning up (killed?); nothing was sent to its old address. Start it again with `filewatchd start` in the workspace",
            dir.join("daemon.json").display(),
            info.pid,
            info.url
        );
    }
    Ok(info)
}

/// The state directory of the workspace `start` belonged to, by its record, when `start`
/// no longer exists: its daemon may still run (and serve its history) with its root gone.
fn recorded_state_dir(home: &Path, start: &Path) -> anyhow::Result<PathBuf> {
    let Some((root, dir)) = state::recorded_root(home, start) else {
        bail!(
            "{} does not exist, and filewatchd has no record of a workspace there (`filewatchd projects` lists the workspaces it has)",
            start.display()
        );
    };
    if dir.join("daemon.json").is_file() {
        return Ok(dir);
    }
    bail!(
        "the workspace root {} no longer exists, and no filewatchd is running for it; its history is in {} (`filewatchd forget {}` deletes it)",
        root.display(),
        dir.display(),
        root.display()
    )
}
