//! The restorer's file-system operations, confined beneath the root: every
//! operation goes through the directory that holds the path, opened confined
//! (`platform::open_beneath`: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` on Linux, a
//! walk with `O_NOFOLLOW` elsewhere), so no symlink anywhere on the way is followed and
//! nothing outside the root can be reached. New content is written to a temp file in the
//! same directory, made durable (its own fsync, or a batch's `syncfs`), then renamed into
//! place; a create never clobbers a path that appeared meanwhile
//! (`platform::rename_noreplace`).

use crate::platform::sys::{AsFd, OwnedFd};
use std::io::{self, Write};

use crate::platform::sys::fs::{AtFlags, Mode, OFlags};
use crate::platform::sys::io::Errno;

use super::fuse;
use super::read::RootDir;
use crate::model::{FileState, PERMISSION_BITS, StatKey};
use crate::paths::RelPath;

/// Why an operation on one path could not be done.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("a symlink is in the way at or above {0}; filewatchd never writes through one")]
    SymlinkInTheWay(String),
    #[error("its directory {0} does not exist (or is not a directory)")]
    NoParent(String),
    #[error("something appeared at {0} meanwhile; it was left alone")]
    Appeared(String),
    #[error("{0} is not empty (it holds untracked files); it was kept")]
    NotEmpty(String),
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

fn io_err(path: &RelPath, e: impl Into<io::Error>) -> FsError {
    FsError::Io {
        path: path.to_text(),
        source: e.into(),
    }
}

/// How a temp file is made durable before it is renamed into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durable {
    /// Its own fsync.
    Fsync,
    /// The batch's one `syncfs` of the file system `dev` covers it (`fs::sync`), before any
    /// of the batch is installed; a file that lands on another file system (a mount inside
    /// the workspace) gets its own fsync.
    Batch { dev: u64 },
}

impl Durable {
    fn make(self, file: &std::fs::File, stat: StatKey) -> io::Result<()> {
        match self {
            Durable::Batch { dev } if dev == stat.dev => Ok(()),
            _ => file.sync_all(),
        }
    }
}

/// The directory holding one path, and the path's name in it.
pub struct Parent {
    pub fd: OwnedFd,
    pub name: Vec<u8>,
}

impl RootDir {
    /// Opens the directory that holds `path`, refusing symlinks on the way.
    pub fn parent_of(&self, path: &RelPath) -> Result<Parent, FsError> {
        let name = path.file_name().to_vec();
        let dir = path.parent();
        // No O_NOFOLLOW: with O_DIRECTORY it turns a symlink into ENOTDIR; the confined open
        // refuses a symlink in every component, the last included, with ELOOP.
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let opened = match &dir {
            Some(dir) => super::deep::open_beneath(self.fd(), dir.as_path(), flags),
            None => crate::platform::open_beneath(self.fd().as_fd(), std::path::Path::new("."), flags),
        };
        let shown = dir.as_ref().map_or_else(|| ".".to_string(), RelPath::to_text);
        match opened {
            Ok(fd) => Ok(Parent { fd, name }),
            Err(Errno::LOOP | Errno::XDEV) => Err(FsError::SymlinkInTheWay(shown)),
            Err(Errno::NOENT | Errno::NOTDIR) => Err(FsError::NoParent(shown)),
            Err(e) => Err(io_err(path, e)),
        }
    }
}

impl Parent {
    fn name(&self) -> &std::ffi::OsStr {
        crate::platform::os_str(&self.name)
    }

