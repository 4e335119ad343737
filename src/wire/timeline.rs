//! One page of the timeline (`GET /v1/timeline`), newest first: the turns, the rollbacks and
//! restores, and the runs of writes outside any turn, each entry told apart by its `kind`.

use serde::{Deserialize, Serialize};

use crate::history::{ChangeKind, Counts};
use crate::model::answer::{Action, ActionStatus, Actor, RollbackCounts, Target};
use crate::model::{Kind, RollbackKind};
use crate::store::journal::Status;
use crate::timeline::{OutsideKind, RollbackEntryKind};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timeline {
    /// The session asked for; `None` for every session's timeline.
    pub session: Option<String>,
    pub order: Order,
    pub entries: Vec<Entry>,
    /// Where the next (older) page starts: the `before` of the next request.
    pub next_before: Option<String>,
}

/// The order of the entries: always the newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    NewestFirst,
}

/// An entry, told apart by its `kind` (each kind names one of the three).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Entry {
    Turn(TurnEntry),
    Rollback(RollbackEntry),
    Outside(OutsideEntry),
}

impl Entry {
    /// When it happened: a turn's start, a rollback's, the latest write of a run.
    pub fn time(&self) -> &str {
        match self {
            Self::Turn(turn) => &turn.time,
            Self::Rollback(rollback) => &rollback.time,
            Self::Outside(run) => &run.time,
        }
    }
}

/// A turn's kind: `turn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnKind {
    Turn,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnEntry {
    pub kind: TurnKind,
    pub time: String,
    pub cursor: String,
    pub session: String,
    pub turn: i64,
    #[serde(rename = "ref")]
    pub turn_ref: Option<String>,
    pub label: Option<String>,
    /// The label's first line.
    pub prompt: Option<String>,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub start_seq: i64,
    pub end_seq: Option<i64>,
    pub open: bool,
    pub undone: bool,
    /// Undone only in part: its paths the undo skipped (a conflict) or kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    pub reviewed: bool,
    pub counts: Counts,
    /// With `paths=true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<PathChange>>,
    /// What moved in git during the turn (`TurnSummary::git`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git: Vec<String>,
}

/// A path a turn or a run of outside writes changed.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathChange {
    pub path: String,
    /// A rename's old path.
    pub from: Option<String>,
    pub change: ChangeKind,
    pub kind: Kind,
    /// A file's size after the change.
    pub size: Option<u64>,
}

/// A run of writes outside any turn between two turn boundaries: `outside` or `found`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutsideEntry {
    pub kind: OutsideKind,
    /// When the latest of its versions was recorded.
    pub time: String,
    pub cursor: String,
    /// Always `None`: no session wrote it.
    pub session: Option<String>,
    pub first_seq: i64,
    pub last_seq: i64,
    /// How many paths were written (the net `counts` may hold fewer).
    pub paths: usize,
    pub counts: Counts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<PathChange>>,
}

/// An undo, a redo, a rollback or a restore.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RollbackEntry {
    pub kind: RollbackEntryKind,
    pub time: String,
    pub cursor: String,
    pub session: Option<String>,
    pub rollback_id: i64,
    pub operation: RollbackKind,
    /// `None` when its answer was never stored (recovered at start-up).
    pub target: Option<Target>,
    pub status: Status,
    /// A restore's paths.
    pub paths: Option<Vec<String>>,
    pub redo_of: Option<i64>,
    pub counts: Option<RollbackCounts>,
    pub recovery: Option<String>,
    /// Who asked for it, when not the user (`mcp`).
    pub actor: Option<Actor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<RollbackPath>>,
}

/// One path a rollback acted on.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RollbackPath {
    pub path: String,
    pub action: Action,
    pub kind: Kind,
    pub status: ActionStatus,
    pub lines_added: Option<usize>,
    pub lines_removed: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each entry reads back as the variant its `kind` names, and writes back the same JSON.
    #[test]
    fn an_entry_is_told_apart_by_its_kind() {
        let counts = json!({"added": 1, "modified": 0, "deleted": 0, "renamed": 0, "ambiguous": 0});
        let turn = json!({"kind": "turn", "time": "t", "cursor": "c", "session": "s", "turn": 1,
            "ref": null, "label": null, "prompt": null, "started_at": "t", "ended_at": null,
            "start_seq": 0, "end_seq": null, "open": true, "undone": false, "reviewed": false,
            "counts": counts});
        let outside = json!({"kind": "found", "time": "t", "cursor": "c", "session": null,
            "first_seq": 1, "last_seq": 2, "paths": 1, "counts": counts});
        let rollback = json!({"kind": "time_rollback", "time": "t", "cursor": "c", "session": null,
            "rollback_id": 3, "operation": "rollback", "target": null, "status": "recovered",
            "paths": null, "redo_of": null, "counts": null, "recovery": null, "actor": null});
        for (entry, variant) in [(turn, "turn"), (outside, "outside"), (rollback, "rollback")] {
            let read: Entry = serde_json::from_value(entry.clone()).expect("an entry");
            let is = match read {
                Entry::Turn(_) => "turn",
                Entry::Outside(_) => "outside",
                Entry::Rollback(_) => "rollback",
            };
            assert_eq!(is, variant);
            assert_eq!(serde_json::to_value(&read).expect("json"), entry);
        }
    }
}
