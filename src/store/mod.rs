//! The store: content-addressed blobs and the SQLite index of paths, versions, sessions and
//! turns. SQL lives in `sql`, the schema and its migrations in `db`, blob files in `blobs`;
//! `unjournaled` writes a first index into an empty index without SQLite's journal; `gc`,
//! `journal` and `found` hold the SQL of retention, rollbacks and the verification pass.

pub mod blobs;
pub mod db;
pub mod found;
pub mod gc;
pub mod journal;
pub mod sql;
pub mod unjournaled;

use rusqlite::Connection;

use blobs::{BlobDir, BlobError, Hash};

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
