//! The answer of a rollback, undo, redo, restore or revert (`POST /v1/rollback` and the
//! session routes): 200, or 409 with `error` when conflicts refused it. Its fields are the
//! outcome's as stored with the rollback (a repeated operation id answers the stored one).

use serde::{Deserialize, Serialize};

use crate::model::answer::{NoteCode, OnConflict, Outcome};
use crate::wire::error::ErrorCode;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RollbackAnswer {
    #[serde(flatten)]
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Refused>,
}

/// Why a rollback was refused (409): its conflicts, or content it cannot restore.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refused {
    pub code: ErrorCode,
    pub message: String,
}

impl RollbackAnswer {
    /// The answer to `outcome`; a refused one says so in `error`.
    pub fn of(outcome: Outcome) -> Self {
        let error = outcome.refused().then(|| {
            let paths = match outcome.conflicts.len() + outcome.not_restorable.len() {
                1 => "1 path conflicts or cannot".to_string(),
                n => format!("{n} paths conflict or cannot"),
            };
            Refused {
                code: ErrorCode::Conflicts,
                message: format!("{paths} be restored; nothing was changed (use skip or force)"),
            }
        });
        Self { outcome, error }
    }

    pub fn refused(&self) -> bool {
        self.error.is_some()
    }

    /// Applied, but some paths were skipped for a reason other than a conflict the request
    /// said to skip (a symlink in the way, something that appeared meanwhile): not all done.
    pub fn partly_done(&self) -> bool {
        let o = &self.outcome;
        // Under `skip`, a conflict of the plan skipped is what was asked for, and so is what lies
        // beneath a conflicting directory skipped with it.
        let asked = |s: &crate::model::answer::PathLine| {
            let conflict = o
                .conflicts
                .iter()
                .any(|c| (&c.path, c.code, &c.reason) == (&s.path, s.code, &s.reason));
            o.on_conflict == OnConflict::Skip && (conflict || s.code == NoteCode::BeneathSkipped)
        };
        !o.dry_run && !self.refused() && o.skipped.iter().any(|s| !asked(s))
    }

    /// A dry run under `abort` whose plan has conflicts or content it cannot restore: the
    /// same request without `dry_run` would be refused.
    pub fn dry_run_would_be_refused(&self) -> bool {
        let o = &self.outcome;
        o.dry_run
            && o.on_conflict == OnConflict::Abort
            && (!o.conflicts.is_empty() || !o.not_restorable.is_empty())
    }
}

#[cfg(test)]
#[path = "rollback_tests.rs"]
mod tests;
