//! What the portable Unix layer and the Windows one both lack, said once: no `/proc`
//! (process ancestry), no glibc allocator to tune, no read-ahead advice, no per-thread usage
//! counters, no idle priority for one thread, no `sock_diag`; and a directory read entry by
//! entry (`readdir`, or `read_dir` on Windows, through `sys::fs::Dir`). Each says what its
//! caller gets instead (docs/platforms.md).

use std::ffi::CStr;
use std::io;

use std::ffi::OsStr;

use super::sys::fs::{AtFlags, FileType, OFlags};
use super::sys::io::Errno;
use super::sys::{AsFd, BorrowedFd};

/// No fanotify: ownership by process is absent (`watch::writers_absent`).
pub const FANOTIFY: bool = false;

/// No `O_PATH`: an entry is looked at through its parent (`statat`, `readlinkat`).
pub const HANDLE: Option<OFlags> = None;

/// No `O_NOATIME`: reads may update the access time (`relatime` makes that rare; NTFS
/// updates it lazily, if at all).
pub const NO_ATIME: OFlags = OFlags::empty();

/// No atomic exchange: a rollback installs with plain renames (install mode `rename`), and
/// its journal recovers a sequence of renames cut short.
pub const EXCHANGE: bool = false;

/// No `/proc` (or no signals): who runs a pid, its program and its start time are unknown,
/// so no pid read from a file is ever proved to be this user's daemon, and `stop` signals
/// none.
pub const PROVES_PROCESSES: bool = false;

/// The names of `path`, relative and beneath its directory, for a walk one component at a
/// time (`open_beneath`): `..`, a root or a drive is `EXDEV`, as `openat2`'s
/// `RESOLVE_BENEATH` says it; `.` is skipped.
pub(super) fn names_beneath(path: &std::path::Path) -> super::sys::io::Result<Vec<&OsStr>> {
    use std::path::Component;
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(Errno::XDEV),
        }
    }
    Ok(names)
}

/// There is no atomic exchange here; `fs::mode` never asks for one (`EXCHANGE` is false), and
/// a call says so as a refusal, which turns the file system's install mode to `rename`.
pub fn rename_exchange(_dir: BorrowedFd<'_>, _a: &OsStr, _b: &OsStr) -> super::sys::io::Result<()> {
    Err(Errno::OPNOTSUPP)
}

/// `renameat`: a rename that replaces the target (`MoveFileEx` on Windows).
pub fn rename(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
) -> super::sys::io::Result<()> {
    super::sys::fs::renameat(from_dir, from, to_dir, to)
}

/// `link` then `unlink`: `link` never replaces a name, so `EEXIST` when `to` exists. A file
/// system without hard links refuses it (the caller installs another way, as when a file
/// system refuses `RENAME_NOREPLACE`).
pub fn rename_noreplace(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
) -> super::sys::io::Result<()> {
    super::sys::fs::linkat(from_dir, from, to_dir, to, AtFlags::empty())?;
    super::sys::fs::unlinkat(from_dir, from, AtFlags::empty())
}

/// No `syncfs` that reports write-back errors: never opened, so every file and directory a
/// batch writes gets its own flush (the path Linux takes on FUSE).
pub struct FsSync {
    pub dev: u64,
    _none: std::convert::Infallible,
}

impl FsSync {
    pub fn open(_root: BorrowedFd<'_>) -> Option<Self> {
        None
    }

    pub fn sync(&self) -> io::Result<()> {
        match self._none {}
    }
}

/// A process's parent is not known (ownership by process is Linux-only anyway).
pub fn parent_of(_pid: u32) -> Option<u32> {
    None
}

/// A process's name is not known.
pub fn name_of(_pid: u32) -> Option<String> {
    None
}

/// When a process started is not known, so a pid alone names it.
pub fn process_start_time(_pid: u32) -> Option<u64> {
    None
}

/// Nothing to tune: the arena limit is glibc's.
pub fn limit_malloc_arenas() {}

/// Nothing to trim: `malloc_trim` is glibc's; other allocators return memory on their own
/// schedule.
pub fn release_freed_memory() {}

/// No read-ahead advice: the file is read as it comes.
pub fn read_ahead(_file: &std::fs::File, _len: u64) {}

/// No per-thread usage counters: the watcher's pacing then pauses at most once per pause
/// in a burst (`watch::pace`).
pub fn voluntary_switches() -> Option<u64> {
    None
}

/// Idle priority is absent: `setpriority(PRIO_PROCESS, 0)` lowers the whole process outside
/// Linux (the engine and the API with it), so the thread runs at normal priority.
pub fn lower_own_priority() {
    tracing::debug!("no idle thread priority on this platform");
}

/// See `lower_own_priority`.
pub fn nice_own_thread() {
    tracing::debug!("no thread nice value on this platform");
}

/// No `sock_diag`: which user is at the other end of a loopback connection cannot be told.
/// "Only the user" rests on the bearer token, readable by its owner only (mode 0600 in a
/// 0700 state directory on Unix, the profile's ACL on Windows): every request must carry it.
pub enum PeerLookup {}

impl PeerLookup {
    pub fn open() -> io::Result<PeerLookup> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no sock_diag on this platform: the token file's permissions guard the API",
        ))
    }

    pub fn uid(
        &mut self,
        _peer: std::net::SocketAddr,
        _local: std::net::SocketAddr,
    ) -> io::Result<Option<u32>> {
        match *self {}
    }
}

/// Unknown without `sock_diag`: the client sends its token only to the address its own
/// `daemon.json` names, kept beside the lock `running_info` checks.
pub fn listener_uid(_url: &str) -> io::Result<Option<u32>> {
    Ok(None)
}

/// A directory's entries, one at a time (`sys::fs::Dir`).
#[derive(Default)]
pub struct DirReader;

impl DirReader {
    /// Calls `each` with every entry's name and type, `.` and `..` included.
    pub fn read(
        &mut self,
        fd: impl AsFd,
        mut each: impl FnMut(&CStr, FileType),
    ) -> super::sys::io::Result<()> {
        for entry in super::sys::fs::Dir::read_from(fd)? {
            let entry = entry?;
            each(entry.file_name(), entry.file_type());
        }
        Ok(())
    }
}
