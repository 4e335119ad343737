//! The JSON bodies of the API's requests (docs/api.md) as types both sides use: the daemon
//! reads them (an unknown field is refused), the CLI, the MCP server and the hooks write them.
//! A field left out reads as its default; a client leaves out what it does not set.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::is_false;
use crate::model::answer::{Actor, OnConflict};
use crate::restore::Boundary;
use crate::sessions::turns::TurnSelector;

/// A request's `"turn"`: a turn's number, a ref or `current`; or a value that names none, which
/// the daemon refuses as a bad request once it has checked the rest of the body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Turn {
    Selector(TurnSelector),
    NotOne(Value),
}

/// A request's `"turn"` as a user typed it.
pub fn turn(text: &str) -> Turn {
    Turn::Selector(TurnSelector::parse(text))
}

/// `POST /v1/sessions/{s}/turns`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnStart {
    #[serde(rename = "ref")]
    pub turn_ref: Option<String>,
    pub label: Option<String>,
    /// The agent whose hook sends the marker (`claude-code`, ...), stored on the session.
    pub agent: Option<String>,
}

/// `POST /v1/sessions/{s}/turns/{t}/end`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnEnd {
    /// Sets the label of a turn that was started without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// `POST /v1/sessions/{s}/fork`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fork {
    pub new_session: Option<String>,
    pub turn: Option<Turn>,
}

/// `POST /v1/gc`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gc {
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
}

/// `POST /v1/purge`: the path whose contents to delete from the store (and those beneath it).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Purge {
    pub path: String,
}

/// `POST /v1/verify`: no field.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verify {}

/// `POST /v1/pins`: a pin at the end of a turn, at a time, or now.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewPin {
    pub name: Option<String>,
    /// The end of this turn (a number, a ref or `current`) of `session`.
    pub turn: Option<Turn>,
    pub session: Option<String>,
    /// An RFC 3339 time.
    pub at: Option<String>,
}

/// `PUT /v1/sessions/{s}/turns/{t}/review`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    pub reviewed: Option<bool>,
    /// Only this file of the turn.
    pub path: Option<String>,
}

/// Every rollback: `undo`, `redo`, `rollback` of a session, and `POST /v1/rollback` (to a
/// time, a pin or a sequence number).
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rollback {
    pub to: Option<Boundary>,
    pub turn: Option<Turn>,
    #[serde(default)]
    pub on_conflict: OnConflict,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    pub op_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub diff: bool,
    /// For `POST /v1/rollback`: an RFC 3339 time.
    pub at: Option<String>,
    /// For `POST /v1/rollback`: a pin's name (instead of `at`).
    pub pin: Option<String>,
    /// For `POST /v1/rollback`: a sequence number (with `paths`), instead of `at`.
    pub seq: Option<i64>,
    /// Who asks, when not the user: `mcp` for an agent through `filewatchd mcp`.
    pub actor: Option<Actor>,
}

/// `POST /v1/sessions/{s}/turns/{t}/revert`: one file of a turn, or one hunk of it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revert {
    pub path: Option<String>,
    pub hunk: Option<u16>,
    #[serde(default)]
    pub on_conflict: OnConflict,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    pub op_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub diff: bool,
}

/// Whether a tool call starts or ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPhase {
    Start,
    End,
}

/// `POST /v1/sessions/{s}/tool-calls`: one of the agent's tool calls starts or ends.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Required: `start` or `end`.
    pub phase: Option<CallPhase>,
    /// The agent's id for the call: an end matches the start with the same id.
    pub id: Option<String>,
    /// The tool's name (`Bash`, `Edit`, ...).
    pub tool: Option<String>,
    /// The files an edit tool names, absolute or relative to the workspace root; those
    /// outside the workspace are left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The hook's ancestors (pids, nearest first), its agent among them: with fanotify, the
    /// daemon tells by them whose a file's writer is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
}
