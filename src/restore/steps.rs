//! A plan's steps and notes: what a rollback does to each path, and why a path is a conflict,
//! cannot be restored, was skipped or kept (`plan` builds them, `own` decides a session's).

use crate::model::answer::{Action, NoteCode};
use crate::model::{StatKey, State};
use crate::paths::RelPath;

/// One path to set from its current (latest recorded) state to its target state.
#[derive(Debug, Clone)]
pub struct Step {
    pub path: RelPath,
    pub path_id: i64,
    pub current_seq: i64,
    pub current: State,
    pub target_seq: Option<i64>,
    pub target: State,
    /// The stat seen when the disk was checked: the apply re-checks against it.
    pub checked: Option<StatKey>,
}

/// A step of a journaled rollback: its order in the journal names its rows and temp files.
#[derive(Debug, Clone)]
pub struct Ordered {
    pub ord: i64,
    pub step: Step,
}

impl Step {
    pub fn action(&self) -> Action {
        match (&self.current, &self.target) {
            (State::Dir, State::Absent) => Action::RemoveDir,
            (_, State::Absent) => Action::Delete,
            (State::Absent, _) => Action::Create,
            (State::File(c), State::File(t)) if c.hash() == t.hash() => Action::SetMode,
            (State::Symlink { .. }, State::Symlink { .. }) => Action::Relink,
            _ => Action::Restore,
        }
    }
}

/// A path with the reason it is not (or cannot be) rolled back.
#[derive(Debug, Clone)]
pub struct Note {
    pub path: RelPath,
    pub code: NoteCode,
    pub reason: String,
}
