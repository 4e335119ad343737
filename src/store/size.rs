//! The store's size: the sum of the blobs' stored sizes, kept as a counter by triggers on the
//! blob rows (migration 0013), so reading it costs one row, not a scan of every blob. After
//! each start the daemon measures how far the counter drifted from the sum (it never should)
//! and the writer corrects it. The triggers change the counter and the sum alike, so a drift
//! measured in any snapshot is still the one to correct when the writer gets it (while the
//! counter's row exists). Beside it, the tracked paths by kind (`tracked`): the other half of
//! what `status` says the record holds.

use rusqlite::{Connection, OptionalExtension};

use rusqlite::Result;

/// The bytes the blobs take in the store (compressed, inline or as files).
pub fn store_bytes(conn: &Connection) -> Result<i64> {
    conn.prepare_cached("SELECT bytes FROM store_size WHERE id = 0")?
        .query_row([], |r| r.get(0))
        .optional()
        .map(|bytes| bytes.unwrap_or(0))
}

/// How many bytes the counter lacks against the sum over every blob row (0: it agrees);
/// `None` before migration 0013 made it. Reads every blob row: once a start.
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

/// Adds `drift` to the counter; a row gone missing is made from the sum as it is now (the
/// triggers update no missing row, so a drift measured earlier no longer says what it lacks).
/// A drift measured before `counted_after` set the counter from the sum is no longer the one
/// to correct.
pub fn correct(conn: &Connection, drift: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO store_size (id, bytes) VALUES (0, (SELECT coalesce(sum(stored_size), 0) FROM blobs))
         ON CONFLICT (id) DO UPDATE SET bytes = bytes + ?1",
        [drift],
    )?;
    Ok(())
}

/// Corrects a measured drift, if there is one, saying so in the log.
pub fn correct_drift(conn: &Connection, drift: Option<i64>) -> Result<()> {
    match drift {
        Some(drift) if drift != 0 => {
            tracing::warn!(
                drift,
                "the store size counter had drifted from its blob rows; corrected"
            );
            correct(conn, drift)
        }
        _ => Ok(()),
    }
}

/// Runs `build` (the first index into an empty index: a million blob inserts) with the
/// counter's triggers dropped, then puts them back from their own stored SQL and sets the
/// counter from the blob rows once. A trigger per insert cost ~1 µs of the writer's time.
/// A build that fails still gets its triggers back and a counter that matches.
pub fn counted_after<T>(
    conn: &mut Connection,
    build: impl FnOnce(&mut Connection) -> Result<T>,
) -> Result<T> {
    let triggers: Vec<(String, String)> = conn
        .prepare(
            "SELECT name, sql FROM sqlite_master
             WHERE type = 'trigger' AND tbl_name = 'blobs' AND name LIKE 'store\\_size\\_%' ESCAPE '\\'",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_>>()?;
    for (name, _) in &triggers {
        conn.execute_batch(&format!("DROP TRIGGER \"{name}\""))?;
    }
    let built = build(conn);
    for (_, sql) in &triggers {
        conn.execute_batch(sql)?;
    }
    if !triggers.is_empty() {
        conn.execute(
            "UPDATE store_size SET bytes = (SELECT coalesce(sum(stored_size), 0) FROM blobs)
             WHERE id = 0",
            [],
        )?;
    }
    built
}

/// The tracked paths present now by kind: files, symlinks and directories.
pub fn tracked(conn: &Connection) -> Result<Tracked> {
    let mut stmt = conn.prepare_cached(
        "SELECT v.kind, count(*) FROM path_state s JOIN versions v ON v.seq = s.seq GROUP BY v.kind",
    )?;
    let mut tracked = Tracked::default();
    for row in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))? {
        match row? {
            (1, n) => tracked.files = n,
            (2, n) => tracked.symlinks = n,
            (3, n) => tracked.dirs = n,
            _ => {}
        }
    }
    Ok(tracked)
}

/// How many paths of each kind are tracked now (the kinds `versions.kind` numbers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tracked {
    pub files: i64,
    pub symlinks: i64,
    pub dirs: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert_blob(conn: &Connection, n: u8, stored: i64) -> Result<()> {
        conn.execute(
            "INSERT INTO blobs (hash, size, stored_size, codec, data) VALUES (?1, ?2, ?2, 0, x'00')",
            rusqlite::params![vec![n; 32], stored],
        )?;
        Ok(())
    }

    #[test]
    fn a_build_without_the_triggers_ends_with_them_and_a_counter_that_matches() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut conn = crate::store::test_index(&dir.path().join("index.sqlite")).expect("open");
        let triggers = |conn: &Connection| -> i64 {
            conn.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'blobs'",
                [],
                |r| r.get(0),
            )
            .expect("count")
        };
        let before = triggers(&conn);
        assert_eq!(before, 3, "the counter's triggers");
        counted_after(&mut conn, |conn| {
            assert_eq!(triggers(conn), 0, "off during the build");
            insert_blob(conn, 1, 100)?;
            insert_blob(conn, 2, 250)
        })
        .expect("built");
        assert_eq!(triggers(&conn), before);
        assert_eq!(store_bytes(&conn).expect("bytes"), 350);
        insert_blob(&conn, 3, 50).expect("after");
        assert_eq!(
            store_bytes(&conn).expect("bytes"),
            400,
            "the triggers count again"
        );
        let failed = counted_after(&mut conn, |conn| {
            insert_blob(conn, 4, 7)?;
            insert_blob(conn, 4, 7)
        });
        assert!(failed.is_err(), "a duplicate hash fails the build");
        assert_eq!(triggers(&conn), before);
        assert_eq!(store_bytes(&conn).expect("bytes"), drift_free_sum(&conn));
    }

    fn drift_free_sum(conn: &Connection) -> i64 {
        conn.query_row("SELECT coalesce(sum(stored_size), 0) FROM blobs", [], |r| {
            r.get(0)
        })
        .expect("sum")
    }
}
