//! Past rollbacks as the journal keeps them, with their stored answers: a session's, those a
//! failure left putting back, and the last one a start-up recovery finished.

use rusqlite::Connection;

use super::outcome::Outcome;
use crate::model::RollbackKind;
/// Where a past rollback stands (the journal's status).
pub use crate::store::journal::Status;
use crate::store::journal::{self, RollbackRow};

/// One rollback of the journal.
#[derive(Debug, Clone)]
pub struct PastRollback {
    pub id: i64,
    pub kind: RollbackKind,
    pub status: Status,
    pub created_at: i64,
    /// Its answer as last stored; `None` when none was stored or it cannot be read.
    pub outcome: Option<Outcome>,
}

impl PastRollback {
    fn of(row: RollbackRow) -> Self {
        let outcome = Outcome::stored(&row);
        Self {
            id: row.id,
            kind: row.kind,
            status: row.status,
            created_at: row.created_at,
            outcome,
        }
    }
}

fn all(rows: Vec<RollbackRow>) -> Vec<PastRollback> {
    rows.into_iter().map(PastRollback::of).collect()
}

/// Every rollback of a session, oldest first.
pub fn of_session(conn: &Connection, session_id: i64) -> rusqlite::Result<Vec<PastRollback>> {
    Ok(all(journal::session_rollbacks(conn, session_id)?))
}

/// Rollbacks that failed and are not fully put back yet (G12): the next start finishes them.
pub fn reverting(conn: &Connection) -> rusqlite::Result<Vec<PastRollback>> {
    Ok(all(journal::reverting_rollbacks(conn)?))
}

/// The latest rollback a start-up recovery finished after a crash interrupted it (G6).
pub fn last_recovered(conn: &Connection) -> rusqlite::Result<Option<PastRollback>> {
    Ok(journal::last_recovered(conn)?.map(PastRollback::of))
}
