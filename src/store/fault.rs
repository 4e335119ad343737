//! Storage faults (G12): a failure of the store itself (its file system full, a file size
//! limit, an I/O error, the index unable to write), as opposed to a failure to read the
//! workspace. A storage fault never drops a version: the paths stay pending and are retried,
//! and a turn marker or rollback that cannot record every write made before it is refused
//! with `storage_error`.

use std::io;

use rustix::io::Errno;

/// One storage failure: its cause in the words a user can search for, and the error itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StorageFault {
    /// `ENOSPC`, `EFBIG`, `EIO`, `EDQUOT`, `EROFS`, `SQLITE_FULL`, `SQLITE_IOERR`, ...
    pub cause: String,
    pub message: String,
}

impl std::fmt::Display for StorageFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.cause)
    }
}

impl StorageFault {
    pub fn from_io(context: &str, err: &io::Error) -> Self {
        Self {
            cause: io_cause(err),
            message: format!("{context}: {err}"),
        }
    }

    /// The fault behind a SQLite error, when it is one of the store's own (full, I/O error,
    /// read-only, out of disk for a temp file); `None` for a logic error (a constraint, SQL).
    pub fn from_sqlite(err: &rusqlite::Error) -> Option<Self> {
        use rusqlite::ErrorCode;
        let code = match err {
            rusqlite::Error::SqliteFailure(e, _) => e.code,
            rusqlite::Error::ToSqlConversionFailure(inner) => {
                if let Some(crate::store::blobs::BlobError::Io { source, .. }) = inner.downcast_ref() {
                    return Some(Self::from_io("the blob store", source));
                }
                let io = inner.downcast_ref::<io::Error>()?;
                return Some(Self::from_io("the blob store", io));
            }
            _ => return None,
        };
        let name = match code {
            ErrorCode::DiskFull => "SQLITE_FULL",
            ErrorCode::SystemIoFailure => "SQLITE_IOERR",
            ErrorCode::ReadOnly => "SQLITE_READONLY",
            ErrorCode::CannotOpen => "SQLITE_CANTOPEN",
            _ => return None,
        };
        Some(Self {
            cause: name.to_string(),
            message: format!("the index cannot be written: {err}"),
        })
    }
}

/// Writes made before a request that the store could not take: the request is refused
/// (503 `storage_error`) rather than answered without them.
#[derive(Debug, Clone)]
pub struct Unrecorded {
    pub fault: StorageFault,
    pub paths: Vec<crate::paths::RelPath>,
}

/// How many pending paths an answer names.
const NAMED: usize = 10;

impl std::fmt::Display for Unrecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let named: Vec<String> = self.paths.iter().take(NAMED).map(|p| p.to_text()).collect();
        let more = self.paths.len().saturating_sub(NAMED);
        write!(
            f,
            "{} write(s) made before this request cannot be recorded: {}; pending: {}{}. Free space in \
             (or fix) the state directory's file system: capture resumes by itself, and the request \
             succeeds once they are recorded",
            self.paths.len(),
            self.fault,
            named.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
        )
    }
}

/// The errno's name for the errors a store meets, else the error's kind.
pub fn io_cause(err: &io::Error) -> String {
    let Some(raw) = err.raw_os_error() else {
        return format!("{:?}", err.kind());
    };
    let name = match Errno::from_raw_os_error(raw) {
        Errno::NOSPC => "ENOSPC",
        Errno::FBIG => "EFBIG",
        Errno::IO => "EIO",
        Errno::DQUOT => "EDQUOT",
        Errno::ROFS => "EROFS",
        Errno::ACCESS => "EACCES",
        Errno::PERM => "EPERM",
        Errno::NOMEM => "ENOMEM",
        Errno::MFILE => "EMFILE",
        Errno::NFILE => "ENFILE",
        other => return format!("errno {}", other.raw_os_error()),
    };
    name.to_string()
}

/// Ignore SIGXFSZ, so a file size limit (`ulimit -f`, `prlimit --fsize`) makes a write fail
/// with EFBIG, a storage fault the daemon reports and survives, instead of killing it.
pub fn survive_file_size_limit() {
    // SAFETY: sets the disposition of one signal at start-up, before any thread is spawned.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_named() {
        let full = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(StorageFault::from_io("blob", &full).cause, "ENOSPC");
        assert_eq!(io_cause(&io::Error::from_raw_os_error(libc::EFBIG)), "EFBIG");
        let sqlite =
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None);
        assert_eq!(
            StorageFault::from_sqlite(&sqlite).map(|f| f.cause),
            Some("SQLITE_FULL".to_string())
        );
        assert!(StorageFault::from_sqlite(&rusqlite::Error::QueryReturnedNoRows).is_none());
    }
}
