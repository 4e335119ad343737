//! Which session "this session" is, in this order (docs/mcp.md):
//!
//! 1. the tool call's `session` argument;
//! 2. a session key in the tool call's `_meta` (said again with every call);
//! 3. what the agent told the server once: an environment variable of `ENV_VARS`, else a
//!    session key in the `_meta` of the MCP client's `initialize`; but when that session has
//!    no turn open and the hooks' record names one that has (the agent moved on to a new
//!    session, as after Claude Code's `/clear`), the record's;
//! 4. the hooks' record of the agent process that started this server (`hook::agents`);
//! 5. the workspace's only session with an open turn, or its only session.
//!
//! Otherwise the call fails asking for `session`, with the candidates: the server never
//! picks silently between sessions working in parallel.

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::reach::Reached;
use super::shape::Failure;
use crate::hook::agents;
use crate::hook::events::session_name;
use crate::sessions;
use crate::sessions::pick::{Known, Picked, pick};
use crate::wire::session::{Session, Sessions};

/// Environment variables that name the session, first found wins: `FILEWATCHD_SESSION` (as
/// for the CLI), then those an agent sets for the MCP servers it starts: Claude Code's
/// `CLAUDE_CODE_SESSION_ID` (the `session_id` of its hook payloads).
pub const ENV_VARS: [&str; 2] = ["FILEWATCHD_SESSION", "CLAUDE_CODE_SESSION_ID"];
/// `_meta` keys of a tool call (or of `initialize`) that name the session: ours, and Codex's
/// `sessionId` (its thread id, the `session_id` of its hook payloads).
pub const META_KEYS: [&str; 3] = ["filewatchd/session", "sessionId", "session_id"];

/// The session a call is about, and how it was found (said in the answer).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub name: String,
    pub from: String,
}

/// What the agent said, taken from the request before the call goes to a blocking thread.
#[derive(Debug, Clone, Default)]
pub struct Told {
    pub argument: Option<String>,
    /// A session key of the tool call's `_meta`: the key and the session.
    pub call_meta: Option<(String, String)>,
    /// The same in the `_meta` of `initialize`.
    pub init_meta: Option<(String, String)>,
}

impl Told {
    pub fn new(argument: Option<String>, ctx: &RequestContext<RoleServer>) -> Self {
        let initialize = ctx.peer.peer_info();
        let init = initialize.as_ref().and_then(|info| info.meta.as_ref());
        Self {
            argument: argument.filter(|s| !s.is_empty()),
            call_meta: meta_session(&ctx.meta.0.0),
            init_meta: init.and_then(|meta| meta_session(&meta.0.0)),
        }
    }
}

fn meta_session(meta: &Map<String, Value>) -> Option<(String, String)> {
    META_KEYS.iter().find_map(|key| {
        let value = meta.get(*key)?.as_str().filter(|v| !v.is_empty())?;
        Some((key.to_string(), session_name(value)))
    })
}

pub fn resolve(daemon: &Reached, told: &Told) -> Result<Resolved, Failure> {
    if let Some(typed) = &told.argument {
        return by_argument(daemon, typed);
    }
    if let Some((key, name)) = &told.call_meta {
        return Ok(found(name, &format!("the MCP client's _meta {key:?}")));
    }
    let said_once = from_env().or_else(|| {
        let (key, name) = told.init_meta.as_ref()?;
        Some(found(name, &format!("the MCP client's initialize _meta {key:?}")))
    });
    let sessions = listed(daemon)?;
    if let Some(said) = said_once {
        return Ok(moved_on(daemon, &sessions, said));
    }
    if let Some(resolved) = from_agent_record(daemon, &sessions)? {
        return Ok(resolved);
    }
    only_one(&sessions)
}

/// The session argument: a full name, `last` or a unique prefix, as the CLI takes them
/// (`sessions::pick`); a name no session has is a refusal listing those there are.
fn by_argument(daemon: &Reached, typed: &str) -> Result<Resolved, Failure> {
    if !sessions::is_valid_name(typed) {
        return Err(Failure::bad(format!(
            "{typed:?} is not a session name: {}",
            sessions::NAME_RULE
        )));
    }
    let listed = listed(daemon)?;
    let known: Vec<Known> = listed
        .iter()
        .map(|s| Known {
            name: &s.session,
            last_activity: &s.last_activity,
        })
        .collect();
    match pick(&known, typed) {
        Picked::One(name) if name == typed => Ok(found(name, "the session argument")),
        Picked::One(name) => Ok(found(name, &format!("the session argument {typed:?}"))),
        Picked::Ambiguous(names) => Err(ambiguous(
            format!("{typed:?} is the start of {} sessions", names.len()),
            listed.iter().filter(|s| names.contains(&s.session.as_str())),
        )),
        Picked::NoSessions | Picked::Unknown => Err(no_such_session(typed, &listed)),
    }
}

/// No session is named `name`: the refusal lists those there are, and why the agent's may be
/// missing.
pub fn no_such_session(name: &str, listed: &[Session]) -> Failure {
    refusal(
        format!(
            "no session named {name:?} in this workspace: the agent's hooks may not be installed here (`filewatchd hook install <agent>` records its turns), or its session has another name; call again with the session argument, one of the candidates (a unique prefix or `last` works too)"
        ),
        listed.iter(),
    )
}

