//! A session's turns listing (`GET /v1/sessions/{s}/turns`): every turn with its counts, then
//! the session's rollbacks, each read from its brief (`journal::Brief`, which SQLite derives
//! from the stored answer whenever it is written). It is serialized straight into the answer:
//! a long session has thousands of turns.

use serde::{Deserialize, Serialize};

use crate::model::RollbackKind;
use crate::model::answer::Target;
use crate::store::journal::{RollbackRow, Status};
use crate::wire::turn::TurnSummary;

#[derive(Debug, Serialize, Deserialize)]
pub struct Listing {
    pub session: String,
    pub turns: Vec<TurnSummary>,
    pub rollbacks: Vec<RollbackSummary>,
}

/// One rollback as the listing shows it: what it did and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollbackSummary {
    pub rollback_id: i64,
    pub operation: RollbackKind,
    /// `None` when no answer was stored or it cannot be read.
    pub target: Option<Target>,
    pub status: Status,
    pub time: String,
    pub paths_done: usize,
    pub skipped: usize,
    pub recovery: Option<String>,
}

impl RollbackSummary {
    pub fn of(row: RollbackRow) -> Self {
        let brief = row.brief;
        let counts = brief.as_ref().map(|b| b.counts).unwrap_or_default();
        Self {
            rollback_id: row.id,
            operation: row.kind,
            target: brief.as_ref().and_then(|b| b.target.clone()),
            status: row.status,
            time: crate::model::format_time(row.created_at),
            paths_done: counts.done(),
            skipped: counts.skipped,
            recovery: brief.and_then(|b| b.recovery),
        }
    }
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
