//! Windows: the few POSIX file calls the code makes (`openat`, `statat`, `renameat`,
//! `unlinkat`, …, in rustix's words and types, which the Unix builds take from rustix itself),
//! done with the standard library on paths. A directory "descriptor" is its path, held by
//! name rather than open: a directory held open on Windows cannot be renamed or removed by
//! anyone, which the user's own tools would meet as a sharing violation. A file descriptor
//! is the open file. Weaker than the Unix calls in one way (docs/platforms.md, G7): a name
//! resolved by path can be swapped between the check of each component
//! (`platform::open_beneath`) and its use.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};

/// `FILE_FLAG_BACKUP_SEMANTICS`: opens a directory; `FILE_FLAG_OPEN_REPARSE_POINT`: opens a
/// symlink or junction itself, never what it names.
const BACKUP_SEMANTICS: u32 = 0x0200_0000;
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;
/// `FILE_ATTRIBUTE_READONLY`.
const ATTRIBUTE_READONLY: u32 = 0x1;
/// Seconds from 1601 (Windows' epoch) to 1970 (Unix's).
const EPOCH_DIFFERENCE: i64 = 11_644_473_600;

pub mod io {
    pub use super::Errno;
    pub type Result<T> = std::result::Result<T, Errno>;
}

pub mod fs {
    pub use super::{
        AtFlags, CWD, Dev, Dir, FileType, Mode, OFlags, RawMode, Stat, fchmod, fstat, fsync, linkat, lstat,
        mkdirat, open, openat, readlinkat, renameat, stat, statat, symlinkat, unlinkat,
    };
}

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
        std::io::Error::from(errno.kind())
    }
}

/// An `std::io::Error` as the number the code matches on; `EIO` for any other.
fn errno(err: std::io::Error) -> Errno {
    Errno::from_io_error(&err).unwrap_or(Errno::IO)
}

/// A name the calls take: any string or path.
pub trait Arg {
    fn path(&self) -> PathBuf;
}

impl Arg for &str {
    fn path(&self) -> PathBuf {
        PathBuf::from(self)
    }
}
impl Arg for &OsStr {
    fn path(&self) -> PathBuf {
        PathBuf::from(self)
    }
}
impl Arg for OsString {
    fn path(&self) -> PathBuf {
        PathBuf::from(self)
    }
}
impl Arg for &Path {
    fn path(&self) -> PathBuf {
        self.to_path_buf()
    }
}
impl Arg for &PathBuf {
    fn path(&self) -> PathBuf {
        self.to_path_buf()
    }
}
impl Arg for &CStr {
    fn path(&self) -> PathBuf {
        PathBuf::from(self.to_string_lossy().into_owned())
    }
}
impl Arg for &OsString {
    fn path(&self) -> PathBuf {
        PathBuf::from(self)
    }
}
impl Arg for &String {
    fn path(&self) -> PathBuf {
        PathBuf::from(self.as_str())
    }
}

/// A held file or directory: a directory by its path, a file open.
#[derive(Debug)]
pub struct OwnedFd {
    path: PathBuf,
    file: Option<File>,
}

/// A borrowed [`OwnedFd`], or an open `File`.
#[derive(Debug, Clone, Copy)]
pub enum BorrowedFd<'a> {
    Held(&'a OwnedFd),
    Open(&'a File),
}

pub trait AsFd {
    fn as_fd(&self) -> BorrowedFd<'_>;
}

impl AsFd for OwnedFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        BorrowedFd::Held(self)
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        BorrowedFd::Open(self)
    }
}

impl AsFd for BorrowedFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        *self
    }
}

impl<T: AsFd + ?Sized> AsFd for &T {
    fn as_fd(&self) -> BorrowedFd<'_> {
        (**self).as_fd()
    }
}

impl OwnedFd {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn try_clone(&self) -> std::io::Result<OwnedFd> {
        let file = match &self.file {
            Some(file) => Some(file.try_clone()?),
            None => None,
        };
        Ok(OwnedFd {
            path: self.path.clone(),
            file,
        })
    }

    /// A file opened elsewhere, held with the path it was opened at.
    pub fn of_file(file: File, path: PathBuf) -> Self {
        Self {
            path,
            file: Some(file),
        }
    }
}

/// The current directory: a relative name is taken as it is, an absolute one as it is.
static CWD_FD: OwnedFd = OwnedFd {
    path: PathBuf::new(),
    file: None,
};
pub const CWD: BorrowedFd<'static> = BorrowedFd::Held(&CWD_FD);

