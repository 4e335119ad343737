//! The store's size: the sum of the blobs' stored sizes, kept as a counter by triggers on the
//! blob rows (migration 0013), so reading it costs one row, not a scan of every blob. The
//! start-up integrity check measures how far the counter drifted from the sum (it never
//! should) and the writer corrects it.

use rusqlite::{Connection, OptionalExtension};

use crate::store::sql::Result;

/// The bytes the blobs take in the store (compressed, inline or as files).
pub fn store_bytes(conn: &Connection) -> Result<i64> {
    conn.prepare_cached("SELECT bytes FROM store_size WHERE id = 0")?
        .query_row([], |r| r.get(0))
        .optional()
        .map(|bytes| bytes.unwrap_or(0))
}

/// How many bytes the counter lacks against the sum over every blob row (0: it agrees);
/// `None` before migration 0013 made it. Reads every blob row: for the start-up check only.
pub fn drift(conn: &Connection) -> Result<Option<i64>> {
    let tx = conn.unchecked_transaction()?;
    let exists: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_size')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(None);
    }
    let sum: i64 = tx.query_row("SELECT coalesce(sum(stored_size), 0) FROM blobs", [], |r| {
        r.get(0)
    })?;
    let drift = sum - store_bytes(&tx)?;
    tx.finish()?;
    Ok(Some(drift))
}

/// Adds `drift` to the counter (making its row if it went missing). The writer applies it
/// before it writes anything else, so the drift is still that of its own snapshot.
pub fn correct(conn: &Connection, drift: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO store_size (id, bytes) VALUES (0, ?1)
         ON CONFLICT (id) DO UPDATE SET bytes = bytes + ?1",
        [drift],
    )?;
    Ok(())
}
