//! The answer of a rollback, undo or redo, as stored with it and answered: what was (or would
//! be) done path by path, the conflicts and why, the target, the git moves. `restore` makes
//! it; the store decodes a stored one once (`store::journal`); `wire` answers it.

use serde::{Deserialize, Serialize};

use super::{Kind, RollbackKind};

/// What to do with conflicting paths (G4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnConflict {
    /// Change nothing and list every conflict.
    #[default]
    Abort,
    /// Roll back everything else; leave conflicting paths exactly as they are.
    Skip,
    /// Roll conflicting paths back too (what they held stays in history).
    Force,
}

/// Who asked for a rollback, when not the user at the command line or the review page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// An agent, through `filewatchd mcp`.
    Mcp,
}

/// The target as the answer names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub to: TargetTo,
    pub turn: Option<i64>,
    pub seq: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The pin rolled back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
}

/// What a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetTo {
    /// The start of a turn.
    Before,
    /// The end of a turn.
    After,
    /// The workspace as recorded at a time.
    Time,
    /// The point a pin names.
    Pin,
    /// The state before an earlier rollback.
    Redo,
    /// A sequence number: a rollback recovered at start-up whose answer was never stored.
    Seq,
}

/// What a step does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Restore,
    Create,
    Delete,
    SetMode,
    Relink,
    RemoveDir,
}

/// Why a path is a conflict, cannot be restored, was skipped or kept, or failed: the `code`
/// of a path in an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteCode {
    /// Changed since the boundary by another session, a rollback of one, or no turn (G4 a).
    ChangedByOther,
    /// The disk differs from the latest recorded version (G4 b), or changed while applying.
    ChangedOnDisk,
    SymlinkInTheWay,
    Unreadable,
    TooLarge,
    ContentMissing,
    ContentNotStored,
    BeneathSkipped,
    /// A directory that still holds untracked files: kept.
    NotEmpty,
    Appeared,
    NoParent,
    IoError,
    NotAtTarget,
    WorkspaceLost,
    /// Names that differ only in case, one file on this file system (NTFS, macOS's APFS,
    /// exFAT): the rollback would change the other name's file too (`restore::case`).
    CaseCollision,
    /// Changed by others after the session's change, which a merge of lines takes out while
    /// keeping theirs (`own`): not a conflict, said beside the plan.
    Merged,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub operation: RollbackKind,
    pub session: Option<String>,
    pub rollback_id: Option<i64>,
    pub target: Target,
    pub on_conflict: OnConflict,
    pub dry_run: bool,
    pub applied: bool,
    pub actions: Vec<ActionLine>,
    pub conflicts: Vec<PathLine>,
    pub skipped: Vec<PathLine>,
    pub not_restorable: Vec<PathLine>,
    /// Directories the rollback would have removed but that still hold untracked files.
    pub kept: Vec<PathLine>,
    /// Files a session's rollback takes its change out of while keeping a later change by
    /// others (a three-way merge of lines), with whose change was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<PathLine>,
    /// Some path is the session's only because one of its turns was open when it was written
    /// (its agent reports no tool calls): a person's edit made then goes with it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub turn_wide: bool,
    /// Set when a restart finished this rollback after a crash.
    #[serde(default)]
    pub recovery: Option<String>,
    /// Temp files of this rollback that could not be removed (a read-only file system): what
    /// the disk holds besides the paths above, and what becomes of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temps_left: Option<String>,
    /// Who asked for it, when not the user (the request's `actor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
    /// What it moves (or moved) in git: HEAD, branches and tags, the stash, the index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git: Vec<GitLine>,
}

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionLine {
    pub path: String,
    pub action: Action,
    /// The kind the path gets (for a deletion: the kind it had).
    pub kind: Kind,
    pub status: ActionStatus,
    pub lines_added: Option<usize>,
    pub lines_removed: Option<usize>,
    pub diff: Option<String>,
}

/// Where one path's action stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    Planned,
    Done,
    Skipped,
    /// A directory to remove that still holds untracked files.
    Kept,
}

/// One git move of an answer: the component (as the path git keeps it at) and what moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitLine {
    pub path: String,
    pub change: String,
    pub status: ActionStatus,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathLine {
    pub path: String,
    pub code: NoteCode,
    pub reason: String,
}

/// What a rollback changed: the paths it created, restored (content, mode or link target)
/// and deleted (files and directories), and those it skipped or kept. SQLite derives them
/// from the stored answer whenever it is written (migrations 0014 and 0016).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollbackCounts {
    pub added: usize,
    pub modified: usize,
    pub deleted: usize,
    pub skipped: usize,
    pub kept: usize,
}

impl RollbackCounts {
    /// The paths it changed.
    pub fn done(&self) -> usize {
        self.added + self.modified + self.deleted
    }
}