impl<'a> BorrowedFd<'a> {
    /// The directory's path (a file opened elsewhere has none the code asks for).
    pub fn path(&self) -> &'a Path {
        match self {
            BorrowedFd::Held(fd) => &fd.path,
            BorrowedFd::Open(_) => Path::new(""),
        }
    }

    /// The open file, when this is one.
    fn file(&self) -> Option<&'a File> {
        match self {
            BorrowedFd::Held(fd) => fd.file.as_ref(),
            BorrowedFd::Open(file) => Some(file),
        }
    }
}

impl From<OwnedFd> for File {
    /// The open file; a directory (held by path) is opened now.
    fn from(fd: OwnedFd) -> File {
        match fd.file {
            Some(file) => file,
            None => open_handle(&fd.path, false).unwrap_or_else(|_| invalid_file()),
        }
    }
}

/// A `File` that fails every call: what a directory that vanished meanwhile becomes.
fn invalid_file() -> File {
    use std::os::windows::io::FromRawHandle;
    // SAFETY: INVALID_HANDLE_VALUE is never closed by Windows and fails every call made on it.
    unsafe { File::from_raw_handle(-1isize as std::os::windows::io::RawHandle) }
}

bitflags::bitflags! {
    /// `open`'s flags, as far as Windows can honour them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct OFlags: u32 {
        const RDONLY = 0;
        const WRONLY = 1;
        const RDWR = 2;
        const CREATE = 0o100;
        const EXCL = 0o200;
        const TRUNC = 0o1000;
        const APPEND = 0o2000;
        const NONBLOCK = 0o4000;
        const DIRECTORY = 0o200000;
        const NOFOLLOW = 0o400000;
        const CLOEXEC = 0o2000000;
    }

    /// `statat`'s and `unlinkat`'s flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct AtFlags: u32 {
        const SYMLINK_NOFOLLOW = 0x100;
        const REMOVEDIR = 0x200;
    }
}

pub type RawMode = u32;
pub type Dev = u64;

/// Permission bits: on Windows only "no write bit" means something (the read-only attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode(RawMode);

impl Mode {
    pub fn empty() -> Self {
        Mode(0)
    }

    pub fn from_raw_mode(mode: RawMode) -> Self {
        Mode(mode)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    RegularFile,
    Directory,
    Symlink,
    Unknown,
}

const S_IFMT: u32 = 0o170_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;

impl FileType {
    pub fn from_raw_mode(mode: RawMode) -> Self {
        match mode & S_IFMT {
            S_IFDIR => FileType::Directory,
            S_IFREG => FileType::RegularFile,
            S_IFLNK => FileType::Symlink,
            _ => FileType::Unknown,
        }
    }

    pub fn is_dir(self) -> bool {
        self == FileType::Directory
    }

    pub fn is_file(self) -> bool {
        self == FileType::RegularFile
    }

    fn of(meta: &std::fs::Metadata) -> Self {
        let kind = meta.file_type();
        if kind.is_symlink() {
            FileType::Symlink
        } else if kind.is_dir() {
            FileType::Directory
        } else if kind.is_file() {
            FileType::RegularFile
        } else {
            FileType::Unknown
        }
    }
}

/// `stat`'s fields the code reads. The mode is made up from the type and the read-only
/// attribute (0644 or 0444; 0755 or 0555 for a directory); the device and inode are the
/// volume's serial number and the file's index; the change time is the last write's.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub st_dev: u64,
    pub st_ino: u64,
    pub st_mode: RawMode,
    pub st_nlink: u64,
    pub st_size: i64,
    pub st_mtime: i64,
    pub st_mtime_nsec: i64,
    pub st_ctime: i64,
    pub st_ctime_nsec: i64,
}

impl Stat {
    fn of(meta: &std::fs::Metadata, file: Option<&File>) -> Self {
        let kind = FileType::of(meta);
        let read_only = meta.file_attributes() & ATTRIBUTE_READONLY != 0;
        let bits = match (kind, read_only) {
            (FileType::Directory, false) => S_IFDIR | 0o755,
            (FileType::Directory, true) => S_IFDIR | 0o555,
            (FileType::Symlink, _) => S_IFLNK | 0o777,
            (_, false) => S_IFREG | 0o644,
            (_, true) => S_IFREG | 0o444,
        };
        let (seconds, nanos) = unix_time(meta.last_write_time());
        let (dev, ino, nlink) = file.and_then(identity).unwrap_or((0, 0, 1));
        Stat {
            st_dev: dev,
            st_ino: ino,
            st_mode: bits,
            st_nlink: nlink,
            st_size: i64::try_from(meta.file_size()).unwrap_or(i64::MAX),
            st_mtime: seconds,
            st_mtime_nsec: nanos,
            st_ctime: seconds,
            st_ctime_nsec: nanos,
        }
    }
}

