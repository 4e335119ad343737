//! Rollbacks in brief: every column of a rollback but its stored answer, which can be large,
//! and the listing's part of that answer (target, paths done and skipped, recovery note,
//! `journal::Brief`), which SQLite derives from it whenever it is written (migration 0014):
//! the timeline and a session's listing read these, never the answers themselves.

use rusqlite::{Connection, Result};

use crate::store::journal::{RollbackRow, rollback_from_row, select_rollbacks};

const SELECT: &str = select_rollbacks!("NULL");

/// Every rollback of the journal, oldest first.
pub fn all(conn: &Connection) -> Result<Vec<RollbackRow>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} ORDER BY id"))?;
    let rows = stmt.query_map([], rollback_from_row)?;
    rows.collect()
}

/// A session's rollbacks, oldest first.
pub fn of_session(conn: &Connection, session_id: i64) -> Result<Vec<RollbackRow>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE session_id = ?1 ORDER BY id"))?;
    let rows = stmt.query_map([session_id], rollback_from_row)?;
    rows.collect()
}
