//! The files filewatchd writes for the user outside its record: the agents' settings and
//! plugin files that `hook install` edits. A cloned repository can plant anything there, so
//! nothing here follows a symlink: each directory beneath the workspace is opened from its
//! parent by one name with `O_NOFOLLOW`, the file itself is read only when it is a regular
//! file (never a FIFO that would hang, nor a device that never ends), and a new version is
//! written to a temp file created exclusively (`O_EXCL | O_NOFOLLOW`) under a random name,
//! made durable, then renamed over the file's own name in the same directory.

use crate::platform::sys::{AsFd, OwnedFd};
use std::io::{Read, Write};
use std::path::{Component, Path};

use crate::platform::sys::fs::{AtFlags, Mode, OFlags};
use crate::platform::sys::io::Errno;
use anyhow::{Context, bail};

/// The most of a settings file read: real ones are kilobytes.
pub const READ_LIMIT: u64 = 16 << 20;

/// A file to read or replace: the directory holding it, opened without following a symlink
/// beneath `base`, and its name there.
pub struct SettingsFile<'a> {
    path: &'a Path,
    base: Option<&'a Path>,
}

impl<'a> SettingsFile<'a> {
    /// `path`, whose directories beneath `base` (the workspace) must be real directories;
    /// `base` itself and what is above it are the user's to arrange. A `path` outside `base`
    /// is taken from its own directory (the user's home: the user's own symlinks there are
    /// followed, but never one at the file itself).
    pub fn beneath(path: &'a Path, base: &'a Path) -> Self {
        Self {
            path,
            base: Some(base),
        }
    }

    /// `path`, taken from its own directory (filewatchd's state directory).
    pub fn at(path: &'a Path) -> Self {
        Self { path, base: None }
    }

    fn name(&self) -> anyhow::Result<&'a std::ffi::OsStr> {
        self.path
            .file_name()
            .with_context(|| format!("{} names no file", self.path.display()))
    }

    /// The directory holding the file; with `create`, made (and its parents) where missing.
    fn open_dir(&self, create: bool) -> anyhow::Result<Option<OwnedFd>> {
        let dir = self.path.parent().context("a settings path has a parent")?;
        let (start, below) = match self.base.map(|base| (base, dir.strip_prefix(base))) {
            Some((base, Ok(below))) => (base, below),
            _ => (dir, Path::new("")),
        };
        if create {
            std::fs::create_dir_all(start).with_context(|| format!("cannot create {}", start.display()))?;
        }
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
        let mut fd = match crate::platform::sys::fs::open(start, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", start.display())),
        };
        let mut walked = start.to_path_buf();
        for part in below.components() {
            let Component::Normal(name) = part else {
                bail!(
                    "{} is not a plain path beneath {}",
                    dir.display(),
                    start.display()
                );
            };
            walked.push(name);
            match open_child_dir(&fd, name, create, &walked)? {
                Some(child) => fd = child,
                None => return Ok(None),
            }
        }
        Ok(Some(fd))
    }

    /// The file's bytes, `None` when it does not exist; an error for a symlink, anything but
    /// a regular file, or more than `READ_LIMIT` bytes.
    pub fn read(&self) -> anyhow::Result<Option<Vec<u8>>> {
        let Some(dir) = self.open_dir(false)? else {
            return Ok(None);
        };
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match crate::platform::sys::fs::openat(&dir, self.name()?, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(self.symlink_refusal()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", self.path.display())),
        };
        let file = std::fs::File::from(fd);
        let meta = file
            .metadata()
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        if !meta.is_file() {
            bail!(
                "{} is not a regular file: filewatchd reads and writes only regular files there",
                self.path.display()
            );
        }
        if meta.len() > READ_LIMIT {
            bail!(
                "{} is {} bytes, more than a settings file holds ({} MiB at most)",
                self.path.display(),
                meta.len(),
                READ_LIMIT >> 20
            );
        }
        let mut bytes = Vec::new();
        file.take(READ_LIMIT)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        Ok(Some(bytes))
    }

    fn symlink_refusal(&self) -> anyhow::Error {
        let target = std::fs::read_link(self.path).map(|t| format!(" (to {})", t.display()));
        anyhow::anyhow!(
            "{} is a symlink{}: filewatchd never reads or writes through a symlink there; make it a regular file, or edit it by hand",
            self.path.display(),
            target.unwrap_or_default()
        )
    }

    /// Replaces the file with `bytes` (keeping its permission bits), creating its
    /// directories; a reader sees the old file or the new one, never half of either.
    pub fn replace(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let dir = self.open_dir(true)?.context("its directory was just made")?;
        let name = self.name()?;
        let mode = match crate::platform::sys::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat)
                if crate::platform::sys::fs::FileType::from_raw_mode(stat.st_mode)
                    == crate::platform::sys::fs::FileType::Symlink =>
            {
                return Err(self.symlink_refusal());
            }
            Ok(stat) => Some(crate::platform::mode_bits(stat.st_mode) & 0o7777),
            Err(Errno::NOENT) => None,
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", self.path.display())),
        };
        let temp = temp_name(name);
        let written = write_temp(&dir, &temp, bytes, mode)
            .and_then(|()| crate::platform::sys::fs::renameat(&dir, &temp, &dir, name).map_err(Into::into))
            .and_then(|()| crate::platform::sync_fd(dir.as_fd()).map_err(Into::into));
        if written.is_err() {
            let _ = crate::platform::sys::fs::unlinkat(&dir, &temp, AtFlags::empty());
        }
        written.with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Removes the file (never what a symlink there points to); absent is done.
    pub fn remove(&self) -> anyhow::Result<()> {
        let Some(dir) = self.open_dir(false)? else {
            return Ok(());
        };
        match crate::platform::sys::fs::unlinkat(&dir, self.name()?, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("cannot remove {}", self.path.display())),
        }
    }
}

/// `name` in `dir` as a directory, never through a symlink; made when missing and `create`.
fn open_child_dir(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    create: bool,
    walked: &Path,
) -> anyhow::Result<Option<OwnedFd>> {
    let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for _ in 0..2 {
        match crate::platform::sys::fs::openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => return Ok(Some(fd)),
            Err(Errno::NOENT) if create => {
                match crate::platform::sys::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => continue,
                    Err(e) => return Err(e).with_context(|| format!("cannot create {}", walked.display())),
                }
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP | Errno::NOTDIR) => bail!(
                "{} is a symlink or not a directory: filewatchd never writes through a symlink in the workspace; make it a directory, or edit the settings by hand",
                walked.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", walked.display())),
        }
    }
    bail!("{} keeps changing: try again", walked.display())
}

/// `.<name>.filewatchd-<16 random hex digits>` (a rollback's random tag): nobody can predict it.
fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".filewatchd-{}", super::temp::TempNames::random().tag));
    temp
}

/// Creates `temp` exclusively in `dir` and writes `bytes` to it durably, with `mode` (the
/// file's own bits) when the file exists.
fn write_temp(dir: &OwnedFd, temp: &std::ffi::OsStr, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    // 0666 less the umask for a new file, as any editor makes one.
    let fd = crate::platform::sys::fs::openat(dir.as_fd(), temp, flags, Mode::from_raw_mode(0o666))?;
    if let Some(mode) = mode {
        crate::platform::sys::fs::fchmod(&fd, Mode::from_raw_mode(crate::platform::raw_mode(mode)))?;
    }
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    file.sync_all()
}
