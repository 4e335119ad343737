//! SQL of retention: the store's horizon, collapsing history before a cutoff (keeping what
//! the pins need), and blobs that no version names any more.

use rusqlite::{Connection, OptionalExtension, Result, params};

use super::meta::meta;
use crate::model::Hash;

/// The oldest sequence number whose state is still exact (0: nothing collected yet).
pub fn horizon(conn: &Connection) -> Result<i64> {
    Ok(meta(conn, "horizon")?.unwrap_or(0))
}

/// Versions at or before `cutoff` that no state at or after it needs, nor the state of a pin
/// before it: all but each path's latest version up to the cutoff (and that one too when it
/// says "absent", unless the path keeps a pinned version it must still override), and all
/// but each path's latest version up to each pin. Every condition is about one path, so the
/// set is the union of its parts over ranges of path ids (`?2 <= path_id < ?3`): a collection
/// deletes it a range at a time (`retention::collection`).
const COLLAPSIBLE: &str = "FROM versions WHERE seq <= ?1 AND path_id >= ?2 AND path_id < ?3
    AND seq NOT IN (SELECT max(pv.seq) FROM pins p JOIN versions pv ON pv.seq <= p.seq
                    WHERE p.seq < ?1 AND pv.path_id >= ?2 AND pv.path_id < ?3
                    GROUP BY p.id, pv.path_id)
    AND (seq NOT IN (SELECT max(seq) FROM versions
                     WHERE seq <= ?1 AND path_id >= ?2 AND path_id < ?3 GROUP BY path_id)
         OR (kind = 0 AND path_id NOT IN (SELECT pv.path_id FROM pins p JOIN versions pv
                                          ON pv.seq <= p.seq WHERE p.seq < ?1
                                          AND pv.path_id >= ?2 AND pv.path_id < ?3)))";

/// Every path id.
const ALL: [i64; 2] = [i64::MIN, i64::MAX];

pub fn count_collapsible(conn: &Connection, cutoff: i64) -> Result<i64> {
    conn.query_row(
        &format!("SELECT count(*) {COLLAPSIBLE}"),
        params![cutoff, ALL[0], ALL[1]],
        |r| r.get(0),
    )
}

/// Deletes what `COLLAPSIBLE` names for the paths with ids in `from..to`, after the journal
/// rows of finished rollbacks that still point at them, then those paths left without a
/// version; returns the number of versions deleted.
pub fn collapse_range(conn: &Connection, cutoff: i64, from: i64, to: i64) -> Result<usize> {
    let bounds = params![cutoff, from, to];
    conn.prepare_cached(&format!(
        "DELETE FROM rollback_steps WHERE rollback_id IN (SELECT id FROM rollbacks WHERE status NOT IN ('prepared', 'reverting') AND temps_left = 0)
           AND path_id >= ?2 AND path_id < ?3
           AND (current_seq IN (SELECT seq {COLLAPSIBLE}) OR target_seq IN (SELECT seq {COLLAPSIBLE}))"
    ))?
    .execute(bounds)?;
    let deleted = conn
        .prepare_cached(&format!("DELETE {COLLAPSIBLE}"))?
        .execute(bounds)?;
    conn.prepare_cached(
        "DELETE FROM paths WHERE id >= ?1 AND id < ?2
           AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.path_id = paths.id)",
    )?
    .execute(params![from, to])?;
    Ok(deleted)
}

/// Rows of the paths with ids in `from..to` that name a version or a path no longer there
/// (the stat cache, the journal): what the foreign-key checks would refuse. A collection
/// deletes with those checks off, then asks this before it commits (0, or it rolls back).
pub fn dangling_in_range(conn: &Connection, from: i64, to: i64) -> Result<i64> {
    conn.prepare_cached(
        "SELECT (SELECT count(*) FROM path_state ps WHERE ps.path_id >= ?1 AND ps.path_id < ?2
                   AND (NOT EXISTS (SELECT 1 FROM versions v WHERE v.seq = ps.seq)
                        OR NOT EXISTS (SELECT 1 FROM paths p WHERE p.id = ps.path_id)))
              + (SELECT count(*) FROM rollback_steps s WHERE s.path_id >= ?1 AND s.path_id < ?2
                   AND (NOT EXISTS (SELECT 1 FROM versions v WHERE v.seq = s.current_seq)
                        OR (s.target_seq IS NOT NULL
                            AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.seq = s.target_seq))
                        OR NOT EXISTS (SELECT 1 FROM paths p WHERE p.id = s.path_id)))",
    )?
    .query_row(params![from, to], |r| r.get(0))
}

/// Runs `f` with SQLite's foreign-key checks off (a pragma that only takes effect outside a
/// transaction), and on again after, whatever `f` returned.
pub fn without_foreign_keys<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut Connection) -> Result<T>,
) -> Result<T> {
    conn.pragma_update(None, "foreign_keys", false)?;
    let result = f(conn);
    let restored = conn.pragma_update(None, "foreign_keys", true);
    let value = result?;
    restored?;
    Ok(value)
}

