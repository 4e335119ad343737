//! What the standard library's Unix extensions give the code (a new file's permission bits,
//! `O_NOFOLLOW`, a file's owner, device and inode, positioned I/O), in one set of names for
//! every OS. On Windows a file's permissions are its folder's ACL (the state lives under the
//! user's own profile), so the bits asked for are not set; "no symlink followed" opens a
//! symlink itself; a file's owner is taken as the user (no uids); its device and inode are its
//! volume's serial number and its index.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
#[cfg(windows)]
use std::os::windows::fs::{FileExt, OpenOptionsExt};

/// `FILE_FLAG_OPEN_REPARSE_POINT`: a symlink opened itself, never what it names.
#[cfg(windows)]
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;

/// Whether a file's permission bits say who may read it (Unix); on Windows its ACL does, and
/// the bits are made up (`mode_of`), so checks of them are skipped.
pub const PERMISSION_BITS: bool = cfg!(unix);

/// Ways to open a file beyond what `OpenOptions` says everywhere.
pub trait OpenExt {
    /// A new file's permission bits (Unix; the folder's ACL on Windows).
    fn permission_bits(&mut self, mode: u32) -> &mut Self;
    /// Never through a symlink at the last component (`O_NOFOLLOW`).
    fn no_follow(&mut self) -> &mut Self;
    /// `O_NOFOLLOW | O_NONBLOCK`: also never blocking on a FIFO put in the file's place.
    fn no_follow_non_blocking(&mut self) -> &mut Self;
    /// `O_NONBLOCK`: an open that never blocks on a FIFO.
    fn non_blocking(&mut self) -> &mut Self;
}

impl OpenExt for OpenOptions {
    fn permission_bits(&mut self, mode: u32) -> &mut Self {
        #[cfg(unix)]
        self.mode(mode);
        #[cfg(windows)]
        let _ = mode;
        self
    }

    fn no_follow(&mut self) -> &mut Self {
        #[cfg(unix)]
        return self.custom_flags(libc::O_NOFOLLOW);
        #[cfg(windows)]
        return self.custom_flags(OPEN_REPARSE_POINT);
    }

    fn no_follow_non_blocking(&mut self) -> &mut Self {
        #[cfg(unix)]
        return self.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        #[cfg(windows)]
        return self.custom_flags(OPEN_REPARSE_POINT);
    }

    fn non_blocking(&mut self) -> &mut Self {
        #[cfg(unix)]
        return self.custom_flags(libc::O_NONBLOCK);
        #[cfg(windows)]
        return self;
    }
}

/// A new directory's permission bits (Unix; the parent's ACL on Windows).
pub trait DirExt {
    fn permission_bits(&mut self, mode: u32) -> &mut Self;
}

impl DirExt for DirBuilder {
    fn permission_bits(&mut self, mode: u32) -> &mut Self {
        #[cfg(unix)]
        self.mode(mode);
        #[cfg(windows)]
        let _ = mode;
        self
    }
}