/// A Windows time (100 ns ticks since 1601) as Unix seconds and nanoseconds.
fn unix_time(ticks: u64) -> (i64, i64) {
    let ticks = i64::try_from(ticks).unwrap_or(i64::MAX);
    (ticks / 10_000_000 - EPOCH_DIFFERENCE, (ticks % 10_000_000) * 100)
}

/// The volume's serial number, the file's index on it, and its number of links.
pub fn identity(file: &File) -> Option<(u64, u64, u64)> {
    use windows_sys::Win32::Storage::FileSystem::{BY_HANDLE_FILE_INFORMATION, GetFileInformationByHandle};
    // SAFETY: plain data, all-zero a valid value, written by the call below.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open for the call's length and `info` is the size it writes.
    let ok = unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) };
    (ok != 0).then(|| {
        let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
        (
            u64::from(info.dwVolumeSerialNumber),
            index,
            u64::from(info.nNumberOfLinks),
        )
    })
}

/// Opens `path` itself (a symlink or junction included, never followed) to read its
/// attributes, a directory too.
fn open_handle(path: &Path, write: bool) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(BACKUP_SEMANTICS | OPEN_REPARSE_POINT)
        .open(path)
}

fn join(dir: BorrowedFd<'_>, name: &impl Arg) -> PathBuf {
    let name = name.path();
    if name.as_os_str() == "." {
        return dir.path().to_path_buf();
    }
    dir.path().join(name)
}

/// `open`: a directory is held by its path (after checking it is one), a file opened.
pub fn open(path: impl Arg, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    open_path(path.path(), flags, mode)
}

/// `openat`: `name` in the directory `dir`.
pub fn openat(dir: impl AsFd, name: impl Arg, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    open_path(join(dir.as_fd(), &name), flags, mode)
}

