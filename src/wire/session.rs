//! The sessions (`GET /v1/sessions`), oldest first.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sessions {
    pub sessions: Vec<Session>,
}

/// One session: its turns, its latest activity, what it was forked from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub session: String,
    pub turns: i64,
    /// The number of its open turn.
    pub open_turn: Option<i64>,
    pub created_at: String,
    /// RFC 3339 in UTC with milliseconds: ordered as text.
    pub last_activity: String,
    pub parent: Option<String>,
    /// The parent's turn after which it was forked.
    pub fork_turn: Option<i64>,
    /// The agent whose hooks drive it, when they said (`claude-code`, ...).
    pub agent: Option<String>,
    /// Its first own turn's label, first line.
    pub first_prompt: Option<String>,
}

/// A fork's answer (`POST /v1/sessions/{s}/fork`): the new session, from the parent's turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forked {
    pub session: String,
    pub parent: String,
    /// The parent's turn after which it was forked.
    pub fork_turn: i64,
    /// Where that turn ended.
    pub fork_seq: Option<i64>,
}

/// A one-time link to the review page (`POST /v1/ui/login`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoginCode {
    pub code: String,
    pub url: String,
}
