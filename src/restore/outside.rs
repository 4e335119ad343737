//! Content on disk that the record lacks, stored before a rollback overwrites or removes it
//! (G4, G5): with `force`, what a conflicting path holds now (it changed a moment ago); at
//! start-up, another process's bytes found under one of our temp names. Each is a version of
//! origin `outside`, its blob stored first.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::Workspace;
use super::plan::{Plan, Step};
use crate::fs::read::{Observation, Present, observe};
use crate::model::{Origin, State, now_ms, now_ns};
use crate::paths::RelPath;
use crate::store::sql;

/// With `force`, every path whose disk differs from its latest version is recorded first, so
/// what the rollback overwrites stays in history. Returns the paths it looked at (the plan
/// for them is to be built again).
pub fn record_unrecorded(
    conn: &mut Connection,
    ws: &Workspace,
    plan: &Plan,
) -> rusqlite::Result<Vec<RelPath>> {
    let fresh = plan.changed_on_disk.clone();
    if fresh.is_empty() {
        return Ok(fresh);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for path in &fresh {
        let path_id = sql::ensure_path(&tx, path)?;
        match observe(&ws.root, path, ws.max_file_size, &ws.blobs) {
            Observation::Present(present) => store(&tx, ws, path_id, present)?,
            Observation::Absent => absent(&tx, path_id)?,
            // Still changing, unreadable or special: the rollback's own checks refuse it.
            _ => {}
        }
    }
    tx.commit()?;
    Ok(fresh)
}

/// Another process's bytes under one of our temp names (swapped out as it wrote, and a crash
/// came before they were put back): a version of the step's path, before the temp goes.
pub fn store_foreign(
    conn: &mut Connection,
    ws: &Workspace,
    step: &Step,
    temp: &RelPath,
) -> rusqlite::Result<()> {
    let Observation::Present(present) = observe(&ws.root, temp, ws.max_file_size, &ws.blobs) else {
        return Ok(());
    };
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    store(&tx, ws, step.path_id, present)?;
    tx.commit()
}

/// The blob (made durable first), the version and the stat-cache row of what was read.
fn store(tx: &Transaction<'_>, ws: &Workspace, path_id: i64, present: Present) -> rusqlite::Result<()> {
    if let Some(blob) = &present.blob {
        let stored = match &present.streamed {
            Some(tmp) => ws.blobs.commit_streamed(blob.hash, tmp).map_err(|e| e.into_io()),
            None => Ok(()),
        };
        let synced = stored.and_then(|()| match blob.inline {
            Some(_) => Ok(()),
            None => ws.blobs.sync_dirs(&[blob.hash]),
        });
        synced.map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        sql::insert_blob(tx, blob)?;
    }
    let seq = sql::insert_version(tx, path_id, &present.state, Origin::Outside, None, None, now_ms())?;
    sql::set_path_state(tx, path_id, seq, &present.stat, now_ns())
}

fn absent(tx: &Transaction<'_>, path_id: i64) -> rusqlite::Result<()> {
    sql::insert_version(tx, path_id, &State::Absent, Origin::Outside, None, None, now_ms())?;
    sql::clear_path_state(tx, path_id)
}
