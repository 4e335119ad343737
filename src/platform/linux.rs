//! The Linux implementation: the calls only Linux has, each the one the daemon was measured
//! with (the hot paths make the same system calls as before this layer existed).

mod peer;
mod priority;

use std::ffi::{CStr, OsStr};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags, RenameFlags, ResolveFlags};

pub use peer::{PeerLookup, listener_uid};
pub use priority::{lower_own_priority, nice_own_thread};

pub const SUMMARY: &str = "linux: confinement by openat2, the atomic exchange, syncfs, the sock_diag peer check, /proc, idle I/O priority";

/// fanotify names each file's writers, with `CAP_SYS_ADMIN` (`watch::writers`).
pub const FANOTIFY: bool = true;

/// One inotify watch per directory: a watch holds no directory open.
pub const WATCH_SUBTREE: bool = false;

/// `O_PATH`: the entry itself, a symlink included, opened without reading it.
pub const HANDLE: Option<OFlags> = Some(OFlags::PATH);

/// `O_NOATIME`: a first index does not write every inode of an old checkout.
pub const NO_ATIME: OFlags = OFlags::NOATIME;

/// `RENAME_EXCHANGE` exists (a file system may still refuse it: `fs::mode`).
pub const EXCHANGE: bool = true;

/// `/proc` says who runs a pid, its program and when it started: a pid read from a file can
/// be proved to be this user's daemon before it is signalled (`instance::process`).
pub const PROVES_PROCESSES: bool = true;

/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: one call that
/// refuses a symlink in any component (`ELOOP`) and any way out of `dir` (`EXDEV`). The path
/// must be under `PATH_MAX`; `fs::deep` cuts longer ones.
///
/// Where the kernel has no `openat2` (before 5.6, or qemu-user running another
/// architecture's binary: `ENOSYS`), the portable layer's walk confines instead: one `openat`
/// with `O_NOFOLLOW` per component, as on macOS (docs/platforms.md, G7), said once in the log.
pub fn open_beneath(dir: BorrowedFd<'_>, path: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
            Err(rustix::io::Errno::NOSYS) => {
                if !NO_OPENAT2.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "this kernel has no openat2: paths are confined by a walk that opens each component with O_NOFOLLOW instead"
                    );
                }
            }
            opened => return opened,
        }
    }
    super::portable::open_beneath(dir, path, flags)
}

/// `renameat2(RENAME_EXCHANGE)` of two names in one directory.
pub fn rename_exchange(dir: BorrowedFd<'_>, a: &OsStr, b: &OsStr) -> rustix::io::Result<()> {
    rustix::fs::renameat_with(dir, a, dir, b, RenameFlags::EXCHANGE)
}

/// `renameat2` without flags: a rename that replaces the target, the call tests trace (and
/// inject faults into) as `renameat2`.
pub fn rename(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
) -> rustix::io::Result<()> {
    rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::empty())
}

/// `renameat2(RENAME_NOREPLACE)`: `EEXIST` when `to` exists.
pub fn rename_noreplace(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
) -> rustix::io::Result<()> {
    rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE)
}

/// Many changes made durable in one go: one `syncfs(2)` of the workspace's file system
/// instead of an `fsync(2)` per file and per directory. It writes back every dirty file,
/// inode and directory block of that file system and flushes the disk's cache, so a
/// rollback's temp files are durable before the first rename makes one visible at the cost
/// of one flush instead of thousands; a second one makes the renames durable.
///
/// `syncfs` reports a write-back error of its file system that happened since its descriptor
/// was opened (Linux 5.8 and later; before, it always succeeded): the descriptor is opened
/// before the first write it covers, and on older kernels nothing is batched.
///
/// On FUSE, `syncfs` is not durable: the kernel writes its own dirty pages to the server but
/// asks it to sync nothing (only virtiofs gets `FUSE_SYNCFS`), so a server that caches writes
/// (LazyFS, sshfs, rclone's VFS cache) keeps them in memory through a power cut, and a file
/// renamed into place is found empty afterwards (tests/power_loss.rs). There nothing is
/// batched either: each file and directory gets its own `fsync`, which the server does get.
pub struct FsSync {
    fd: OwnedFd,
    /// Its device: a file elsewhere (a mount inside the workspace) is not covered.
    pub dev: u64,
}

/// The first kernel whose `syncfs` reports write-back errors.
const REPORTS_ERRORS_SINCE: (u32, u32) = (5, 8);

impl FsSync {
    /// Opens the root (held open as `root`) for a batch. `None` when this kernel's `syncfs`
    /// would hide an error, the root's file system would not make it durable (FUSE), or the
    /// root cannot be opened for it: each file is then fsynced on its own.
    pub fn open(root: BorrowedFd<'_>) -> Option<Self> {
        if !kernel_reports_errors() {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = open_beneath(root, Path::new("."), flags).ok()?;
        if !syncfs_is_durable(rustix::fs::fstatfs(&fd).ok()?.f_type) {
            return None;
        }
        let dev = rustix::fs::fstat(&fd).ok()?.st_dev;
        Some(Self { fd, dev })
    }

    /// Every change to the file system so far is durable; an error says some write-back since
    /// this was opened failed (which one, it does not say).
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::syncfs(&self.fd).map_err(io::Error::from)
    }
}

/// Whether `syncfs` makes a file system of this `statfs` type durable.
fn syncfs_is_durable(f_type: i64) -> bool {
    f_type != super::FUSE_SUPER_MAGIC
}

fn kernel_reports_errors() -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    parse_release(&release).is_some_and(|version| version >= REPORTS_ERRORS_SINCE)
}

