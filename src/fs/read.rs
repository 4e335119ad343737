//! Reading one path's truth from disk: confined beneath the root without following any
//! symlink (PATH-02, PATH-05), re-read until stable so a torn version is never stored
//! (WATCH-06), streamed in constant memory when large (WATCH-07).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::model::Hash;
use crate::model::{FileState, StatKey, State};
use crate::paths::RelPath;
use crate::store::blobs::{BlobDir, NewBlob};

/// Files above this size are streamed into a blob file instead of read into memory.
const STREAM_ABOVE: u64 = 8 * 1024 * 1024;
const READ_ATTEMPTS: usize = 5;

/// The workspace root, held open: every read resolves beneath this descriptor.
pub struct RootDir {
    pub path: PathBuf,
    fd: OwnedFd,
}

impl RootDir {
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// Opens `rel` beneath the root, refusing any symlink on the way, the last one included
    /// (with `O_PATH | O_NOFOLLOW` the last one is opened itself).
    fn open_beneath(&self, rel: &RelPath, flags: OFlags) -> rustix::io::Result<OwnedFd> {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        rustix::fs::openat2(
            &self.fd,
            rel.as_path(),
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            resolve,
        )
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The root's path still names the directory held open (same device and inode): false
    /// once it was moved away, removed or replaced, when writing through the descriptor would
    /// write somewhere the user no longer calls the workspace.
    pub fn still_at_path(&self) -> bool {
        let (Ok(held), Ok(now)) = (rustix::fs::fstat(&self.fd), rustix::fs::lstat(&self.path)) else {
            return false;
        };
        (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
    }
}

/// What one path is right now.
#[derive(Debug)]
pub enum Observation {
    Absent,
    Present(Present),
    /// Kept changing while it was read: nothing stored; its next event retries.
    Unstable,
    /// A FIFO, socket or device: not something a workspace version can hold.
    Special,
    Unreadable(io::Error),
    /// The workspace file was read, but the store could not take its content (disk full, a
    /// file size limit, an I/O error): a storage fault, retried until it is recorded.
    StoreFailed(io::Error),
}

/// Why one read attempt failed: reading the workspace, or writing the store.
enum ReadError {
    Workspace(io::Error),
    Store(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(err: io::Error) -> Self {
        Self::Workspace(err)
    }
}

impl From<Errno> for ReadError {
    fn from(err: Errno) -> Self {
        Self::Workspace(err.into())
    }
}

/// The source of a streamed blob, remembering whether the error came from reading it.
struct Tracked<'a> {
    file: &'a mut File,
    failed: bool,
}

impl Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.file.read(buf);
        self.failed |= read.is_err();
        read
    }
}

#[derive(Debug)]
pub struct Present {
    pub state: State,
    pub stat: StatKey,
    /// The content to register, for a file whose content is stored.
    pub blob: Option<NewBlob>,
    /// A streamed blob still under its temp name, renamed into place when recorded.
    pub streamed: Option<PathBuf>,
}

/// Reads `rel` as it is now, storing a file's content in the blob store.
pub fn observe(root: &RootDir, rel: &RelPath, max_file_size: u64, blobs: &BlobDir) -> Observation {
    look(root, rel, max_file_size, Some(blobs))
}

/// `observe` for a path a walk has just seen as a regular file: one open instead of two, the
/// first index's largest cost after compression. Opening for reading is what `observe` avoids
/// for paths of unknown type (a device's open can have effects); here the file would have to
/// become a device between the walk's stat and this open. Anything but a stable regular file
/// takes `observe`'s careful way.
pub fn observe_file(root: &RootDir, rel: &RelPath, max_file_size: u64, blobs: &BlobDir) -> Observation {
    match read_file(root, rel, max_file_size, Some(blobs)) {
        Observation::Present(present) => Observation::Present(present),
        _ => observe(root, rel, max_file_size, blobs),
    }
}

/// Whether `rel` is a directory now (not through a symlink); false when it is absent.
pub fn is_dir(root: &RootDir, rel: &RelPath) -> bool {
    let Ok(fd) = root.open_beneath(rel, OFlags::PATH) else {
        return false;
    };
    rustix::fs::fstat(&fd).is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory)
}

/// What `rel` is now, without storing anything: the restorer's check of the disk.
pub fn probe(root: &RootDir, rel: &RelPath, max_file_size: u64) -> Observation {
    look(root, rel, max_file_size, None)
}

fn look(root: &RootDir, rel: &RelPath, max_file_size: u64, blobs: Option<&BlobDir>) -> Observation {
    let fd = match root.open_beneath(rel, OFlags::PATH) {
        Ok(fd) => fd,
        Err(e) if is_gone(e) => return Observation::Absent,
        Err(e) => return Observation::Unreadable(e.into()),
    };
    let stat = match rustix::fs::fstat(&fd) {
        Ok(stat) => stat,
        Err(e) => return Observation::Unreadable(e.into()),
    };
    let key = StatKey::from_rustix(&stat);
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => present(State::Dir, key),
        FileType::Symlink => match rustix::fs::readlinkat(&fd, "", Vec::new()) {
            Ok(target) => present(
                State::Symlink {
                    target: target.into_bytes(),
                },
                key,
            ),
            Err(e) if is_gone(e) => Observation::Absent,
            Err(e) => Observation::Unreadable(e.into()),
        },
        FileType::RegularFile => read_file(root, rel, max_file_size, blobs),
        _ => Observation::Special,
    }
}

