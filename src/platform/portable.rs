//! The portable implementation: what any Unix has (macOS's, and a Linux build's with the
//! feature `portable`). Each item keeps the guarantee of the Linux one or is weaker and says
//! how (docs/platforms.md); none pretends.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// One watch per directory, as on Linux (notify's FSEvents backend takes each path).
pub const WATCH_SUBTREE: bool = false;

#[cfg_attr(all(target_os = "linux", not(feature = "portable")), allow(unused_imports))]
pub use super::absent::{
    DirReader, EXCHANGE, FANOTIFY, FsSync, HANDLE, NO_ATIME, PROVES_PROCESSES, PeerLookup,
    limit_malloc_arenas, listener_uid, lower_own_priority, name_of, nice_own_thread, parent_of,
    process_start_time, read_ahead, release_freed_memory, rename, rename_exchange, rename_noreplace,
    voluntary_switches,
};

pub const SUMMARY: &str = "portable Unix layer: confinement by a walk with O_NOFOLLOW, rollbacks install by rename (no atomic exchange), an fsync per file and directory (no syncfs), no sock_diag peer check (the token file guards the API), no /proc (no process ancestry or pidfd), no idle priority, no ownership by process (fanotify)";

/// `path` opened beneath `dir` one component at a time, each directory with
/// `openat(O_NOFOLLOW | O_DIRECTORY)` and the last with `flags | O_NOFOLLOW`: no symlink is
/// followed in any component (a symlink found is `ELOOP`, as `openat2`'s
/// `RESOLVE_NO_SYMLINKS` says it), and `..` or an absolute path is `EXDEV`, as
/// `RESOLVE_BENEATH` says it. One `openat` per component instead of one call; a directory
/// on the way must be readable (Linux's `openat2` needs search permission only).
pub fn open_beneath(dir: BorrowedFd<'_>, path: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    let names = super::absent::names_beneath(path)?;
    let Some((last, through)) = names.split_last() else {
        return rustix::fs::openat(dir, ".", flags, Mode::empty());
    };
    let walk = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut held: Option<OwnedFd> = None;
    for name in through {
        let at = held.as_ref().map_or(dir, AsFd::as_fd);
        let next =
            rustix::fs::openat(at, *name, walk, Mode::empty()).map_err(|e| symlink_is_loop(at, name, e))?;
        held = Some(next);
    }
    let at = held.as_ref().map_or(dir, AsFd::as_fd);
    rustix::fs::openat(at, *last, flags | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|e| symlink_is_loop(at, last, e))
}

/// `O_NOFOLLOW | O_DIRECTORY` on a symlink is `ENOTDIR` on Linux: said as `ELOOP`, what a
/// symlink in the way is everywhere else in this code.
fn symlink_is_loop(at: BorrowedFd<'_>, name: &OsStr, err: Errno) -> Errno {
    if err != Errno::NOTDIR && err != Errno::LOOP {
        return err;
    }
    match rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => Errno::LOOP,
        _ => err,
    }
}

/// Without `/proc` only "no such process" can be told (`kill(pid, 0)` says `ESRCH`): a pid
/// that exists is taken as running, whether it is a zombie, exiting or another process that
/// took the pid. The safe side: a lock is not taken from a process that may still hold it.
pub fn process_gone_or_going(pid: u32, _started: Option<u64>) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return true;
    };
    rustix::process::test_kill_process(pid) == Err(Errno::SRCH)
}

/// Without `/proc` only "no such process" is known (`kill(pid, 0)` says `ESRCH`): a zombie
/// nobody reaped yet cannot be told from a running process, so anything else is unknown
/// (`None`) and a caller waiting for an exit looks for other signs (the locks let go of).
pub fn process_exited(pid: u32) -> Option<bool> {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return Some(true);
    };
    (rustix::process::test_kill_process(pid) == Err(Errno::SRCH)).then_some(true)
}

/// No `/proc`: who runs a process is unknown, so `stop` signals no pid it cannot prove ours.
pub fn process_uids(_pid: u32) -> Option<(u32, u32)> {
    None
}

/// No `/proc`: the program a process runs is unknown.
pub fn process_program(_pid: u32) -> Option<std::path::PathBuf> {
    None
}

/// No pidfd: a process is signalled by its pid (after the checks `instance::process` makes).
pub enum PinnedProcess {}

impl PinnedProcess {
    pub fn open(_pid: rustix::process::Pid) -> rustix::io::Result<Option<Self>> {
        Ok(None)
    }

    pub fn signal(&self, _signal: rustix::process::Signal) -> rustix::io::Result<()> {
        match *self {}
    }
}

/// `/dev/urandom`, which every Unix has.
pub fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// No `close_range`: std opens every descriptor of its own close-on-exec, which is what the
/// Linux call makes sure of for the rest.
pub fn close_inherited_descriptors() {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk refuses a symlink in the middle and at the end, `..` and an absolute path.
    #[test]
    fn the_walk_follows_no_symlink_and_stays_beneath() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join("a/b")).expect("dirs");
        std::fs::write(root.path().join("a/b/f"), b"x").expect("file");
        std::os::unix::fs::symlink("b", root.path().join("a/link")).expect("symlink");
        let dir =
            rustix::fs::open(root.path(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).expect("root");
        let open = |p: &str, flags| open_beneath(dir.as_fd(), Path::new(p), flags).err();
        assert_eq!(open("a/b/f", OFlags::RDONLY), None);
        assert_eq!(open("./a/b", OFlags::RDONLY | OFlags::DIRECTORY), None);
        assert_eq!(open("a/link/f", OFlags::RDONLY), Some(Errno::LOOP));
        assert_eq!(open("a/link", OFlags::RDONLY), Some(Errno::LOOP));
        assert_eq!(
            open("a/link", OFlags::RDONLY | OFlags::DIRECTORY),
            Some(Errno::LOOP)
        );
        assert_eq!(open("a/../a/b/f", OFlags::RDONLY), Some(Errno::XDEV));
        assert_eq!(open("/etc/passwd", OFlags::RDONLY), Some(Errno::XDEV));
        assert_eq!(open("a/nothing/f", OFlags::RDONLY), Some(Errno::NOENT));
    }

    /// A no-replace rename by link and unlink: never over an existing name, and the temp
    /// name gone once it went through.
    #[test]
    fn a_no_replace_rename_never_replaces() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::write(root.path().join("temp"), b"new").expect("temp");
        std::fs::write(root.path().join("there"), b"old").expect("there");
        let dir =
            rustix::fs::open(root.path(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).expect("root");
        let rename =
            |from: &str, to: &str| rename_noreplace(dir.as_fd(), from.as_ref(), dir.as_fd(), to.as_ref());
        assert_eq!(rename("temp", "there"), Err(Errno::EXIST));
        assert_eq!(std::fs::read(root.path().join("there")).expect("read"), b"old");
        assert_eq!(rename("temp", "free"), Ok(()));
        assert_eq!(std::fs::read(root.path().join("free")).expect("read"), b"new");
        assert!(!root.path().join("temp").exists());
    }
}
