//! `GET /v1/blame`: each line of a text version with the version that introduced it.

use serde::{Deserialize, Serialize};

use crate::model::Origin;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Blame {
    pub path: String,
    /// The version blamed.
    pub seq: i64,
    /// It is not text: it has no lines.
    pub binary: bool,
    /// It was larger than `max_file_size`: only its size and hash were recorded.
    pub too_large: bool,
    pub lines: Vec<Line>,
}

/// One line and who wrote it: the version, and for a turn's, the session, the turn and the
/// first line of its prompt.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Line {
    pub seq: i64,
    pub time: String,
    pub origin: Origin,
    pub session: Option<String>,
    pub turn: Option<i64>,
    pub prompt: Option<String>,
    /// Its number, from 1.
    pub line: usize,
    pub text: String,
}
