//! Rollbacks in brief: every column of a rollback but its stored answer, which can be large,
//! and the brief SQLite derives from that answer whenever it is written (`journal::Brief`,
//! migrations 0014 and 0016): the timeline and a session's listing read these; only the
//! timeline's paths read the answers themselves.

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
