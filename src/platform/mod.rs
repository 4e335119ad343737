//! What differs between operating systems, behind one small interface, so the rest of the
//! code does not name an OS. Two implementations: `linux` (the calls Linux alone has:
//! `openat2`, `renameat2`'s exchange, `syncfs`, `sock_diag`, `/proc`, idle I/O priority,
//! `getdents`, `close_range`, `malloc_trim`) and `portable` (what any Unix has, macOS
//! included), which a Linux build also gets with the cargo feature `portable`, so CI runs the
//! core scenarios against it. Plain POSIX that every Unix has (`openat` with `O_NOFOLLOW`,
//! `fstat`, `fsync`, `rename`, `link`, `symlinkat`, `fcntl` locks) stays where it is used.
//!
//! Each item keeps its guarantee on both sides or the portable one is honestly weaker, and
//! says so (docs/platforms.md): where a feature is absent its caller reports it (`status`,
//! `doctor`, a clear error), it never pretends.
//!
//! The interface, one line each:
//! - [`open_beneath`]: open a path beneath a directory, following no symlink in any
//!   component, never leaving the directory (G7).
//! - [`HANDLE`]: the flag that opens an entry itself without reading it, a symlink included
//!   (`O_PATH`); `None` where there is none, and callers stat the name in its parent.
//! - [`NO_ATIME`]: reads that leave the access time alone, where the OS has such a flag.
//! - [`EXCHANGE`], [`rename_exchange`]: swap two names atomically; without it a rollback
//!   installs with plain renames (install mode `rename`, which the journal recovers).
//! - [`rename`]: rename over the target; [`rename_noreplace`]: only if there is none.
//! - [`FsSync`]: one flush of a whole file system for a batch; `None` → fsync per file and
//!   directory.
//! - [`lower_own_priority`], [`nice_own_thread`]: idle CPU and I/O priority for a thread whose
//!   work nobody waits for.
//! - [`parent_of`], [`name_of`], [`process_start_time`], [`process_uids`],
//!   [`process_program`], [`process_gone_or_going`], [`process_exited`]: what `/proc` says
//!   of a process; `None` (or "not gone" while the pid exists) where the OS does not say.
//! - [`PROVES_PROCESSES`]: whether those say enough to prove a pid is this user's daemon
//!   before a signal (else `stop` goes through the API alone).
//! - [`PinnedProcess`]: a process held so a signal cannot reach another that took its pid.
//! - [`PeerLookup`], [`listener_uid`]: the uid at the other end of a loopback TCP connection.
//! - [`random_bytes`]: bytes from the kernel's random source.
//! - [`limit_malloc_arenas`], [`release_freed_memory`]: fewer allocator arenas, and memory
//!   the allocator kept handed back to the system (glibc's).
//! - [`read_ahead`]: ask the kernel to read a file ahead.
//! - [`voluntary_switches`]: this thread's voluntary context switches.
//! - [`close_inherited_descriptors`]: every descriptor above stderr closed at exec.
//! - [`DirReader`]: the names and types in an open directory, in big batches.
//! - [`mode_bits`], [`raw_mode`], [`device`], [`fs_type`]: `stat`'s and `statfs`'s fields in
//!   the integer types the code keeps (u32, u64, i64), whatever the OS's own are.
//! - [`WATCH_SUBTREE`]: one watch of the root's subtree instead of one per directory.
//! - [`FANOTIFY`]: whether the kernel can name a file's writers (ownership by process).
//! - [`other_spelling`]: a directory's own spelling of a name it answers to otherwise.
//! - [`SUMMARY`]: which implementation this build has and what it leaves out (`doctor`).

#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
use linux as imp;

// Also compiled into the Linux build: its confined walk stands in for a missing `openat2`,
// and its own tests (the walk) run in every `cargo test`.
#[cfg(unix)]
#[cfg_attr(all(target_os = "linux", not(feature = "portable")), allow(dead_code))]
mod portable;
#[cfg(all(unix, not(all(target_os = "linux", not(feature = "portable")))))]
use portable as imp;

// What the portable layer and the Windows one both lack, said once.
#[cfg_attr(all(target_os = "linux", not(feature = "portable")), allow(dead_code))]
mod absent;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

pub mod ext;

/// `memcmp`, `bcmp`, `memcpy` and `memmove` for the static musl build to export (src/main.rs).
pub mod mem;

/// The file calls in rustix's words: rustix itself on Unix, the standard library on paths
/// on Windows (`windows/sys.rs`).
#[cfg(unix)]
pub mod sys {
    pub use rustix::{fs, io};
    pub use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
}
#[cfg(windows)]
#[path = "windows/sys.rs"]
pub mod sys;