fn open_path(path: PathBuf, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    if flags.contains(OFlags::NOFOLLOW) && !flags.contains(OFlags::CREATE) {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(Errno::LOOP),
            Ok(_) => {}
            Err(e) => return Err(errno(e)),
        }
    }
    let access = flags.bits() & 3;
    if flags.contains(OFlags::DIRECTORY)
        || (access == OFlags::RDONLY.bits() && !flags.contains(OFlags::CREATE))
    {
        let meta = std::fs::metadata(&path).map_err(errno)?;
        if meta.is_dir() {
            return Ok(OwnedFd { path, file: None });
        }
        if flags.contains(OFlags::DIRECTORY) {
            return Err(Errno::NOTDIR);
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options
        .read(access != OFlags::WRONLY.bits())
        .write(access != OFlags::RDONLY.bits() || flags.contains(OFlags::APPEND))
        .append(flags.contains(OFlags::APPEND))
        .truncate(flags.contains(OFlags::TRUNC));
    if flags.contains(OFlags::CREATE | OFlags::EXCL) {
        options.create_new(true);
    } else if flags.contains(OFlags::CREATE) {
        options.create(true);
    }
    if mode.0 != 0 && mode.0 & 0o222 == 0 {
        options.attributes(ATTRIBUTE_READONLY);
    }
    let file = options.open(&path).map_err(errno)?;
    Ok(OwnedFd {
        path,
        file: Some(file),
    })
}

/// `fstat`: an open file's own attributes; a directory's by its path.
pub fn fstat(fd: impl AsFd) -> io::Result<Stat> {
    let fd = fd.as_fd();
    match fd.file() {
        Some(file) => Ok(Stat::of(&file.metadata().map_err(errno)?, Some(file))),
        None => lstat(fd.path()),
    }
}

/// `lstat`: the entry itself, a symlink not followed.
pub fn lstat(path: impl Arg) -> io::Result<Stat> {
    let path = path.path();
    let meta = std::fs::symlink_metadata(&path).map_err(errno)?;
    let held = open_handle(&path, false).ok();
    Ok(Stat::of(&meta, held.as_ref()))
}

/// `stat`: what the path names, a symlink followed.
pub fn stat(path: impl Arg) -> io::Result<Stat> {
    let path = path.path();
    let meta = std::fs::metadata(&path).map_err(errno)?;
    let held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(BACKUP_SEMANTICS)
        .open(&path)
        .ok();
    Ok(Stat::of(&meta, held.as_ref()))
}

/// `fstatat`: with `SYMLINK_NOFOLLOW`, `lstat`; else `stat`.
pub fn statat(dir: impl AsFd, name: impl Arg, flags: AtFlags) -> io::Result<Stat> {
    let path = join(dir.as_fd(), &name);
    if flags.contains(AtFlags::SYMLINK_NOFOLLOW) {
        lstat(path.as_path())
    } else {
        stat(path.as_path())
    }
}

/// `unlinkat`: a file or symlink; a directory with `REMOVEDIR`. A read-only file is made
/// writable first, as a Unix unlink needs only the directory's permission.
pub fn unlinkat(dir: impl AsFd, name: impl Arg, flags: AtFlags) -> io::Result<()> {
    let path = join(dir.as_fd(), &name);
    if flags.contains(AtFlags::REMOVEDIR) {
        return std::fs::remove_dir(&path).map_err(errno);
    }
    let meta = std::fs::symlink_metadata(&path).map_err(errno)?;
    if meta.file_type().is_symlink() && meta.is_dir() {
        return std::fs::remove_dir(&path).map_err(errno);
    }
    if meta.is_dir() {
        return Err(Errno::ISDIR);
    }
    if remove_at_once(&path) {
        return Ok(());
    }
    // The name freed first by a rename (which another process's open handle does not stop),
    // then the file removed under a name nobody reuses.
    let doomed = unlinked_name(&path);
    let path = match std::fs::rename(&path, &doomed) {
        Ok(()) => doomed,
        Err(_) => path,
    };
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && meta.permissions().readonly() => {
            let mut writable = meta.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            writable.set_readonly(false);
            std::fs::set_permissions(&path, writable).map_err(errno)?;
            std::fs::remove_file(&path).map_err(errno)
        }
        removed => removed.map_err(errno),
    }
}

/// A name beside `path` for a file about to be removed: one of the rollback temp names'
/// form (`.filewatchd-tmp-`), unique to this process and moment.
fn unlinked_name(path: &Path) -> PathBuf {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(".filewatchd-tmp-unlinked{:x}{nanos:x}{n:x}-0", std::process::id());
    path.with_file_name(name)
}

/// Removes the name `path` at once, as a Unix `unlink` does, even while another process (the
/// daemon's own capture, an editor, an indexer) holds the file open: with `DeleteFile` the
/// name would stay, "delete pending", until the last handle closes, and a rollback that puts a
/// file back at that name a moment later would find it taken. POSIX delete semantics
/// (`FILE_DISPOSITION_FLAG_POSIX_SEMANTICS`, NTFS since Windows 10 1709); false where the file
/// system does not have them, and the caller deletes the usual way.
fn remove_at_once(path: &Path) -> bool {
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_DISPOSITION_FLAG_DELETE, FILE_DISPOSITION_FLAG_IGNORE_READONLY_ATTRIBUTE,
        FILE_DISPOSITION_FLAG_POSIX_SEMANTICS, FILE_DISPOSITION_INFO_EX, FileDispositionInfoEx,
        SetFileInformationByHandle,
    };
    /// The `DELETE` access right.
    const DELETE: u32 = 0x0001_0000;
    let Ok(file) = std::fs::OpenOptions::new()
        .access_mode(DELETE)
        .custom_flags(BACKUP_SEMANTICS | OPEN_REPARSE_POINT)
        .open(path)
    else {
        return false;
    };
    let info = FILE_DISPOSITION_INFO_EX {
        Flags: FILE_DISPOSITION_FLAG_DELETE
            | FILE_DISPOSITION_FLAG_POSIX_SEMANTICS
            | FILE_DISPOSITION_FLAG_IGNORE_READONLY_ATTRIBUTE,
    };
    // SAFETY: the handle is open with DELETE access and `info` is the struct the class takes.
    unsafe {
        SetFileInformationByHandle(
            file.as_raw_handle(),
            FileDispositionInfoEx,
            (&info as *const FILE_DISPOSITION_INFO_EX).cast(),
            std::mem::size_of::<FILE_DISPOSITION_INFO_EX>() as u32,
        ) != 0
    }
}

