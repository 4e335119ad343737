//! The index's `meta` table: named numbers the store keeps (the collection's horizon, when
//! the last one ran, where the history begins).

use rusqlite::{Connection, OptionalExtension, Result, params};

/// The number kept under `key`, if any.
pub fn meta(conn: &Connection, key: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()
}

/// Keeps `value` under `key`, replacing what was there.
pub fn set_meta(conn: &Connection, key: &str, value: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
    )?
    .execute(params![key, value])?;
    Ok(())
}
