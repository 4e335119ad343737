//! Storage faults (G12): a failure of the store itself (its file system full, a file size
//! limit, an I/O error, the index unable to write), as opposed to a failure to read the
//! workspace. A storage fault never drops a version: the paths stay pending and are retried,
//! and a turn marker or rollback that cannot record every write made before it is refused
//! with `storage_error`.

use std::io;

use crate::platform::sys::io::Errno;

/// What a storage failure (or a rollback's I/O error) was, named on the wire in the words a
/// user can search for: the errno's name (`ENOSPC`, `EIO`, ...), SQLite's (`SQLITE_FULL`,
/// ...), `index_error` for another failure of the index, `errno N` for an errno not named
/// here, and the error's kind (`Other`, ...) when it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCause {
    NoSpace,
    FileTooLarge,
    Io,
    Quota,
    ReadOnly,
    Access,
    Permission,
    NoMemory,
    ProcessFiles,
    SystemFiles,
    SqliteFull,
    SqliteIo,
    SqliteReadOnly,
    SqliteCannotOpen,
    /// A failure of the index that is none of SQLite's storage errors.
    Index,
    /// An I/O error without an errno (its kind is all there is).
    NoErrno(io::ErrorKind),
    OtherErrno(i32),
}

impl FaultCause {
    const NAMED: [(FaultCause, &'static str); 15] = [
        (Self::NoSpace, "ENOSPC"),
        (Self::FileTooLarge, "EFBIG"),
        (Self::Io, "EIO"),
        (Self::Quota, "EDQUOT"),
        (Self::ReadOnly, "EROFS"),
        (Self::Access, "EACCES"),
        (Self::Permission, "EPERM"),
        (Self::NoMemory, "ENOMEM"),
        (Self::ProcessFiles, "EMFILE"),
        (Self::SystemFiles, "ENFILE"),
        (Self::SqliteFull, "SQLITE_FULL"),
        (Self::SqliteIo, "SQLITE_IOERR"),
        (Self::SqliteReadOnly, "SQLITE_READONLY"),
        (Self::SqliteCannotOpen, "SQLITE_CANTOPEN"),
        (Self::Index, "index_error"),
    ];

    /// The store's file system (or the index on it) refuses writes.
    pub fn is_read_only(self) -> bool {
        matches!(self, Self::ReadOnly | Self::SqliteReadOnly)
    }

    /// The disk reported an I/O error.
    pub fn is_io(self) -> bool {
        matches!(self, Self::Io | Self::SqliteIo)
    }
}

impl std::fmt::Display for FaultCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoErrno(kind) => write!(f, "{kind:?}"),
            Self::OtherErrno(raw) => write!(f, "errno {raw}"),
            named => {
                let name = Self::NAMED
                    .iter()
                    .find(|(c, _)| c == named)
                    .map_or("?", |(_, n)| n);
                f.write_str(name)
            }
        }
    }
}

impl serde::Serialize for FaultCause {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The kinds an I/O error without an errno is likely to have, as `NoErrno` names them.
const KINDS: [io::ErrorKind; 8] = [
    io::ErrorKind::Other,
    io::ErrorKind::UnexpectedEof,
    io::ErrorKind::InvalidData,
    io::ErrorKind::InvalidInput,
    io::ErrorKind::WriteZero,
    io::ErrorKind::Interrupted,
    io::ErrorKind::TimedOut,
    io::ErrorKind::OutOfMemory,
];

impl std::str::FromStr for FaultCause {
    type Err = String;

    /// The cause as the wire names it (`Display`): a kind not in `KINDS` reads as `Other`.
    fn from_str(name: &str) -> Result<Self, String> {
        if let Some((cause, _)) = Self::NAMED.iter().find(|(_, n)| *n == name) {
            return Ok(*cause);
        }
        if let Some(raw) = name.strip_prefix("errno ") {
            return raw
                .parse()
                .map(Self::OtherErrno)
                .map_err(|_| format!("not an errno: {name:?}"));
        }
        let kind = KINDS.into_iter().find(|k| format!("{k:?}") == name);
        Ok(Self::NoErrno(kind.unwrap_or(io::ErrorKind::Other)))
    }
}

impl<'de> serde::Deserialize<'de> for FaultCause {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// One storage failure: its cause in the words a user can search for, and the error itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StorageFault {
    pub cause: FaultCause,
    pub message: String,
}

impl std::fmt::Display for StorageFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.cause)
    }
}

