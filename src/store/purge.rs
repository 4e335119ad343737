//! Purging a path's contents from the store (docs/security.md, "Secrets in the store"): every
//! blob a version of the path (or of a path beneath it) names is deleted, unless a version of
//! another path names it too (the same bytes are that file's content as well). The versions
//! stay, so history still says when the path changed; none of them can be restored again
//! (`content_missing`). The index's freed pages are zeroed (`secure_delete`) and its
//! write-ahead log truncated, so the bytes are not left behind in the index's files either.

use rusqlite::{Connection, Result, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::model::Hash;
use crate::paths::RelPath;
use crate::store::blobs::BlobDir;

/// What a purge removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Purged {
    pub path: String,
    /// Versions of the path (and beneath it) whose content is gone now.
    pub versions: i64,
    pub blobs_removed: i64,
    pub bytes_freed: i64,
    /// Blobs kept because a version of another path holds the same bytes.
    pub shared: i64,
}

/// Purges `path`'s contents; `None` when nothing was ever recorded at or beneath it.
pub fn purge(conn: &mut Connection, blobs: &BlobDir, path: &RelPath) -> Result<Option<Purged>> {
    conn.pragma_update(None, "secure_delete", true)?;
    let purged = purge_rows(conn, path);
    conn.pragma_update(None, "secure_delete", false)?;
    let Some((purged, files)) = purged? else {
        return Ok(None);
    };
    for hash in files {
        let _ = std::fs::remove_file(blobs.path_of(hash));
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    tracing::info!(path = %path.to_text(), versions = purged.versions, blobs = purged.blobs_removed, "purged");
    Ok(Some(purged))
}

/// Deletes the blob rows in one transaction; returns what it did and the blob files to remove.
fn purge_rows(conn: &mut Connection, path: &RelPath) -> Result<Option<(Purged, Vec<Hash>)>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut beneath = path.as_bytes().to_vec();
    beneath.push(b'/');
    let mut after = path.as_bytes().to_vec();
    after.push(b'/' + 1);
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS purge_paths (id INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS purge_hashes (hash BLOB PRIMARY KEY) WITHOUT ROWID;
         DELETE FROM temp.purge_paths; DELETE FROM temp.purge_hashes;",
    )?;
    let paths = tx.execute(
        "INSERT INTO temp.purge_paths SELECT id FROM paths WHERE path = ?1 OR (path >= ?2 AND path < ?3)",
        params![path.as_bytes(), beneath, after],
    )?;
    if paths == 0 {
        return Ok(None);
    }
    let versions: i64 = tx.query_row(
        "SELECT count(*) FROM versions WHERE path_id IN (SELECT id FROM temp.purge_paths)",
        [],
        |r| r.get(0),
    )?;
    tx.execute(
        "INSERT OR IGNORE INTO temp.purge_hashes SELECT hash FROM versions
          WHERE path_id IN (SELECT id FROM temp.purge_paths) AND hash IS NOT NULL AND too_large = 0",
        [],
    )?;
    // One pass over the versions (they have no hash index): the hashes other paths hold too.
    let shared = tx.execute(
        "DELETE FROM temp.purge_hashes WHERE hash IN (SELECT hash FROM versions
          WHERE hash IN (SELECT hash FROM temp.purge_hashes)
            AND path_id NOT IN (SELECT id FROM temp.purge_paths))",
        [],
    )?;
    let removed = removed_blobs(&tx)?;
    let bytes_freed = removed.iter().map(|(_, _, size)| size).sum();
    tx.execute(
        "DELETE FROM blobs WHERE hash IN (SELECT hash FROM temp.purge_hashes)",
        [],
    )?;
    tx.commit()?;
    let purged = Purged {
        path: path.to_text(),
        versions,
        blobs_removed: removed.len() as i64,
        bytes_freed,
        shared: shared as i64,
    };
    let files = removed
        .into_iter()
        .filter(|(_, file, _)| *file)
        .map(|(h, _, _)| h)
        .collect();
    Ok(Some((purged, files)))
}

/// The blobs to delete: each hash, whether it is a file, and its stored size.
fn removed_blobs(conn: &Connection) -> Result<Vec<(Hash, bool, i64)>> {
    let mut stmt = conn.prepare(
        "SELECT hash, data IS NULL, stored_size FROM blobs WHERE hash IN (SELECT hash FROM temp.purge_hashes)",
    )?;
    let rows = stmt.query_map([], |r| {
        let hash: Vec<u8> = r.get(0)?;
        Ok((Hash::from_slice(&hash), r.get(1)?, r.get(2)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (hash, file, size) = row?;
        if let Some(hash) = hash {
            out.push((hash, file, size));
        }
    }
    Ok(out)
}