pub use imp::{
    DirReader, EXCHANGE, FANOTIFY, FsSync, HANDLE, NO_ATIME, PROVES_PROCESSES, PeerLookup, SUMMARY,
    WATCH_SUBTREE, limit_malloc_arenas, listener_uid, lower_own_priority, name_of, nice_own_thread,
    open_beneath, parent_of, process_exited, process_gone_or_going, process_start_time, random_bytes,
    read_ahead, release_freed_memory, rename, rename_exchange, rename_noreplace, voluntary_switches,
};
// What signalling a process needs (Windows stops a daemon through its API instead).
#[cfg(unix)]
pub use imp::{PinnedProcess, close_inherited_descriptors, process_program, process_uids};

/// The name the directory `dir` has for `name` when it spells it otherwise (NTFS: other
/// letter case, an 8.3 short name). Windows says so; no Unix call does (a case-insensitive
/// APFS or exFAT directory is caught from its listing instead, `restore::case`).
#[cfg(unix)]
pub fn other_spelling(_dir: sys::BorrowedFd<'_>, _name: &std::ffi::OsStr) -> Option<Vec<u8>> {
    None
}
#[cfg(windows)]
pub use windows::other_spelling;

/// The bytes the code keeps for a name (`OsStr::as_encoded_bytes`) as the name again: on
/// Unix any bytes; on Windows the UTF-8 the names the code keeps are (a name Windows gave
/// that is not, an unpaired surrogate, is one no path can match: `\u{FFFD}`).
pub fn os_str(bytes: &[u8]) -> &std::ffi::OsStr {
    #[cfg(unix)]
    return std::os::unix::ffi::OsStrExt::from_bytes(bytes);
    #[cfg(windows)]
    return std::ffi::OsStr::new(std::str::from_utf8(bytes).unwrap_or("\u{FFFD}"));
}

/// Makes what the open file or directory `fd` holds durable: `fsync`; on macOS
/// `F_FULLFSYNC`, since its `fsync` leaves the data in the disk's own cache (as the standard
/// library's `sync_all` does there).
pub fn sync_fd(fd: sys::BorrowedFd<'_>) -> sys::io::Result<()> {
    #[cfg(target_vendor = "apple")]
    return rustix::fs::fcntl_fullfsync(fd);
    #[cfg(not(target_vendor = "apple"))]
    return sys::fs::fsync(fd);
}

/// The type of the file system holding the open directory or file `fd` (Linux's `statfs`
/// magic numbers; 0 on Windows, where no type the code knows is told apart).
pub fn fs_type_of(fd: sys::BorrowedFd<'_>) -> sys::io::Result<i64> {
    #[cfg(unix)]
    return rustix::fs::fstatfs(fd).map(|statfs| fs_type(&statfs));
    #[cfg(windows)]
    return sys::fs::fstat(fd).map(|_| 0);
}

/// `fs_type_of` of the file system holding `path`.
pub fn fs_type_at(path: &std::path::Path) -> sys::io::Result<i64> {
    #[cfg(unix)]
    return rustix::fs::statfs(path).map(|statfs| fs_type(&statfs));
    #[cfg(windows)]
    return sys::fs::stat(path).map(|_| 0);
}

// The OS's integer types for a file's mode, device and file system type differ (Linux: u32,
// u64, i64; macOS: u16, i32, u32). The code keeps one type for each and converts here, so
// on Linux these are identities (hence the lints allowed).

/// `st_mode` as the u32 the code keeps.
#[allow(clippy::useless_conversion)]
pub fn mode_bits(raw: sys::fs::RawMode) -> u32 {
    u32::from(raw)
}

/// A mode the code keeps as the OS's own type: the type and permission bits all fit in 16.
#[allow(clippy::unnecessary_cast)]
pub fn raw_mode(mode: u32) -> sys::fs::RawMode {
    (mode & 0o177_777) as sys::fs::RawMode
}

/// `st_dev` as the u64 the code keeps (macOS's is signed: its bits are kept).
#[allow(clippy::unnecessary_cast)]
pub fn device(raw: sys::fs::Dev) -> u64 {
    raw as u64
}

/// `statfs`'s `f_type` as the i64 the code keeps (Linux's magic numbers).
#[cfg(unix)]
#[allow(clippy::unnecessary_cast, clippy::cast_lossless)]
pub fn fs_type(statfs: &rustix::fs::StatFs) -> i64 {
    statfs.f_type as i64
}

/// FUSE's `statfs` type (Linux's `FUSE_SUPER_MAGIC`): where `syncfs` is not durable and
/// removed files still open leave `.fuse_hidden` stand-ins (`fs::fuse`).
pub const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;
