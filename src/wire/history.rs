//! A path's versions (`GET /v1/history`), oldest first.

use serde::{Deserialize, Serialize};

use crate::model::{Decided, Kind, Origin};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct History {
    pub path: String,
    pub versions: Vec<Version>,
}

/// One version: who made it, then what its state says beyond its kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Version {
    pub seq: i64,
    pub time: String,
    pub origin: Origin,
    /// How its owner was decided: `tool_call`, `edit_tool`, `process`, `between_tool_calls` (the
    /// person's), `turn_window`; absent for versions no turn could own, and older ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided: Option<Decided>,
    /// The turn it was made in (origin `turn` or `ambiguous`).
    pub session: Option<String>,
    pub turn: Option<i64>,
    pub kind: Kind,
    /// Files only: whether it was larger than `max_file_size` (its content not stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_large: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// None for a file the daemon could not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<bool>,
    /// The permission bits in octal ("0600"), when the version recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The daemon could not read the file: it has no hash.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub unreadable: bool,
    /// A symlink's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}
