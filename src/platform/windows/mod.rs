//! The Windows implementation. File calls go through `sys` (rustix's words, done with the
//! standard library on paths); the rest is the portable layer's answers where Windows has no
//! more to say, and Windows' own calls where it has (a process's liveness, random bytes).
//! Each item keeps the guarantee of the Linux one or is weaker and says how
//! (docs/platforms.md); none pretends.

use std::io;
use std::path::Path;

use super::sys::fs::{Mode, OFlags};
use super::sys::io::Errno;
use super::sys::{BorrowedFd, OwnedFd};

pub(super) mod dir;
pub(super) mod errno;
pub(super) mod names;
pub(super) mod types;

pub use super::absent::{
    DirReader, EXCHANGE, FANOTIFY, FsSync, HANDLE, NO_ATIME, PROVES_PROCESSES, PeerLookup,
    limit_malloc_arenas, listener_uid, lower_own_priority, name_of, nice_own_thread, parent_of,
    process_start_time, read_ahead, release_freed_memory, rename, rename_exchange, rename_noreplace,
    voluntary_switches,
};

/// One watch of the root's whole subtree (`ReadDirectoryChangesW`'s `bWatchSubtree`): a watch
/// holds its directory open, and Windows keeps a removed directory that anything holds open
/// "delete pending", in the way of its parent's removal, until that handle closes; a rollback
/// that removes nested directories could not. One handle also keeps every event in one order.
pub const WATCH_SUBTREE: bool = true;

pub const SUMMARY: &str = "Windows layer: confinement by a walk that refuses every symlink and junction (checked per component, by path), rollbacks install by rename (no atomic exchange), a flush per file (no syncfs), no sock_diag peer check (the token file guards the API), no process ancestry, no idle priority, no ownership by process (fanotify)";

/// `path` beneath `dir`, one component at a time: a symlink or junction in any component is
/// `ELOOP`, `..`, a drive or an absolute path is `EXDEV`, a component spelled otherwise than
/// the directory spells it is `ENOENT` (`names`). Checked by path, so a component swapped for
/// a junction between the check and the open is followed (docs/platforms.md, G7).
pub fn open_beneath(dir: BorrowedFd<'_>, path: &Path, flags: OFlags) -> super::sys::io::Result<OwnedFd> {
    let parts = super::absent::names_beneath(path)?;
    let Some((last, through)) = parts.split_last() else {
        return super::sys::fs::openat(dir, ".", flags, Mode::empty());
    };
    let mut at = names::join(dir.path(), Path::new(""));
    for name in through {
        at.push(name);
        super::sys::spelled_exactly(&at)?;
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(Errno::LOOP),
            Ok(meta) if !meta.is_dir() => return Err(Errno::NOTDIR),
            Ok(_) => {}
            Err(e) => return Err(Errno::from_io_error(&e).unwrap_or(Errno::IO)),
        }
    }
    let held = super::sys::fs::open(at.as_path(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
    super::sys::fs::openat(&held, *last, flags | OFlags::NOFOLLOW, Mode::empty())
}

/// The name `dir` has for `name` when it spells it otherwise (`names`).
pub fn other_spelling(dir: BorrowedFd<'_>, name: &std::ffi::OsStr) -> Option<Vec<u8>> {
    names::other_spelling(&names::join(dir.path(), Path::new(name))).map(|n| n.into_encoded_bytes())
}

/// Whether the process `pid` has ended: it cannot be opened, or its exit code is set.
pub fn process_gone_or_going(pid: u32, _started: Option<u64>) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: a handle opened here is closed here; `code` is the u32 the call writes.
    unsafe {
        let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if handle.is_null() {
            return true;
        }
        let mut code = 0u32;
        let ended = GetExitCodeProcess(handle, &mut code) != 0 && code != STILL_ACTIVE as u32;
        CloseHandle(handle);
        ended
    }
}

/// Whether `pid` has exited: `process_gone_or_going` tells it exactly here (an exit code).
pub fn process_exited(pid: u32) -> Option<bool> {
    Some(process_gone_or_going(pid, None))
}

/// Bytes from the system's preferred random source (`BCryptGenRandom`).
pub fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    use windows_sys::Win32::Security::Cryptography::{BCRYPT_USE_SYSTEM_PREFERRED_RNG, BCryptGenRandom};
    let len = u32::try_from(buf.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `buf` is valid for `len` bytes for the call's length.
    let status = unsafe {
        BCryptGenRandom(
            std::ptr::null_mut(),
            buf.as_mut_ptr(),
            len,
            BCRYPT_USE_SYSTEM_PREFERRED_RNG,
        )
    };
    if status != 0 {
        return Err(io::Error::other(format!(
            "BCryptGenRandom failed: status {status:#x}"
        )));
    }
    Ok(())
}