/// The highest path id (0: none).
pub fn max_path_id(conn: &Connection) -> Result<i64> {
    conn.query_row("SELECT coalesce(max(id), 0) FROM paths", [], |r| r.get(0))
}

/// The highest sequence number ever given (0: none).
pub fn max_seq(conn: &Connection) -> Result<i64> {
    conn.query_row("SELECT coalesce(max(seq), 0) FROM versions", [], |r| r.get(0))
}

/// A collection's own table of the hashes versions name: filled a range of sequence numbers
/// at a time (the index has no hash index: one query over them all would take seconds).
pub fn begin_referenced(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS gc_referenced (hash BLOB PRIMARY KEY) WITHOUT ROWID;
         DELETE FROM temp.gc_referenced;",
    )
}

/// Adds the hashes of the versions with `after < seq <= upto`.
pub fn add_referenced(conn: &Connection, after: i64, upto: i64) -> Result<usize> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO temp.gc_referenced
         SELECT hash FROM versions WHERE seq > ?1 AND seq <= ?2 AND hash IS NOT NULL",
    )?
    .execute(params![after, upto])
}

pub fn end_referenced(conn: &Connection) -> Result<()> {
    conn.execute_batch("DROP TABLE IF EXISTS temp.gc_referenced")
}

/// The hash `count` blobs after `after` (in hash order), where a chunk of blobs ends; `None`
/// when fewer are left.
pub fn blob_chunk_end(conn: &Connection, after: &[u8], count: usize) -> Result<Option<Vec<u8>>> {
    let offset = i64::try_from(count.saturating_sub(1)).unwrap_or(0);
    conn.prepare_cached("SELECT hash FROM blobs WHERE hash > ?1 ORDER BY hash LIMIT 1 OFFSET ?2")?
        .query_row(params![after, offset], |r| r.get(0))
        .optional()
}

/// The blobs with `after < hash <= upto` (no upper bound when `None`) that no version names,
/// as `gc_referenced` has them.
pub fn unreferenced_in(
    conn: &Connection,
    after: &[u8],
    upto: Option<&[u8]>,
) -> Result<Vec<(Hash, bool, i64)>> {
    // Both bounds a range of the hash index: an `?2 IS NULL OR` bound made SQLite read from
    // `after` to the last blob at every step (50 ms a step at a million blobs, however few
    // it took). No hash is above 33 bytes of 0xff.
    const ABOVE_EVERY_HASH: [u8; 33] = [0xff; 33];
    let upto = upto.unwrap_or(&ABOVE_EVERY_HASH);
    let mut stmt = conn.prepare_cached(
        "SELECT hash, data IS NULL, stored_size FROM blobs
         WHERE hash > ?1 AND hash <= ?2
           AND hash NOT IN (SELECT hash FROM temp.gc_referenced)",
    )?;
    let rows = stmt.query_map(params![after, upto], blob_row)?;
    rows.collect()
}

fn blob_row(r: &rusqlite::Row<'_>) -> Result<(Hash, bool, i64)> {
    let hash: Vec<u8> = r.get(0)?;
    Ok((
        Hash::from_slice(&hash).unwrap_or(Hash([0; 32])),
        r.get(1)?,
        r.get(2)?,
    ))
}

/// Blobs that versions would no longer name once the collapsible versions are gone.
pub fn blobs_freed_by_collapse(conn: &Connection, cutoff: i64) -> Result<(i64, i64)> {
    conn.query_row(
        &format!(
            "SELECT count(*), coalesce(sum(stored_size), 0) FROM blobs WHERE hash NOT IN
               (SELECT hash FROM versions WHERE hash IS NOT NULL AND seq NOT IN (SELECT seq {COLLAPSIBLE}))"
        ),
        params![cutoff, ALL[0], ALL[1]],
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

/// The path id of the version `rows` versions on from path id `from` (in path order): where
/// a collapse step that takes about `rows` versions ends; `None` when fewer are left.
pub fn path_id_after_versions(conn: &Connection, from: i64, rows: i64) -> Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT path_id FROM versions WHERE path_id >= ?1 ORDER BY path_id LIMIT 1 OFFSET ?2",
    )?
    .query_row(params![from, rows.max(1)], |r| r.get(0))
    .optional()
}

/// The sequence number of the `rows`-th version after `after`: where a listing step that
/// takes `rows` versions ends; `None` when fewer are left.
pub fn seq_after_versions(conn: &Connection, after: i64, rows: i64) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT seq FROM versions WHERE seq > ?1 ORDER BY seq LIMIT 1 OFFSET ?2")?
        .query_row(params![after, rows.max(1) - 1], |r| r.get(0))
        .optional()
}