/// `path` made absolute with every symlink resolved. On Windows the `\\?\` prefix the
/// system's answer carries is taken off a plain drive path (`C:\work\app`), which is how
/// the user writes it and what every tool takes; a path that needs the prefix keeps it.
pub fn canonical(path: &Path) -> io::Result<std::path::PathBuf> {
    let full = path.canonicalize()?;
    #[cfg(windows)]
    if let Some(plain) = full.to_str().and_then(|s| s.strip_prefix(r"\\?\"))
        && plain.as_bytes().get(1) == Some(&b':')
        && plain.len() < 260
    {
        return Ok(std::path::PathBuf::from(plain));
    }
    Ok(full)
}

/// Makes the entries of the directory `dir` durable: its `fsync` on Unix. On Windows NTFS
/// journals a directory's entries itself and a directory cannot be flushed through a
/// read handle, so there is nothing to do (docs/platforms.md, G13).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    return File::open(dir)?.sync_all();
    #[cfg(windows)]
    return std::fs::metadata(dir).map(|_| ());
}

/// Makes the file at `path` durable: `fsync` through a read-only descriptor on Unix; on
/// Windows `FlushFileBuffers`, which needs a handle open for writing.
pub fn sync_file(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    return File::open(path)?.sync_all();
    #[cfg(windows)]
    return OpenOptions::new().write(true).open(path)?.sync_all();
}

/// Sets the permission bits of `path` (Windows: only "no write bit", as read-only).
pub fn set_permission_bits(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    return std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    #[cfg(windows)]
    {
        let mut permissions = std::fs::symlink_metadata(path)?.permissions();
        permissions.set_readonly(mode & 0o222 == 0);
        std::fs::set_permissions(path, permissions)
    }
}

/// `st_mode`: the type and permission bits (Windows: made up as `sys::fs::Stat`'s are).
pub fn mode_of(meta: &Metadata) -> u32 {
    #[cfg(unix)]
    return meta.mode();
    #[cfg(windows)]
    {
        let kind = if meta.is_dir() { 0o040_755 } else { 0o100_644 };
        if meta.permissions().readonly() {
            kind & !0o222
        } else {
            kind
        }
    }
}

/// Whether what `meta` describes is a file that runs as a program: an executable bit set
/// (Windows: a file; its extension says how it runs).
pub fn is_executable(meta: &Metadata) -> bool {
    #[cfg(unix)]
    return meta.is_file() && meta.mode() & 0o111 != 0;
    #[cfg(windows)]
    return meta.is_file();
}

/// The uid that owns what `meta` describes (Windows: the user's own, see `euid`).
pub fn owner_of(meta: &Metadata) -> u32 {
    #[cfg(unix)]
    return meta.uid();
    #[cfg(windows)]
    {
        let _ = meta;
        euid()
    }
}

/// This process's effective uid (Windows has none: 0 for every process, so every file
/// counts as the user's own; what guards the state is the profile folder's ACL).
pub fn euid() -> u32 {
    #[cfg(unix)]
    return rustix::process::geteuid().as_raw();
    #[cfg(windows)]
    return 0;
}

/// The device and inode of the file or directory `path` names (following a symlink).
pub fn identity(path: &Path) -> io::Result<(u64, u64)> {
    dev_ino(path, true)
}

/// The device and inode of the entry `path` itself (a symlink not followed).
pub fn identity_of_entry(path: &Path) -> io::Result<(u64, u64)> {
    dev_ino(path, false)
}

fn dev_ino(path: &Path, follow: bool) -> io::Result<(u64, u64)> {
    let stat = if follow {
        super::sys::fs::stat(path)
    } else {
        super::sys::fs::lstat(path)
    };
    stat.map(|s| (super::device(s.st_dev), s.st_ino))
        .map_err(Into::into)
}

/// The device and inode of the open `file`.
pub fn identity_of_file(file: &File) -> io::Result<(u64, u64)> {
    #[cfg(unix)]
    return file.metadata().map(|m| (m.dev(), m.ino()));
    #[cfg(windows)]
    return super::sys::identity(file)
        .map(|(dev, ino, _)| (dev, ino))
        .ok_or_else(io::Error::last_os_error);
}

/// Writes all of `buf` at `offset`, the file's position aside.
pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        #[cfg(unix)]
        let wrote = file.write_at(buf, offset)?;
        #[cfg(windows)]
        let wrote = file.seek_write(buf, offset)?;
        if wrote == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        buf = &buf[wrote..];
        offset += wrote as u64;
    }
    Ok(())
}

/// Reads into `buf` at `offset`: how many bytes were read (0 at the end).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    return file.read_at(buf, offset);
    #[cfg(windows)]
    return file.seek_read(buf, offset);
}

/// Takes a write lock on `file` without waiting, held until the file is closed (or the
/// process dies); `false` when another process holds it. An open file description's lock
/// (`F_OFD_SETLK`) on Unix, so a second descriptor of this process cannot take it either;
/// `LockFileEx` on Windows, on a byte far past the end, so the note the file holds stays
/// readable by others (a Windows lock forbids reading what it covers).
pub fn try_write_lock(file: &File) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let lock = whole_file_write_lock();
        // SAFETY: `lock` is a valid `flock` that outlives the call; the descriptor is open.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) } == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN | libc::EACCES) => Ok(false),
            _ => Err(err),
        }
    }
    #[cfg(windows)]
    return windows_lock::try_lock(file);
}

/// Whether another process holds the write lock of `file` (`try_write_lock`).
pub fn is_write_locked(file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut probe = whole_file_write_lock();
        // SAFETY: `probe` is a valid `flock` that outlives the call; the descriptor is open.
        let got = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut probe) };
        got == 0 && probe.l_type != libc::F_UNLCK as libc::c_short
    }
    #[cfg(windows)]
    return windows_lock::is_locked(file);
}

#[cfg(unix)]
fn whole_file_write_lock() -> libc::flock {
    // SAFETY: `flock` is plain data; all-zero is a valid value (whole file, pid 0 as OFD needs).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    // `F_WRLCK` is a c_int on Linux and a c_short on macOS, as `l_type` is.
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock
}

#[cfg(windows)]
mod windows_lock {
    use std::fs::File;
    use std::io;
    use std::os::windows::io::AsRawHandle;