/// The session the agent named once, unless it has no turn open and the hooks' record of
/// the agent process names one that has: the agent has moved on to that one (Claude Code
/// keeps the first session's id in the environment after `/clear`).
fn moved_on(daemon: &Reached, sessions: &[Session], said: Resolved) -> Resolved {
    let open = |name: &str| sessions.iter().any(|s| s.session == name && is_open(s));
    if open(&said.name) {
        return said;
    }
    match from_agent_record(daemon, sessions) {
        Ok(Some(record)) if record.name != said.name && open(&record.name) => Resolved {
            from: format!(
                "{}, not {} (session {}, which has no turn open)",
                record.from, said.from, said.name
            ),
            name: record.name,
        },
        _ => said,
    }
}

impl Resolved {
    /// `/v1/sessions/{name}/{tail}`, the name encoded as one path segment.
    pub fn url(&self, tail: &str) -> String {
        format!("/v1/sessions/{}/{tail}", super::shape::segment(&self.name))
    }
}

fn found(name: &str, from: &str) -> Resolved {
    Resolved {
        name: name.to_string(),
        from: from.to_string(),
    }
}

fn from_env() -> Option<Resolved> {
    ENV_VARS.iter().find_map(|var| {
        let value = std::env::var(var).ok().filter(|v| !v.is_empty())?;
        Some(found(
            &session_name(&value),
            &format!("the environment variable {var}"),
        ))
    })
}

/// `GET /v1/sessions`: every session, oldest first.
pub fn listed(daemon: &Reached) -> Result<Vec<Session>, Failure> {
    Ok(daemon.get_as::<Sessions>("/v1/sessions")?.sessions)
}

fn is_open(session: &Session) -> bool {
    session.open_turn.is_some()
}

/// The agent process's record: its only session; else the one of its sessions with an open
/// turn; else, none open, the one it reported last (sessions one after the other, as after
/// a `/clear`). Two of its sessions open at once is a refusal.
fn from_agent_record(daemon: &Reached, sessions: &[Session]) -> Result<Option<Resolved>, Failure> {
    let Some(state_dir) = &daemon.state_dir else {
        return Ok(None);
    };
    let Some((record, _)) = agents::find(state_dir) else {
        return Ok(None);
    };
    let from = format!(
        "the hooks' record of the agent process ({} pid {})",
        record.agent, record.pid
    );
    let open: Vec<&str> = record
        .sessions
        .iter()
        .map(|s| s.session.as_str())
        .filter(|name| sessions.iter().any(|s| s.session == *name && is_open(s)))
        .collect();
    match (open.as_slice(), record.sessions.first()) {
        ([one], _) => Ok(Some(found(one, &from))),
        ([], Some(latest)) => Ok(Some(found(&latest.session, &from))),
        ([], None) => Ok(None),
        (many, _) => Err(ambiguous(
            format!(
                "the agent process that started this server has {} sessions with a turn open",
                many.len()
            ),
            sessions.iter().filter(|s| many.contains(&s.session.as_str())),
        )),
    }
}

/// The workspace's only session with an open turn, else its only session.
fn only_one(sessions: &[Session]) -> Result<Resolved, Failure> {
    let open: Vec<&Session> = sessions.iter().filter(|s| is_open(s)).collect();
    let name = |s: &Session| s.session.clone();
    match (open.as_slice(), sessions) {
        ([one], _) => Ok(found(&name(one), "the only session with a turn open")),
        ([], [one]) => Ok(found(&name(one), "the workspace's only session")),
        ([], []) => Err(refusal(
            "this workspace has no session yet: no agent hook has marked a turn (install them with `filewatchd hook install <agent>`), or give the session argument".into(),
            std::iter::empty(),
        )),
        ([], all) => Err(ambiguous(
            format!("{} sessions and none has a turn open", all.len()),
            all.iter().rev(),
        )),
        (many, _) => Err(ambiguous(
            format!("{} sessions have a turn open", many.len()),
            many.iter().copied(),
        )),
    }
}

/// Candidates a refusal lists, the most recently active first.
const CANDIDATES_SHOWN: usize = 10;

fn ambiguous<'a>(why: String, candidates: impl Iterator<Item = &'a Session>) -> Failure {
    refusal(
        format!(
            "which session is yours is not known ({why}): call again with the session argument, one of the candidates"
        ),
        candidates,
    )
}

/// A refusal listing the candidates: the most recently active first, at most
/// `CANDIDATES_SHOWN` of them, with how many there are.
fn refusal<'a>(message: String, candidates: impl Iterator<Item = &'a Session>) -> Failure {
    let mut all: Vec<&Session> = candidates.collect();
    // RFC 3339 in UTC with milliseconds: ordered as text.
    all.sort_by(|a, b| b.last_activity.cmp(&a.last_activity));
    let total = all.len();
    let candidates: Vec<Value> = all
        .into_iter()
        .take(CANDIDATES_SHOWN)
        .map(|s| {
            json!({
                "session": s.session,
                "agent": s.agent,
                "open_turn": s.open_turn,
                "last_activity": s.last_activity,
                "first_prompt": super::shape::first_line(s.first_prompt.as_deref()),
            })
        })
        .collect();
    let shown = candidates.len();
    let more = (total > shown).then(|| {
        format!(" (the {shown} most recently active of {total} are listed: `filewatchd sessions` in a terminal lists them all)")
    });
    Failure::Session {
        message: format!("{message}{}", more.unwrap_or_default()),
        candidates,
        total,
    }
}
