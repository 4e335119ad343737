//! SQL of the counts stored for ended turns (`history::counts`): read, written, the turns
//! still lacking them, and the rows a collapse makes stale.

use std::collections::HashMap;

use rusqlite::{Connection, params};

use crate::store::sql::Result;

/// A turn's counts as stored: added, modified, deleted, renamed, ambiguous.
pub type Stored = [i64; 5];

/// The stored counts of some turns (those without a row are missing from the map).
pub fn of_turns(conn: &Connection, turn_ids: &[i64]) -> Result<HashMap<i64, Stored>> {
    let mut stmt = conn.prepare_cached(
        "SELECT added, modified, deleted, renamed, ambiguous FROM turn_counts WHERE turn_id = ?1",
    )?;
    let mut found = HashMap::with_capacity(turn_ids.len());
    for &id in turn_ids {
        let mut rows = stmt.query([id])?;
        if let Some(r) = rows.next()? {
            found.insert(id, [r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?]);
        }
    }
    Ok(found)
}

pub fn store(conn: &Connection, turn_id: i64, counts: Stored) -> Result<()> {
    let [added, modified, deleted, renamed, ambiguous] = counts;
    conn.prepare_cached(
        "INSERT INTO turn_counts (turn_id, added, modified, deleted, renamed, ambiguous)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (turn_id) DO UPDATE SET added = ?2, modified = ?3, deleted = ?4,
           renamed = ?5, ambiguous = ?6",
    )?
    .execute(params![turn_id, added, modified, deleted, renamed, ambiguous])?;
    Ok(())
}

/// Up to `limit` ended turns with no stored counts, oldest first.
pub fn missing(conn: &Connection, limit: usize) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.id FROM turns t WHERE t.end_seq IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM turn_counts c WHERE c.turn_id = t.id)
         ORDER BY t.id LIMIT ?1",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map([limit], |r| r.get(0))?;
    rows.collect()
}

/// Collapsing the history at or before `cutoff` changes what the turns that started before
/// it count (their versions and the states they started from): their rows go.
pub fn forget_before(conn: &Connection, cutoff: i64) -> Result<usize> {
    conn.prepare_cached(
        "DELETE FROM turn_counts WHERE turn_id IN (SELECT id FROM turns WHERE start_seq < ?1)",
    )?
    .execute([cutoff])
}