    use windows_sys::Win32::Foundation::ERROR_LOCK_VIOLATION;
    use windows_sys::Win32::Storage::FileSystem::{
        LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx, UnlockFileEx,
    };
    use windows_sys::Win32::System::IO::OVERLAPPED;

    /// The byte locked: far past any note, so reading the note never meets the lock.
    const LOCKED_BYTE_HIGH: u32 = 0x4000_0000;

    fn at_locked_byte() -> OVERLAPPED {
        // SAFETY: OVERLAPPED is plain data; all-zero with an offset is what LockFileEx takes.
        let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
        overlapped.Anonymous.Anonymous.OffsetHigh = LOCKED_BYTE_HIGH;
        overlapped
    }

    pub fn try_lock(file: &File) -> io::Result<bool> {
        let mut overlapped = at_locked_byte();
        let flags = LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY;
        // SAFETY: the handle is open and `overlapped` outlives the call (it does not wait).
        if unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &mut overlapped) } != 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(code) if code == ERROR_LOCK_VIOLATION as i32 => Ok(false),
            _ => Err(err),
        }
    }

    pub fn is_locked(file: &File) -> bool {
        match try_lock(file) {
            Ok(true) => {
                let mut overlapped = at_locked_byte();
                // SAFETY: as in `try_lock`; the byte was just locked by this handle.
                unsafe { UnlockFileEx(file.as_raw_handle(), 0, 1, 0, &mut overlapped) };
                false
            }
            Ok(false) => true,
            Err(_) => false,
        }
    }
}

/// The space free for this user and the size of the file system holding `path`, in bytes.
pub fn disk_space(path: &Path) -> io::Result<(u64, u64)> {
    #[cfg(unix)]
    {
        let fs = rustix::fs::statvfs(path)?;
        Ok((
            fs.f_bavail.saturating_mul(fs.f_frsize),
            fs.f_blocks.saturating_mul(fs.f_frsize),
        ))
    }
    #[cfg(windows)]
    {
        use std::os::windows::ffi::OsStrExt;
        use windows_sys::Win32::Storage::FileSystem::GetDiskFreeSpaceExW;
        let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
        let (mut free, mut total) = (0u64, 0u64);
        // SAFETY: `wide` is NUL-terminated and the counts are u64s the call writes.
        let ok = unsafe { GetDiskFreeSpaceExW(wide.as_ptr(), &mut free, &mut total, std::ptr::null_mut()) };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((free, total))
    }
}

/// Makes `file` the process's stdout and stderr: `dup2` on Unix (atomic, so a line written
/// meanwhile goes to the old file or the new one); `SetStdHandle` on Windows, where std asks
/// for the handle at every write.
pub fn redirect_output(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    for target in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        use std::os::fd::AsRawFd;
        // SAFETY: both descriptors are valid; dup2 replaces the target atomically.
        if unsafe { libc::dup2(file.as_raw_fd(), target) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(windows)]
    for target in [
        windows_sys::Win32::System::Console::STD_OUTPUT_HANDLE,
        windows_sys::Win32::System::Console::STD_ERROR_HANDLE,
    ] {
        use std::os::windows::io::IntoRawHandle;
        // The handle is given away to the process's standard streams, never closed here.
        let handle = file.try_clone()?.into_raw_handle();
        // SAFETY: `handle` is an open file handle the process keeps from now on.
        if unsafe { windows_sys::Win32::System::Console::SetStdHandle(target, handle) } == 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The size of what stderr writes to, when that is a regular file.
pub fn stderr_file_size() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: stderr stays open for the life of the process; the borrow ends here.
        let stderr = unsafe { std::os::fd::BorrowedFd::borrow_raw(libc::STDERR_FILENO) };
        let stat = rustix::fs::fstat(stderr).ok()?;
        let file = rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile;
        file.then_some(stat.st_size as u64)
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle};
        let handle = std::io::stderr().as_handle().as_raw_handle();
        // SAFETY: stderr's handle stays open; the File is forgotten, never closed.
        let file = std::mem::ManuallyDrop::new(unsafe { File::from_raw_handle(handle) });
        let meta = file.metadata().ok()?;
        meta.is_file().then_some(meta.len())
    }
}

/// The user's home directory: `$HOME`; on Windows, where it is seldom set, `%USERPROFILE%`
/// after it (where the agents keep their settings, `.claude`, `.codex`, …).
pub fn home_dir() -> Option<std::path::PathBuf> {
    let set = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    #[cfg(windows)]
    return set("HOME").or_else(|| set("USERPROFILE"));
    #[cfg(unix)]
    return set("HOME");
}

/// This process's parent (0 where the OS does not say).
pub fn parent_id() -> u32 {
    #[cfg(unix)]
    return std::os::unix::process::parent_id();
    #[cfg(windows)]
    return 0;
}
