//! SQL of retention: the store's horizon, collapsing history before a cutoff (keeping what
//! the pins need), and blobs that no version names any more.

use rusqlite::{Connection, OptionalExtension, params};

use crate::model::Hash;
use crate::store::sql::Result;

pub fn meta(conn: &Connection, key: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()
}

pub fn set_meta(conn: &Connection, key: &str, value: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
    )?
    .execute(params![key, value])?;
    Ok(())
}

/// The oldest sequence number whose state is still exact (0: nothing collected yet).
pub fn horizon(conn: &Connection) -> Result<i64> {
    Ok(meta(conn, "horizon")?.unwrap_or(0))
}

/// Versions at or before `cutoff` that no state at or after it needs, nor the state of a pin
/// before it: all but each path's latest version up to the cutoff (and that one too when it
/// says "absent", unless the path keeps a pinned version it must still override), and all
/// but each path's latest version up to each pin.
const COLLAPSIBLE: &str = "FROM versions WHERE seq <= ?1
    AND seq NOT IN (SELECT max(pv.seq) FROM pins p JOIN versions pv ON pv.seq <= p.seq
                    WHERE p.seq < ?1 GROUP BY p.id, pv.path_id)
    AND (seq NOT IN (SELECT max(seq) FROM versions WHERE seq <= ?1 GROUP BY path_id)
         OR (kind = 0 AND path_id NOT IN (SELECT pv.path_id FROM pins p JOIN versions pv
                                          ON pv.seq <= p.seq WHERE p.seq < ?1)))";

pub fn count_collapsible(conn: &Connection, cutoff: i64) -> Result<i64> {
    conn.query_row(&format!("SELECT count(*) {COLLAPSIBLE}"), [cutoff], |r| r.get(0))
}

/// Deletes what `COLLAPSIBLE` names, after the journal rows of finished rollbacks that still
/// point at them; returns the number of versions deleted.
pub fn collapse(conn: &Connection, cutoff: i64) -> Result<usize> {
    conn.execute(
        &format!(
            "DELETE FROM rollback_steps WHERE rollback_id IN (SELECT id FROM rollbacks WHERE status NOT IN ('prepared', 'reverting') AND temps_left = 0)
               AND (current_seq IN (SELECT seq {COLLAPSIBLE}) OR target_seq IN (SELECT seq {COLLAPSIBLE}))"
        ),
        [cutoff],
    )?;
    let deleted = conn.execute(&format!("DELETE {COLLAPSIBLE}"), [cutoff])?;
    conn.execute(
        "DELETE FROM paths WHERE NOT EXISTS (SELECT 1 FROM versions v WHERE v.path_id = paths.id)",
        [],
    )?;
    Ok(deleted)
}

/// A blob no version names: its hash, whether it is a file in the blob directory, its size.
pub fn unreferenced_blobs(conn: &Connection) -> Result<Vec<(Hash, bool, i64)>> {
    let mut stmt = conn.prepare(
        "SELECT hash, data IS NULL, stored_size FROM blobs
         WHERE hash NOT IN (SELECT hash FROM versions WHERE hash IS NOT NULL)",
    )?;
    let rows = stmt.query_map([], |r| {
        let hash: Vec<u8> = r.get(0)?;
        Ok((
            Hash::from_slice(&hash).unwrap_or(Hash([0; 32])),
            r.get(1)?,
            r.get(2)?,
        ))
    })?;
    rows.collect()
}

/// Blobs that versions would no longer name once the collapsible versions are gone.
pub fn blobs_freed_by_collapse(conn: &Connection, cutoff: i64) -> Result<(i64, i64)> {
    conn.query_row(
        &format!(
            "SELECT count(*), coalesce(sum(stored_size), 0) FROM blobs WHERE hash NOT IN
               (SELECT hash FROM versions WHERE hash IS NOT NULL AND seq NOT IN (SELECT seq {COLLAPSIBLE}))"
        ),
        [cutoff],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

pub fn delete_blob(conn: &Connection, hash: Hash) -> Result<()> {
    conn.prepare_cached("DELETE FROM blobs WHERE hash = ?1")?
        .execute([&hash.0[..]])?;
    Ok(())
}

/// Turns with a boundary before the cutoff: they expire.
pub fn count_turns_before(conn: &Connection, cutoff: i64) -> Result<i64> {
    conn.query_row("SELECT count(*) FROM turns WHERE start_seq < ?1", [cutoff], |r| {
        r.get(0)
    })
}

pub fn session_ids(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare("SELECT id FROM sessions ORDER BY id")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect()
}
