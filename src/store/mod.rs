//! The store: content-addressed blobs and the SQLite index of paths, versions, sessions and
//! turns. SQL lives in `sql`, the schema and its migrations in `db`, blob files in `blobs`;
//! `unjournaled` writes a first index into an empty index without SQLite's journal; `gc`,
//! `journal`, `verified` and `pins` hold the SQL of retention, rollbacks, the verification pass
//! and pins, `timeline` that of sessions' activity and the timeline, `reviews` that of
//! reviewed marks, `turn_counts` that of the counts stored for ended turns, `cache` the stat
//! cache read in path order for a restart, `size` the store's size (a counter the blob rows'
//! triggers keep), `briefs` what a listing shows of each rollback, `path_versions` a path's
//! versions with their turns, `owners` which turns report their tool calls, `git` the repository's recorded states, `purge`
//! a path's contents deleted from the store; `sqlite_errors` tells SQLite's errors as what they are.

pub mod blobs;
pub(crate) mod briefs;
pub(crate) mod cache;
pub mod db;
pub(crate) mod fault;
pub(crate) mod gc;
pub(crate) mod git;
pub(crate) mod journal;
pub(crate) mod meta;
pub(crate) mod owners;
pub(crate) mod path_versions;
pub(crate) mod pins;
pub(crate) mod purge;
pub(crate) mod reviews;
pub(crate) mod size;
pub mod sql;
pub(crate) mod sqlite_errors;
pub(crate) mod timeline;
pub(crate) mod turn_counts;
pub(crate) mod unjournaled;
pub(crate) mod verified;

use std::io;
use std::path::Path;

use rusqlite::Connection;

use crate::model::Hash;
use blobs::{BlobDir, BlobError};

/// `create_dir_all` that makes every directory it creates durable: the parent of each new
/// one is fsynced, so after a power loss no committed row names a blob whose directory entry
/// is gone. A directory that exists costs one failed `mkdir`, as with `create_dir_all`.
pub fn create_dir_all_durably(path: &Path) -> io::Result<()> {
    match std::fs::create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let Some(parent) = path.parent() else {
                return Err(e);
            };
            create_dir_all_durably(parent)?;
            match std::fs::create_dir(path) {
                Ok(()) => {}
                // Another thread made it meanwhile, and syncs its parent before it goes on.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    }
    sync_parent(path)
}

fn sync_parent(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    crate::platform::ext::sync_dir(parent)
}

/// Stores `bytes` as a blob (its file, if not inline, durable before its row names it);
/// returns its hash. A fault of the blob store is reported as the index's own.
pub fn write_blob(conn: &Connection, dir: &BlobDir, bytes: &[u8]) -> rusqlite::Result<Hash> {
    let io = |e: std::io::Error| rusqlite::Error::ToSqlConversionFailure(e.into());
    let hash = Hash::of(bytes);
    let blob = dir.prepare(hash, bytes).map_err(|e| io(e.into_io()))?;
    if blob.inline.is_none() {
        dir.sync_dirs(&[blob.hash]).map_err(io)?;
    }
    sql::insert_blob(conn, &blob)?;
    Ok(hash)
}

/// The raw content of a blob, wherever it is stored, verified against its hash.
pub fn read_blob(conn: &Connection, dir: &BlobDir, hash: Hash) -> Result<Vec<u8>, BlobError> {
    let location = sql::blob_location(conn, hash).map_err(|e| BlobError::Io {
        hash: hash.to_hex(),
        source: std::io::Error::other(e),
    })?;
    match location {
        None => Err(BlobError::Missing(hash.to_hex())),
        Some((codec, Some(inline))) => blobs::decode_verified(hash, codec, &inline),
        Some((codec, None)) => dir.read_file(hash, codec),
    }
}

/// A new index at `path`, every migration applied: for the store's own tests.
#[cfg(test)]
pub(crate) fn test_index(path: &Path) -> Result<Connection, db::DbError> {
    db::open_writer(path)
}