impl StorageFault {
    /// The storage fault behind a failed batch of records; an error of another kind is
    /// reported as what it is, a fault of the index.
    pub fn of_batch(err: &rusqlite::Error) -> Self {
        Self::from_sqlite(err).unwrap_or_else(|| Self {
            cause: FaultCause::Index,
            message: format!(
                "recording a batch failed: {}",
                super::sqlite_errors::describe(err)
            ),
        })
    }

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
        let cause = match code {
            ErrorCode::DiskFull => FaultCause::SqliteFull,
            ErrorCode::SystemIoFailure => FaultCause::SqliteIo,
            ErrorCode::ReadOnly => FaultCause::SqliteReadOnly,
            ErrorCode::CannotOpen => FaultCause::SqliteCannotOpen,
            _ => return None,
        };
        Some(Self {
            cause,
            message: format!(
                "the index cannot be written: {}",
                super::sqlite_errors::describe(err)
            ),
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

/// The cause of an I/O error a store (or a rollback) meets.
pub fn io_cause(err: &io::Error) -> FaultCause {
    let Some(raw) = err.raw_os_error() else {
        return FaultCause::NoErrno(err.kind());
    };
    match Errno::from_raw_os_error(raw) {
        Errno::NOSPC => FaultCause::NoSpace,
        Errno::FBIG => FaultCause::FileTooLarge,
        Errno::IO => FaultCause::Io,
        Errno::DQUOT => FaultCause::Quota,
        Errno::ROFS => FaultCause::ReadOnly,
        Errno::ACCESS => FaultCause::Access,
        Errno::PERM => FaultCause::Permission,
        Errno::NOMEM => FaultCause::NoMemory,
        Errno::MFILE => FaultCause::ProcessFiles,
        Errno::NFILE => FaultCause::SystemFiles,
        other => FaultCause::OtherErrno(other.raw_os_error()),
    }
}

/// Ignore SIGXFSZ, so a file size limit (`ulimit -f`, `prlimit --fsize`) makes a write fail
/// with EFBIG, a storage fault the daemon reports and survives, instead of killing it.
pub fn survive_file_size_limit() {
    // SAFETY: sets the disposition of one signal at start-up, before any thread is spawned.
    #[cfg(unix)]
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
        assert_eq!(StorageFault::from_io("blob", &full).cause.to_string(), "ENOSPC");
        assert_eq!(
            io_cause(&io::Error::from_raw_os_error(libc::EFBIG)).to_string(),
            "EFBIG"
        );
        assert_eq!(
            io_cause(&io::Error::from_raw_os_error(libc::EXDEV)).to_string(),
            "errno 18"
        );
        assert_eq!(io_cause(&io::Error::other("x")).to_string(), "Other");
        let sqlite =
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None);
        let cause = StorageFault::from_sqlite(&sqlite).map(|f| f.cause);
        assert_eq!(cause.map(|c| c.to_string()), Some("SQLITE_FULL".to_string()));
        let json = serde_json::to_string(&FaultCause::Index).unwrap_or_default();
        assert_eq!(json, "\"index_error\"");
        assert!(StorageFault::from_sqlite(&rusqlite::Error::QueryReturnedNoRows).is_none());
    }

    /// Every cause reads back as itself from the name the wire gives it.
    #[test]
    fn causes_read_back() {
        let mut causes: Vec<FaultCause> = FaultCause::NAMED.iter().map(|(c, _)| *c).collect();
        causes.extend([
            FaultCause::OtherErrno(18),
            FaultCause::NoErrno(io::ErrorKind::UnexpectedEof),
        ]);
        causes.extend(KINDS.map(FaultCause::NoErrno));
        for cause in causes {
            let json = serde_json::to_string(&cause).unwrap_or_default();
            let read: FaultCause = serde_json::from_str(&json).unwrap_or(FaultCause::Index);
            assert_eq!(read, cause, "{json}");
        }
        assert!("errno x".parse::<FaultCause>().is_err());
    }
}
