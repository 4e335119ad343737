//! The tracked set over time: a path an ignore rule hides gets a version of state
//! `untracked`, and so does a path coming into view that history has as absent or has never
//! seen, right before its first version. A rollback to a moment when a path was untracked
//! leaves the path alone: what it held then was never recorded, and "absent" would delete it.

use rusqlite::Connection;

use crate::model::{Origin, State, now_ms};
use crate::paths::RelPath;
use crate::store::{journal, sql};

/// Paths that left the tracked set just now (each one's latest version still says what it
/// held): each gets an `untracked` version.
pub fn mark_left(conn: &Connection, path_ids: &[i64]) -> rusqlite::Result<()> {
    let now = now_ms();
    for &path_id in path_ids {
        insert_untracked(conn, path_id, now)?;
    }
    Ok(())
}

/// Paths an ignore-rule change just brought into view, before their first version is
/// recorded: those not already marked `untracked` get that version, so history says they
/// were untracked (not absent) until now.
pub fn mark_entering(conn: &mut Connection, paths: &[&RelPath]) -> rusqlite::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now = now_ms();
    for path in paths {
        let path_id = sql::ensure_path(&tx, path)?;
        let latest = journal::version_at(&tx, path_id, i64::MAX)?;
        if !latest.is_some_and(|(_, state)| state.is_untracked()) {
            insert_untracked(&tx, path_id, now)?;
        }
    }
    tx.commit()
}

/// Not made by anyone: origin `offline` (found, not seen written), in no turn.
fn insert_untracked(conn: &Connection, path_id: i64, now: i64) -> rusqlite::Result<i64> {
    sql::insert_version(conn, path_id, &State::Untracked, Origin::Offline, None, now)
}