    /// Whether `name` answers in this directory: an `lstat` finds an entry, spelled so or, on a
    /// file system that does not tell names apart by case, otherwise.
    pub fn answers_to(&self, name: &[u8]) -> bool {
        let name = crate::platform::os_str(name);
        crate::platform::sys::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// The name this directory has for `name` when it spells it otherwise (Windows: other
    /// letter case, an 8.3 short name); `None` elsewhere, where no call says it.
    pub fn other_spelling(&self, name: &[u8]) -> Option<Vec<u8>> {
        crate::platform::other_spelling(self.fd.as_fd(), crate::platform::os_str(name))
    }

    /// The names this directory lists, spelled as it spells them; `None` when it cannot be read.
    pub fn listing(&self) -> Option<std::collections::HashSet<Vec<u8>>> {
        let dir = crate::platform::sys::fs::Dir::read_from(&self.fd).ok()?;
        dir.map(|entry| entry.ok().map(|e| e.file_name().to_bytes().to_vec()))
            .collect()
    }

    /// lstat of the path, `None` when it does not exist.
    pub fn stat(&self, path: &RelPath) -> Result<Option<crate::platform::sys::fs::Stat>, FsError> {
        match crate::platform::sys::fs::statat(&self.fd, self.name(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// Removes a file or symlink; already gone is fine.
    pub fn unlink(&self, path: &RelPath) -> Result<(), FsError> {
        match crate::platform::sys::fs::unlinkat(&self.fd, self.name(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// Removes an empty directory; already gone is fine; one still holding files is kept. One
    /// holding nothing but FUSE stand-ins is tried again until they go, for a moment (`fuse`).
    pub fn rmdir(&self, path: &RelPath) -> Result<(), FsError> {
        fuse::waiting_for_stand_ins(
            || self.rmdir_once(path),
            |e| matches!(e, FsError::NotEmpty(_)),
            || self.holds_only_stand_ins(),
        )
    }

    fn rmdir_once(&self, path: &RelPath) -> Result<(), FsError> {
        match crate::platform::sys::fs::unlinkat(&self.fd, self.name(), AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(Errno::NOTEMPTY | Errno::EXIST) => Err(FsError::NotEmpty(path.to_text())),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// Whether the directory of this name lists entries, all of them FUSE stand-ins.
    fn holds_only_stand_ins(&self) -> bool {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let Ok(fd) = crate::platform::sys::fs::openat(&self.fd, self.name(), flags, Mode::empty()) else {
            return false;
        };
        let Ok(dir) = crate::platform::sys::fs::Dir::read_from(&fd) else {
            return false;
        };
        let mut any = false;
        for entry in dir {
            let Ok(entry) = entry else {
                return false;
            };
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if !fuse::is_stand_in(name) {
                return false;
            }
            any = true;
        }
        any
    }

    /// Creates a directory; an existing directory is fine, anything else there is not.
    pub fn mkdir(&self, path: &RelPath) -> Result<(), FsError> {
        match crate::platform::sys::fs::mkdirat(&self.fd, self.name(), Mode::from_raw_mode(0o755)) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => match self.stat(path)? {
                Some(st) if crate::platform::sys::fs::FileType::from_raw_mode(st.st_mode).is_dir() => Ok(()),
                _ => Err(FsError::Appeared(path.to_text())),
            },
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// Writes `bytes` with `mode` to a new temp file beside the path (never one that exists:
    /// a file of that name is someone else's), durable as `durable` says. Returns its stat
    /// once written: the check after installing it compares the path with it.
    ///
    /// G3: the file is never readable by more than `mode` allows, not even while it is
    /// written: it is created with `mode`'s permission bits (the umask can only narrow them;
    /// the descriptor writes whatever they are), and set to exactly `mode` once written
    /// (after the write, which would clear set-user-ID and set-group-ID bits), whatever the
    /// umask took away.
    pub fn write_temp(
        &self,
        path: &RelPath,
        temp: &str,
        bytes: &[u8],
        mode: u32,
        durable: Durable,
    ) -> Result<StatKey, FsError> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = crate::platform::sys::fs::openat(
            &self.fd,
            temp,
            flags,
            Mode::from_raw_mode(crate::platform::raw_mode(mode & 0o777)),
        )
        .map_err(|e| io_err(path, e))?;
        let mut file = std::fs::File::from(fd);
        let written = file
            .write_all(bytes)
            .and_then(|()| {
                crate::platform::sys::fs::fchmod(
                    file.as_fd(),
                    Mode::from_raw_mode(crate::platform::raw_mode(mode)),
                )
                .map_err(io::Error::from)
            })
            .and_then(|()| crate::platform::sys::fs::fstat(file.as_fd()).map_err(io::Error::from))
            .map(|stat| StatKey::from_rustix(&stat))
            .and_then(|stat| durable.make(&file, stat).map(|()| stat));
        written.map_err(|e| {
            let _ = crate::platform::sys::fs::unlinkat(&self.fd, temp, AtFlags::empty());
            io_err(path, e)
        })
    }

    /// Creates a symlink under a (new) temp name beside the path.
    pub fn symlink_temp(&self, path: &RelPath, temp: &str, target: &[u8]) -> Result<(), FsError> {
        crate::platform::sys::fs::symlinkat(crate::platform::os_str(target), &self.fd, temp)
            .map_err(|e| io_err(path, e))
    }

    /// Renames the temp file onto the path: replacing what is there, or only if nothing is.
    pub fn install(&self, path: &RelPath, temp: &str, replace: bool) -> Result<(), FsError> {
        let temp_name = std::ffi::OsStr::new(temp);
        let renamed = if replace {
            crate::platform::rename(self.fd.as_fd(), temp_name, self.fd.as_fd(), self.name())
        } else {
            crate::platform::rename_noreplace(self.fd.as_fd(), temp_name, self.fd.as_fd(), self.name())
        };
        match renamed {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => {
                let _ = crate::platform::sys::fs::unlinkat(&self.fd, temp, AtFlags::empty());
                Err(FsError::Appeared(path.to_text()))
            }
            // The file system refuses the flag (FUSE, NFS): the caller installs it otherwise.
            Err(e) if !replace && super::mode::refused(&e.into()) => Err(io_err(path, e)),
            Err(e) => {
                let _ = crate::platform::sys::fs::unlinkat(&self.fd, temp, AtFlags::empty());
                Err(io_err(path, e))
            }
        }
    }

    /// Mode `rename` (a file system that refuses `RENAME_EXCHANGE`): a second name `temp` for
    /// the file at the path (its inode kept, to be compared once a plain rename has replaced
    /// it). The path gone is `Appeared`.
    pub fn link_aside(&self, path: &RelPath, temp: &str) -> Result<(), FsError> {
        match crate::platform::sys::fs::linkat(&self.fd, self.name(), &self.fd, temp, AtFlags::empty()) {
            Ok(()) => Ok(()),
            Err(Errno::NOENT) => Err(FsError::Appeared(path.to_text())),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// Mode `rename`'s create: the temp file linked at the path, never over anything there
    /// (`Appeared`); the temp name is the caller's to remove.
    pub fn link_in(&self, path: &RelPath, temp: &str) -> Result<(), FsError> {
        match crate::platform::sys::fs::linkat(&self.fd, temp, &self.fd, self.name(), AtFlags::empty()) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => Err(FsError::Appeared(path.to_text())),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// A temp file of ours given another temp name (`link` + `unlink`: never over a file
    /// of that name).
    pub fn move_temp(&self, path: &RelPath, from: &str, to: &str) -> Result<(), FsError> {
        crate::platform::sys::fs::linkat(&self.fd, from, &self.fd, to, AtFlags::empty())
            .map_err(|e| io_err(path, e))?;
        crate::platform::sys::fs::unlinkat(&self.fd, from, AtFlags::empty()).map_err(|e| io_err(path, e))
    }

    /// A plain `renameat` (not `renameat2`: the call a file system without its flags has) of
    /// a temp file onto the path, replacing what is there.
    pub fn rename_onto(&self, path: &RelPath, temp: &str) -> Result<(), FsError> {
        crate::platform::sys::fs::renameat(&self.fd, temp, &self.fd, self.name()).map_err(|e| io_err(path, e))
    }

    /// Swaps the temp file and the path (`RENAME_EXCHANGE`): the path's old inode survives
    /// under the temp name, so what it holds can be checked before it is unlinked. The path
    /// gone meanwhile is `Appeared` (someone else changed it).
    pub fn exchange(&self, path: &RelPath, temp: &str) -> Result<(), FsError> {
        match crate::platform::rename_exchange(self.fd.as_fd(), std::ffi::OsStr::new(temp), self.name()) {
            Ok(()) => Ok(()),
            Err(Errno::NOENT) => Err(FsError::Appeared(path.to_text())),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// lstat of a temp file beside the path.
    pub fn stat_temp(
        &self,
        path: &RelPath,
        temp: &str,
    ) -> Result<Option<crate::platform::sys::fs::Stat>, FsError> {
        match crate::platform::sys::fs::statat(&self.fd, temp, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// Removes a temp file of ours; false when it is still there (a read-only file system).
    pub fn unlink_temp(&self, temp: &str) -> bool {
        unlink_temp_at(self.fd.as_fd(), temp)
    }

    /// Sets the permission bits of the regular file at the path, never following a symlink,
    /// and only if the file opened is `expected` (its device and inode) with no other name:
    /// an inode that is also a file outside the workspace (a hard link) is never changed.
    /// False, changing nothing, when it is not.
    pub fn set_mode(&self, path: &RelPath, mode: u32, expected: StatKey) -> Result<bool, FsError> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = crate::platform::sys::fs::openat(&self.fd, self.name(), flags, Mode::empty())
            .map_err(|e| io_err(path, e))?;
        let opened = crate::platform::sys::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
        let regular = crate::platform::sys::fs::FileType::from_raw_mode(opened.st_mode).is_file();
        let same = crate::platform::device(opened.st_dev) == expected.dev && opened.st_ino == expected.ino;
        if !regular || !same || opened.st_nlink != 1 {
            return Ok(false);
        }
        crate::platform::sys::fs::fchmod(&fd, Mode::from_raw_mode(crate::platform::raw_mode(mode)))
            .map_err(|e| io_err(path, e))?;
        Ok(true)
    }

    /// The device of this directory's file system.
    pub fn dev(&self, path: &RelPath) -> Result<u64, FsError> {
        crate::platform::sys::fs::fstat(&self.fd)
            .map(|stat| crate::platform::device(stat.st_dev))
            .map_err(|e| io_err(path, e))
    }

    /// Makes this directory's entries durable.
    pub fn sync(&self, path: &RelPath) -> Result<(), FsError> {
        crate::platform::sync_fd(self.fd.as_fd()).map_err(|e| io_err(path, e))
    }
}

/// Removes a temp file of ours from the directory `dir` (never a directory, never through a
/// symlink: the name is one component); false when it is still there.
pub fn unlink_temp_at(dir: crate::platform::sys::BorrowedFd<'_>, temp: &str) -> bool {
    matches!(
        crate::platform::sys::fs::unlinkat(dir, temp, AtFlags::empty()),
        Ok(()) | Err(Errno::NOENT)
    )
}

/// The permission bits a restored file gets: the target's own (`mode`, when its version
/// recorded them); else, for a version that knows only its executable bit, the file's current
/// bits (or 0644 when new) with the executable bits set where readable, or cleared.
pub fn file_mode(current_mode: Option<u32>, target: &FileState) -> u32 {
    if let Some(mode) = target.mode {
        return u32::from(mode);
    }
    let base = current_mode.map_or(0o644, |m| m & PERMISSION_BITS);
    if target.executable {
        base | ((base & 0o444) >> 2) | 0o100
    } else {
        base & !0o111
    }
}

#[cfg(test)]
mod tests {
    use super::file_mode;
    use crate::model::{Content, FileState, Hash};

    fn target(executable: bool, mode: Option<u16>) -> FileState {
        FileState {
            content: Content::Stored(Hash([0; 32])),
            size: 0,
            executable,
            mode,
        }
    }

    #[test]
    fn recorded_bits_are_restored_exactly() {
        for mode in [0o600, 0o000, 0o644, 0o4755, 0o1777, 0o400] {
            let exact = target(mode & 0o111 != 0, Some(mode));
            assert_eq!(file_mode(None, &exact), u32::from(mode));
            assert_eq!(file_mode(Some(0o100777), &exact), u32::from(mode));
        }
    }

    #[test]
    fn without_recorded_bits_exec_bits_follow_read_bits() {
        assert_eq!(file_mode(None, &target(false, None)), 0o644);
        assert_eq!(file_mode(None, &target(true, None)), 0o755);
        assert_eq!(file_mode(Some(0o100600), &target(true, None)), 0o700);
        assert_eq!(file_mode(Some(0o100755), &target(false, None)), 0o644);
    }
}
