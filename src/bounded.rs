//! A file from outside read in bounded form: the config, an ignore file, an agent's own config.
//! Only a regular file is read (a symlink to one is followed; a FIFO is opened non-blocking and
//! never waited on, a device never read), and only if it is at most `limit` bytes.

use crate::platform::ext::OpenExt;
use std::fs::Metadata;
use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub enum Unread {
    NotAFile,
    /// Its length, over the limit.
    TooLarge(u64),
    Io(std::io::Error),
}

/// The bytes of the regular file `path` with its metadata (its owner, for the caller to judge);
/// `None` when there is no such file.
pub fn read(path: &Path, limit: u64) -> Result<Option<(Vec<u8>, Metadata)>, Unread> {
    let file = match std::fs::OpenOptions::new().read(true).non_blocking().open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unread::Io(e)),
    };
    let meta = file.metadata().map_err(Unread::Io)?;
    if !meta.is_file() {
        return Err(Unread::NotAFile);
    }
    if meta.len() > limit {
        return Err(Unread::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).map_err(Unread::Io)?;
    Ok(Some((bytes, meta)))
}
