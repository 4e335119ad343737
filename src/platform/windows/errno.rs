//! Windows errors as the error numbers the code matches on (`Errno::NOENT`, …), made from the
//! kind the standard library gives each, and the retry of a call another program's hold
//! refused (a sharing violation).

/// An error number with the names the code matches on (`Errno::NOENT`, …), made from the
/// kind the standard library gives a Windows error.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(i32);

impl Errno {
    pub const PERM: Errno = Errno(1);
    pub const NOENT: Errno = Errno(2);
    pub const SRCH: Errno = Errno(3);
    pub const INTR: Errno = Errno(4);
    pub const IO: Errno = Errno(5);
    pub const BADF: Errno = Errno(9);
    pub const AGAIN: Errno = Errno(11);
    pub const NOMEM: Errno = Errno(12);
    pub const ACCESS: Errno = Errno(13);
    pub const BUSY: Errno = Errno(16);
    pub const EXIST: Errno = Errno(17);
    pub const XDEV: Errno = Errno(18);
    pub const NOTDIR: Errno = Errno(20);
    pub const ISDIR: Errno = Errno(21);
    pub const INVAL: Errno = Errno(22);
    pub const NFILE: Errno = Errno(23);
    pub const MFILE: Errno = Errno(24);
    pub const FBIG: Errno = Errno(27);
    pub const NOSPC: Errno = Errno(28);
    pub const ROFS: Errno = Errno(30);
    pub const MLINK: Errno = Errno(31);
    pub const NAMETOOLONG: Errno = Errno(36);
    pub const NOSYS: Errno = Errno(38);
    pub const NOTEMPTY: Errno = Errno(39);
    pub const LOOP: Errno = Errno(40);
    pub const DQUOT: Errno = Errno(122);
    pub const OPNOTSUPP: Errno = Errno(95);
    pub const WOULDBLOCK: Errno = Errno::AGAIN;

    /// The number the code keeps, from `raw_os_error`: a Windows error code, told by its kind.
    pub fn from_raw_os_error(raw: i32) -> Errno {
        errno(std::io::Error::from_raw_os_error(raw))
    }

    /// The number the code keeps for `err`, from its kind.
    pub fn from_io_error(err: &std::io::Error) -> Option<Errno> {
        use std::io::ErrorKind as K;
        Some(match err.kind() {
            K::NotFound => Errno::NOENT,
            K::PermissionDenied => Errno::ACCESS,
            K::AlreadyExists => Errno::EXIST,
            K::DirectoryNotEmpty => Errno::NOTEMPTY,
            K::NotADirectory => Errno::NOTDIR,
            K::IsADirectory => Errno::ISDIR,
            K::StorageFull => Errno::NOSPC,
            K::QuotaExceeded => Errno::DQUOT,
            K::FileTooLarge => Errno::FBIG,
            K::ReadOnlyFilesystem => Errno::ROFS,
            K::InvalidFilename => Errno::NAMETOOLONG,
            K::CrossesDevices => Errno::XDEV,
            K::Unsupported => Errno::OPNOTSUPP,
            K::Interrupted => Errno::INTR,
            K::WouldBlock => Errno::AGAIN,
            K::ResourceBusy => Errno::BUSY,
            K::TooManyLinks => Errno::MLINK,
            K::OutOfMemory => Errno::NOMEM,
            K::InvalidInput => Errno::INVAL,
            _ => return None,
        })
    }

    pub fn raw_os_error(self) -> i32 {
        self.0
    }

    fn kind(self) -> std::io::ErrorKind {
        use std::io::ErrorKind as K;
        match self {
            Errno::NOENT => K::NotFound,
            Errno::ACCESS | Errno::PERM => K::PermissionDenied,
            Errno::EXIST => K::AlreadyExists,
            Errno::NOTEMPTY => K::DirectoryNotEmpty,
            Errno::NOTDIR => K::NotADirectory,
            Errno::ISDIR => K::IsADirectory,
            Errno::NOSPC => K::StorageFull,
            Errno::DQUOT => K::QuotaExceeded,
            Errno::FBIG => K::FileTooLarge,
            Errno::ROFS => K::ReadOnlyFilesystem,
            Errno::NAMETOOLONG => K::InvalidFilename,
            Errno::XDEV => K::CrossesDevices,
            Errno::OPNOTSUPP | Errno::NOSYS => K::Unsupported,
            Errno::INTR => K::Interrupted,
            Errno::AGAIN => K::WouldBlock,
            Errno::BUSY => K::ResourceBusy,
            Errno::NOMEM => K::OutOfMemory,
            Errno::INVAL => K::InvalidInput,
            _ => K::Other,
        }
    }
}

impl std::fmt::Debug for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Errno({:?})", self.kind())
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", std::io::Error::from(self.kind()))
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for std::io::Error {
    fn from(errno: Errno) -> Self {
        if errno == Errno::BUSY {
            return std::io::Error::new(
                errno.kind(),
                "another program has the file open and does not share it (a sharing violation); close it and try again",
            );
        }
        std::io::Error::from(errno.kind())
    }
}

/// An `std::io::Error` as the number the code matches on (a sharing violation as `EBUSY`);
/// `EIO` for any other.
pub(crate) fn errno(err: std::io::Error) -> Errno {
    if matches!(err.raw_os_error(), Some(SHARING_VIOLATION | LOCK_VIOLATION)) {
        return Errno::BUSY;
    }
    Errno::from_io_error(&err).unwrap_or(Errno::IO)
}

/// `ERROR_SHARING_VIOLATION`, `ERROR_LOCK_VIOLATION`: another program holds the file open
/// without sharing it (an editor saving, a virus scanner, an indexer).
const SHARING_VIOLATION: i32 = 32;
const LOCK_VIOLATION: i32 = 33;
/// How long a call refused by a sharing violation is retried: such holds are mostly brief.
const SHARING_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// `ERROR_ACCESS_DENIED`: also what a rename onto a file another process has open without
/// `FILE_SHARE_DELETE` gets (an indexer, a virus scanner, the daemon's own capture reading
/// what a rollback has just written), rather than a sharing violation.
pub(crate) const ACCESS_DENIED: i32 = 5;

/// `op`, again while another program's hold refuses it, until `SHARING_RETRY` has passed;
/// then the refusal, which `errno` says as "busy".
pub(crate) fn retrying<T>(op: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    retrying_also(op, |_| false)
}

/// `retrying`, also while `held` takes an error for another program's hold.
pub(crate) fn retrying_also<T>(
    mut op: impl FnMut() -> std::io::Result<T>,
    held: impl Fn(&std::io::Error) -> bool,
) -> std::io::Result<T> {
    let until = std::time::Instant::now() + SHARING_RETRY;
    let mut pause = std::time::Duration::from_millis(10);
    loop {
        match op() {
            Err(e)
                if (matches!(e.raw_os_error(), Some(SHARING_VIOLATION | LOCK_VIOLATION)) || held(&e))
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(pause); // a retry of a refused call, not a synchronisation
                pause = (pause * 2).min(std::time::Duration::from_millis(200));
            }
            done => return done,
        }
    }
}
