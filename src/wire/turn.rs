//! A turn (`GET /v1/sessions/{s}/turns/{t}`, the end marker's answer) and the summary of one
//! that the turns listing shows.

use serde::{Deserialize, Serialize};

use crate::history::{ChangeKind, Counts};
use crate::model::Kind;

/// One turn without its changes: what the turns listing shows of each, and a turn's own
/// answer begins with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnSummary {
    pub session: String,
    pub turn: i64,
    #[serde(rename = "ref")]
    pub turn_ref: Option<String>,
    pub label: Option<String>,
    pub started_at: String,
    /// `None` while the turn is open.
    pub ended_at: Option<String>,
    pub start_seq: i64,
    pub end_seq: Option<i64>,
    pub counts: Counts,
    /// What moved in git from its start to its end (or now): `main 1a2b3c4 → 9f8e7d6`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git: Vec<String>,
}

/// A turn and its net changes (all, or the page a filter leaves).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    #[serde(flatten)]
    pub summary: TurnSummary,
    /// The whole turn is marked reviewed.
    pub reviewed: bool,
    /// Retention collapsed the history before the turn's start: its list may be partial.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub expired: bool,
    /// With a filter or a page: how many changes the filter leaves, before paging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_total: Option<usize>,
    pub changes: Vec<Change>,
}

/// What changed between two points of the record (`GET /v1/diff`): each path's state at `to`
/// against its state at `from`, as a turn's changes are listed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Difference {
    pub from_seq: i64,
    pub to_seq: i64,
    pub counts: crate::history::Counts,
    pub changes: Vec<Change>,
}

/// One change of a turn: the path's state at the turn's end (at its start, for a deletion).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Change {
    pub path: String,
    /// A rename's old path.
    pub from: Option<String>,
    pub change: ChangeKind,
    pub kind: Kind,
    #[serde(flatten)]
    pub state: StateFields,
    /// For a file that was a file before too: whether its permission bits changed.
    pub mode_changed: Option<bool>,
    /// Some of the path's versions were made while turns of several sessions were open.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub ambiguous: bool,
    /// How the owner of its latest version in the turn was decided (`tool_call`,
    /// `edit_tool`, `process`, `turn_window`); absent for versions recorded before it was.
    pub decided: Option<crate::model::Decided>,
    /// Who else wrote it while the turn was open (`you`, `session S turn N`, `a
    /// rollback`): their writes are not this turn's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_written_by: Vec<String>,
    /// The unified diff, when asked for and the file is text.
    pub diff: Option<String>,
    /// Asked for the diff of a binary file.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub binary: bool,
    /// The file, or its whole turn, is marked reviewed.
    pub reviewed: bool,
    /// Never sent by the daemon: a client that read this change without its diff, because
    /// the diff alone is past what one answer may hold, marks it so.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub diff_omitted: bool,
}

impl Change {
    /// The file's content cannot be shown: too large to store, or unreadable.
    pub fn has_no_text(&self) -> bool {
        self.state.too_large || self.state.unreadable
    }
}

/// What a state says beyond its kind: a file's size, hash and mode, a symlink's target.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateFields {
    pub size: Option<u64>,
    /// None for a file the daemon could not read.
    pub hash: Option<String>,
    pub executable: Option<bool>,
    /// The permission bits in octal ("0600"), when the version recorded them.
    pub mode: Option<String>,
    /// Larger than `max_file_size`: its content was not stored.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub too_large: bool,
    /// The daemon could not read the file: it has no hash.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub unreadable: bool,
    /// A symlink's target.
    pub target: Option<String>,
}

/// A turn just started (`POST /v1/sessions/{s}/turns`, 201), and the session's turn that
/// was still open and had to end first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnStarted {
    pub session: String,
    pub turn: i64,
    #[serde(rename = "ref")]
    pub turn_ref: Option<String>,
    pub label: Option<String>,
    pub start_seq: i64,
    pub started_at: String,
    pub ended: Option<Turn>,
}

/// A turn's reviewed marks (`PUT /v1/sessions/{s}/turns/{t}/review`): the turn's own, and
/// the files of it marked reviewed on their own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Review {
    pub session: String,
    pub turn: i64,
    pub reviewed: bool,
    pub reviewed_paths: Vec<String>,
}

/// What a tool-call marker did (`POST /v1/sessions/{s}/tool-calls`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCallMarked {
    pub session: String,
    /// The session's open turn the call is in; none when no turn is open (the call is ignored).
    pub turn: Option<i64>,
    /// The session's calls open after this one: two at once are one window.
    pub open_calls: usize,
    /// An end that matched no open call (its start was never seen): ignored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unmatched: bool,
}
