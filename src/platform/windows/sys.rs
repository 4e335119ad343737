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
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};

/// `FILE_FLAG_BACKUP_SEMANTICS`: opens a directory; `FILE_FLAG_OPEN_REPARSE_POINT`: opens a
/// symlink or junction itself, never what it names.
const BACKUP_SEMANTICS: u32 = 0x0200_0000;
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;

pub use super::windows::dir::Dir;
pub use super::windows::errno::Errno;
use super::windows::errno::{ACCESS_DENIED, errno, retrying, retrying_also};
use super::windows::names;
use super::windows::types::ATTRIBUTE_READONLY;
pub use super::windows::types::{AtFlags, Dev, FileType, Mode, OFlags, RawMode, Stat, identity};

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

/// Opens `path` itself (a symlink or junction included, never followed) to read its
/// attributes, a directory too.
fn open_handle(path: &Path, write: bool) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(BACKUP_SEMANTICS | OPEN_REPARSE_POINT)
        .open(path)
}

/// `name` in the directory `dir`, verbatim (`names`).
fn join(dir: BorrowedFd<'_>, name: &impl Arg) -> PathBuf {
    names::join(dir.path(), &name.path())
}

/// An entry found at `path` only under another spelling of its name (`names`) is none.
pub(crate) fn spelled_exactly(path: &Path) -> io::Result<()> {
    match names::other_spelling(path) {
        Some(_) => Err(Errno::NOENT),
        None => Ok(()),
    }
}

/// A name that would make or replace `path` where an entry of another spelling is (the same
/// name to NTFS) exists.
fn no_other_spelling(path: &Path) -> io::Result<()> {
    match names::other_spelling(path) {
        Some(_) => Err(Errno::EXIST),
        None => Ok(()),
    }
}

/// `open`: a directory is held by its path (after checking it is one), a file opened.
pub fn open(path: impl Arg, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    open_path(path.path(), flags, mode)
}

/// `openat`: `name` in the directory `dir`.
pub fn openat(dir: impl AsFd, name: impl Arg, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let path = join(dir.as_fd(), &name);
    if flags.contains(OFlags::CREATE) {
        no_other_spelling(&path)?;
    } else {
        spelled_exactly(&path)?;
    }
    open_path(path, flags, mode)
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
    let file = retrying(|| options.open(&path)).map_err(errno)?;
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
    spelled_exactly(&path)?;
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
    spelled_exactly(&path)?;
    if flags.contains(AtFlags::REMOVEDIR) {
        // At once as a file is (below): the daemon's own watch holds every directory open,
        // and `RemoveDirectory` would leave the name "delete pending" until that watch ends,
        // so the directory above could not be removed either. Not empty: the usual error.
        if remove_at_once(&path) {
            return Ok(());
        }
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
    let path = match retrying(|| std::fs::rename(&path, &doomed)) {
        Ok(()) => doomed,
        Err(_) => path,
    };
    match retrying(|| std::fs::remove_file(&path)) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && meta.permissions().readonly() => {
            remove_read_only(&path)
        }
        removed => removed.map_err(errno),
    }
}

/// Removes the name of a read-only file: the attribute is taken off through a handle held
/// meanwhile and put back through it once the name is gone, so the file's other names (a
/// hard link: a rollback's temp file installed at its path) stay read-only.
fn remove_read_only(path: &Path) -> io::Result<()> {
    /// `FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES`.
    const ATTRIBUTES: u32 = 0x80 | 0x100;
    let held = std::fs::OpenOptions::new()
        .access_mode(ATTRIBUTES)
        .custom_flags(BACKUP_SEMANTICS | OPEN_REPARSE_POINT)
        .open(path)
        .map_err(errno)?;
    let mut permissions = held.metadata().map_err(errno)?.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    held.set_permissions(permissions.clone()).map_err(errno)?;
    let removed = std::fs::remove_file(path).map_err(errno);
    permissions.set_readonly(true);
    let _ = held.set_permissions(permissions);
    removed
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
/// A target with the read-only attribute is replaced too, as on Unix (where only the
/// directory's permission counts): the attribute is taken off for the rename.
pub fn renameat(from_dir: impl AsFd, from: impl Arg, to_dir: impl AsFd, to: impl Arg) -> io::Result<()> {
    let (from, to) = (join(from_dir.as_fd(), &from), join(to_dir.as_fd(), &to));
    spelled_exactly(&from)?;
    // Another file under another spelling would be replaced; the file itself (a case-only
    // rename) is only renamed.
    if let Some(other) = names::other_spelling(&to)
        && (from.parent() != to.parent() || from.file_name() != Some(other.as_os_str()))
    {
        return Err(Errno::EXIST);
    }
    // Denied while the target is there and writable: another process has it open (a real
    // denial outlasts the retry and is said as it is).
    let held = |e: &std::io::Error| e.raw_os_error() == Some(ACCESS_DENIED) && is_writable(&to);
    match retrying_also(|| std::fs::rename(&from, &to), held) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && is_read_only(&to) => {
            set_read_only(&to, false)?;
            retrying(|| std::fs::rename(&from, &to)).map_err(|e| {
                let _ = set_read_only(&to, true);
                errno(e)
            })
        }
        renamed => renamed.map_err(errno),
    }
}

fn is_writable(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| !m.permissions().readonly())
}

fn is_read_only(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.permissions().readonly())
}

fn set_read_only(path: &Path, read_only: bool) -> io::Result<()> {
    let mut permissions = std::fs::symlink_metadata(path).map_err(errno)?.permissions();
    permissions.set_readonly(read_only);
    std::fs::set_permissions(path, permissions).map_err(errno)
}

/// `linkat`: a hard link (NTFS has them); never over an existing name.
pub fn linkat(
    from_dir: impl AsFd,
    from: impl Arg,
    to_dir: impl AsFd,
    to: impl Arg,
    _flags: AtFlags,
) -> io::Result<()> {
    let (from, to) = (join(from_dir.as_fd(), &from), join(to_dir.as_fd(), &to));
    spelled_exactly(&from)?;
    retrying(|| std::fs::hard_link(&from, &to)).map_err(errno)
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
    let path = join(dir.as_fd(), &name);
    spelled_exactly(&path)?;
    let target = std::fs::read_link(path).map_err(errno)?;
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