/// `6.18.44-foo` → (6, 18).
fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The parent of `pid` (`/proc/<pid>/stat`'s fourth field; the name before it may hold
/// spaces and parentheses, so the fields are read after the last `)`).
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The command name of `pid` (`/proc/<pid>/comm`).
pub fn name_of(pid: u32) -> Option<String> {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(name.trim_end().to_string())
}

/// When `pid` started, in clock ticks after boot (`/proc/PID/stat` field 22).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// No such process, another one under its pid, a zombie, or one being torn down
/// (`PF_EXITING`), from `/proc/PID/stat`.
pub fn process_gone_or_going(pid: u32, started: Option<u64>) -> bool {
    /// `PF_EXITING` in `/proc/PID/stat` field 9: the process has begun to exit.
    const PF_EXITING: u64 = 0x4;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let Some(after_name) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
        return false;
    };
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let state = fields.first().copied().unwrap_or_default();
    let flags: u64 = fields.get(6).and_then(|f| f.parse().ok()).unwrap_or(0);
    let start: Option<u64> = fields.get(19).and_then(|f| f.parse().ok());
    let reused = started.is_some() && start.is_some() && start != started;
    reused || matches!(state, "Z" | "X" | "x") || flags & PF_EXITING != 0
}

/// Whether `pid` has exited: no such process, or a zombie nobody has reaped yet whose
/// threads have all ended (the main thread of a multi-threaded process is a zombie before the
/// others have let go of its files, and with them its locks). Always known here (`/proc`).
pub fn process_exited(pid: u32) -> Option<bool> {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Some(true);
    };
    let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    let zombie = field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'));
    let threads_ended = field("Threads:")
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n <= 1);
    Some(zombie && threads_ended)
}

/// The real and effective uid of `pid` (`/proc/PID/status`).
pub fn process_uids(pid: u32) -> Option<(u32, u32)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(|id| id.parse::<u32>().ok());
    Some((ids.next()??, ids.next()??))
}

/// The program `pid` runs (`/proc/PID/exe`).
pub fn process_program(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// A process held by a pidfd: a signal sent through it never reaches another process that
/// took its pid meanwhile.
pub struct PinnedProcess(OwnedFd);

impl PinnedProcess {
    /// `Err(SRCH)`: it is gone; another error: no pidfd here (a kernel older than 5.3).
    pub fn open(pid: rustix::process::Pid) -> rustix::io::Result<Option<Self>> {
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).map(|fd| Some(Self(fd)))
    }

    pub fn signal(&self, signal: rustix::process::Signal) -> rustix::io::Result<()> {
        rustix::process::pidfd_send_signal(&self.0, signal)
    }
}

/// `getrandom(2)`.
pub fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    rustix::rand::getrandom(buf, rustix::rand::GetRandomFlags::empty())?;
    Ok(())
}

/// Two malloc arenas instead of glibc's eight per core: readers, walkers and fsync threads
/// each got an arena of their own, and what a batch freed in them lingered until trimmed, so
/// every large batch raised the daemon's peak RSS (W6: ≤ 100 MB). Called once, at start-up.
pub fn limit_malloc_arenas() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets a glibc tunable; it is called before the threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Gives the memory a large batch freed back to the system: glibc keeps it in its arenas (one
/// per reader thread), so the daemon's RSS would stay at its peak for good.
pub fn release_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes no pointer and only walks glibc's own heaps, under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `posix_fadvise(WILLNEED)` window by window; stops at the first refusal.
pub fn read_ahead(file: &std::fs::File, len: u64) {
    const WINDOW: u64 = 128 << 10;
    for offset in (0..len).step_by(WINDOW as usize) {
        let advice = rustix::fs::Advice::WillNeed;
        if rustix::fs::fadvise(file, offset, std::num::NonZeroU64::new(WINDOW), advice).is_err() {
            return;
        }
    }
}

/// This thread's voluntary context switches so far (`RUSAGE_THREAD`).
pub fn voluntary_switches() -> Option<u64> {
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only the struct it is given, which lives through the call.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0;
    ok.then(|| u64::try_from(usage.ru_nvcsw).unwrap_or(0))
}

/// `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`; older kernels lack it, and then std's own
/// descriptors are close-on-exec anyway.
pub fn close_inherited_descriptors() {
    // SAFETY: a plain system call on descriptor numbers; it touches no memory.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC);
    }
}

/// A directory's entries read with `getdents64` into one reused buffer.
#[derive(Default)]
pub struct DirReader {
    buf: Vec<MaybeUninit<u8>>,
}

impl DirReader {
    /// Calls `each` with every entry's name (NUL included) and type, `.` and `..` included.
    pub fn read(&mut self, fd: impl AsFd, mut each: impl FnMut(&CStr, FileType)) -> rustix::io::Result<()> {
        if self.buf.is_empty() {
            self.buf.resize(64 * 1024, MaybeUninit::uninit());
        }
        let mut dir = rustix::fs::RawDir::new(fd, &mut self.buf);
        while let Some(entry) = dir.next() {
            let entry = entry?;
            each(entry.file_name(), entry.file_type());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_release, syncfs_is_durable};

    #[test]
    fn kernel_releases_are_read_by_major_and_minor() {
        assert_eq!(parse_release("6.18.44\n"), Some((6, 18)));
        assert_eq!(parse_release("5.8.0-63-generic"), Some((5, 8)));
        assert_eq!(parse_release("5.10"), Some((5, 10)));
        assert!(parse_release("5.10") > Some((5, 8)) && parse_release("5.7.9") < Some((5, 8)));
        assert_eq!(parse_release("garbage"), None);
    }

    #[test]
    fn only_fuse_is_left_out_of_the_batch() {
        assert!(!syncfs_is_durable(0x6573_5546), "fuse");
        assert!(syncfs_is_durable(0xEF53), "ext4");
        assert!(syncfs_is_durable(0x794C_7630), "overlay");
    }
}