/// `renameat`: replaces the target (`MoveFileEx` with `MOVEFILE_REPLACE_EXISTING`).
pub fn renameat(from_dir: impl AsFd, from: impl Arg, to_dir: impl AsFd, to: impl Arg) -> io::Result<()> {
    std::fs::rename(join(from_dir.as_fd(), &from), join(to_dir.as_fd(), &to)).map_err(errno)
}

/// `linkat`: a hard link (NTFS has them); never over an existing name.
pub fn linkat(
    from_dir: impl AsFd,
    from: impl Arg,
    to_dir: impl AsFd,
    to: impl Arg,
    _flags: AtFlags,
) -> io::Result<()> {
    std::fs::hard_link(join(from_dir.as_fd(), &from), join(to_dir.as_fd(), &to)).map_err(errno)
}

/// `mkdirat`.
pub fn mkdirat(dir: impl AsFd, name: impl Arg, _mode: Mode) -> io::Result<()> {
    std::fs::create_dir(join(dir.as_fd(), &name)).map_err(errno)
}

/// `symlinkat`: a file symlink (creating one needs Developer Mode or the privilege; without
/// it the error says so).
pub fn symlinkat(target: impl Arg, dir: impl AsFd, name: impl Arg) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target.path(), join(dir.as_fd(), &name)).map_err(errno)
}

/// `readlinkat`: a symlink's target, as bytes.
pub fn readlinkat(dir: impl AsFd, name: impl Arg, _reuse: Vec<u8>) -> io::Result<CString> {
    let target = std::fs::read_link(join(dir.as_fd(), &name)).map_err(errno)?;
    CString::new(target.into_os_string().into_encoded_bytes()).map_err(|_| Errno::INVAL)
}

/// `fchmod`: only the write bits count, as the read-only attribute.
pub fn fchmod(fd: impl AsFd, mode: Mode) -> io::Result<()> {
    let fd = fd.as_fd();
    let read_only = mode.0 & 0o222 == 0;
    if let Some(file) = fd.file() {
        let mut permissions = file.metadata().map_err(errno)?.permissions();
        permissions.set_readonly(read_only);
        return file.set_permissions(permissions).map_err(errno);
    }
    let mut permissions = std::fs::symlink_metadata(fd.path()).map_err(errno)?.permissions();
    permissions.set_readonly(read_only);
    std::fs::set_permissions(fd.path(), permissions).map_err(errno)
}

/// `fsync`: a file's `FlushFileBuffers`; a directory's entries are durable once the call
/// that made them returns on NTFS, so there is nothing to flush.
pub fn fsync(fd: impl AsFd) -> io::Result<()> {
    match fd.as_fd().file() {
        Some(file) => file.sync_all().map_err(errno),
        None => Ok(()),
    }
}

/// A directory's listing (`readdir`), `.` and `..` first as on Unix.
pub struct Dir {
    entries: std::vec::IntoIter<io::Result<DirEntry>>,
}

pub struct DirEntry {
    name: CString,
    kind: FileType,
}

impl DirEntry {
    pub fn file_name(&self) -> &CStr {
        &self.name
    }

    pub fn file_type(&self) -> FileType {
        self.kind
    }
}

impl Dir {
    pub fn read_from(fd: impl AsFd) -> io::Result<Dir> {
        let listing = std::fs::read_dir(fd.as_fd().path()).map_err(errno)?;
        let dots = [c".", c".."].map(|name| {
            Ok(DirEntry {
                name: name.to_owned(),
                kind: FileType::Directory,
            })
        });
        let entries = dots.into_iter().chain(listing.map(|entry| {
            let entry = entry.map_err(errno)?;
            let kind = entry.file_type().map_err(errno)?;
            let kind = if kind.is_symlink() {
                FileType::Symlink
            } else if kind.is_dir() {
                FileType::Directory
            } else if kind.is_file() {
                FileType::RegularFile
            } else {
                FileType::Unknown
            };
            let name = CString::new(entry.file_name().into_encoded_bytes()).map_err(|_| Errno::INVAL)?;
            Ok(DirEntry { name, kind })
        }));
        Ok(Dir {
            entries: entries.collect::<Vec<_>>().into_iter(),
        })
    }
}

impl Iterator for Dir {
    type Item = io::Result<DirEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.entries.next()
    }
}