/// A regular file whose content cannot be read (it gave `Observation::Unreadable`), as `stat`
/// sees it: recorded as `FileState::unreadable`, so its turn lists it and a rollback that
/// would touch it says so. `None` when it is not a regular file (or cannot even be stat'd).
pub fn unreadable_file(root: &RootDir, rel: &RelPath) -> Option<Present> {
    let fd = root.open_beneath(rel, OFlags::PATH).ok()?;
    let stat = StatKey::from_rustix(&rustix::fs::fstat(&fd).ok()?);
    if FileType::from_raw_mode(stat.mode) != FileType::RegularFile {
        return None;
    }
    let file = FileState::unreadable(stat.size, stat.mode & 0o111 != 0);
    Some(Present {
        state: State::File(file),
        stat,
        blob: None,
        streamed: None,
    })
}

fn present(state: State, stat: StatKey) -> Observation {
    Observation::Present(Present {
        state,
        stat,
        blob: None,
        streamed: None,
    })
}

fn is_gone(e: Errno) -> bool {
    // ELOOP / EXDEV: a component is now a symlink, so the tracked path no longer exists as a
    // path beneath the root.
    matches!(e, Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::XDEV)
}

fn read_file(root: &RootDir, rel: &RelPath, max_file_size: u64, blobs: Option<&BlobDir>) -> Observation {
    for _ in 0..READ_ATTEMPTS {
        let fd = match open_for_reading(root, rel) {
            Ok(fd) => fd,
            Err(e) if is_gone(e) => return Observation::Absent,
            Err(e) => return Observation::Unreadable(e.into()),
        };
        match read_once(fd, max_file_size, blobs) {
            Ok(Some(present)) => return Observation::Present(present),
            Ok(None) => continue,
            Err(ReadError::Workspace(e)) => return Observation::Unreadable(e),
            Err(ReadError::Store(e)) => return Observation::StoreFailed(e),
        }
    }
    Observation::Unstable
}

/// Opens a file to read it without touching its access time: under `relatime` the first read
/// of a file not read for a day would write its inode, so a first index would dirty every
/// inode of an old checkout. `O_NOATIME` is refused for files of other owners: those are
/// opened without it.
fn open_for_reading(root: &RootDir, rel: &RelPath) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK;
    match root.open_beneath(rel, flags | OFlags::NOATIME) {
        Err(Errno::PERM) => root.open_beneath(rel, flags),
        opened => opened,
    }
}

/// One attempt: `None` when the file changed while it was read.
fn read_once(fd: OwnedFd, max_file_size: u64, blobs: Option<&BlobDir>) -> Result<Option<Present>, ReadError> {
    let before = StatKey::from_rustix(&rustix::fs::fstat(&fd)?);
    if FileType::from_raw_mode(before.mode) != FileType::RegularFile {
        return Ok(None);
    }
    let executable = before.mode & 0o111 != 0;
    let mut file = File::from(fd);
    if before.size > max_file_size || (blobs.is_none() && before.size > STREAM_ABOVE) {
        let (hash, size) = hash_stream(&mut file)?;
        let state = file_state(hash, size, executable, before.size > max_file_size);
        return Ok(stable(&file, before, size).then_some(Present {
            state,
            stat: before,
            blob: None,
            streamed: None,
        }));
    }
    if let Some(blobs) = blobs.filter(|_| before.size > STREAM_ABOVE) {
        let mut source = Tracked {
            file: &mut file,
            failed: false,
        };
        let (blob, tmp) = match blobs.stream_from(&mut source) {
            Ok(streamed) => streamed,
            Err(e) if source.failed => return Err(ReadError::Workspace(e)),
            Err(e) => return Err(ReadError::Store(e)),
        };
        if !stable(&file, before, blob.size) {
            blobs.discard(&tmp);
            return Ok(None);
        }
        let state = file_state(blob.hash, blob.size, executable, false);
        return Ok(Some(Present {
            state,
            stat: before,
            blob: Some(blob),
            streamed: Some(tmp),
        }));
    }
    let mut raw = Vec::with_capacity(usize::try_from(before.size).unwrap_or(0));
    file.read_to_end(&mut raw)?;
    if !stable(&file, before, raw.len() as u64) {
        return Ok(None);
    }
    let hash = Hash::of(&raw);
    let blob = match blobs {
        Some(blobs) => Some(
            blobs
                .prepare(hash, &raw)
                .map_err(|e| ReadError::Store(e.into_io()))?,
        ),
        None => None,
    };
    let state = file_state(hash, raw.len() as u64, executable, false);
    Ok(Some(Present {
        state,
        stat: before,
        blob,
        streamed: None,
    }))
}

fn file_state(hash: Hash, size: u64, executable: bool, too_large: bool) -> State {
    State::File(FileState {
        hash,
        size,
        executable,
        too_large,
        unreadable: false,
    })
}

/// The file is the same object with the same size and times after the read as before it.
fn stable(file: &File, before: StatKey, bytes_read: u64) -> bool {
    let Ok(after) = rustix::fs::fstat(file.as_fd()) else {
        return false;
    };
    StatKey::from_rustix(&after) == before && bytes_read == before.size
}

fn hash_stream(file: &mut File) -> io::Result<(Hash, u64)> {
    let mut hasher = blake3::Hasher::new();
    let size = io::copy(file, &mut hasher)?;
    Ok((Hash(*hasher.finalize().as_bytes()), size))
}
