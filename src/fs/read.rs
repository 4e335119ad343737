//! Reading one path's truth from disk: confined beneath the root without following any
//! symlink, re-read until stable so a torn version is never stored, streamed in constant
//! memory when large.

use crate::platform::sys::{AsFd, OwnedFd};
use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};

use crate::platform::sys::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use crate::platform::sys::io::Errno;

use crate::model::{Content, FileState, Hash, StatKey, State, permission_bits};
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

/// One entry beneath the root, looked at without being read (`RootDir::entry`).
struct Entry {
    stat: Stat,
    /// The entry itself (`O_PATH`), or its parent directory.
    at: OwnedFd,
    /// Its name in `at`; empty when `at` is the entry.
    name: Vec<u8>,
}

fn as_os_str(name: &[u8]) -> &std::ffi::OsStr {
    crate::platform::os_str(name)
}

impl RootDir {
    pub fn open(path: &Path) -> io::Result<Self> {
        let handle = crate::platform::HANDLE.unwrap_or(OFlags::RDONLY);
        let fd = crate::platform::sys::fs::open(
            path,
            handle | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// Opens `rel` beneath the root, refusing any symlink on the way, the last one included
    /// (with `O_PATH | O_NOFOLLOW` the last one is opened itself).
    fn open_beneath(&self, rel: &RelPath, flags: OFlags) -> crate::platform::sys::io::Result<OwnedFd> {
        // A path past PATH_MAX (a tree thousands of directories deep) a piece at a time.
        super::deep::open_beneath(
            &self.fd,
            rel.as_path(),
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        )
    }

    /// The entry at `rel` itself, a symlink included, without reading it: opened with
    /// `O_PATH` where the OS has it (one confined open, then `fstat`), else named in its
    /// parent, opened confined (`statat`, `readlinkat`).
    fn entry(&self, rel: &RelPath) -> crate::platform::sys::io::Result<Entry> {
        if let Some(handle) = crate::platform::HANDLE {
            let fd = self.open_beneath(rel, handle)?;
            let stat = crate::platform::sys::fs::fstat(&fd)?;
            return Ok(Entry {
                stat,
                at: fd,
                name: Vec::new(),
            });
        }
        let dir = match rel.parent() {
            Some(dir) => self.open_beneath(&dir, OFlags::RDONLY | OFlags::DIRECTORY)?,
            None => crate::platform::sys::fs::openat(
                &self.fd,
                ".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?,
        };
        let name = rel.file_name().to_vec();
        let stat = crate::platform::sys::fs::statat(&dir, as_os_str(&name), AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Entry { stat, at: dir, name })
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The root's path still names the directory held open (same device and inode): false
    /// once it was moved away, removed or replaced, when writing through the descriptor would
    /// write somewhere the user no longer calls the workspace.
    pub fn still_at_path(&self) -> bool {
        let (Ok(held), Ok(now)) = (
            crate::platform::sys::fs::fstat(&self.fd),
            crate::platform::sys::fs::lstat(&self.path),
        ) else {
            return false;
        };
        (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
    }
}

/// What one path is right now.
#[derive(Debug)]
#[cfg_attr(windows, allow(clippy::large_enum_variant))] // Windows' PathBuf is larger
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
    /// What the index let this observation skip (`observe_expecting`).
    pub saved: Saved,
}

/// Work an observation did not have to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Saved {
    #[default]
    Nothing,
    /// Not opened: its stat proved it unchanged.
    Read,
    /// Read and hashed, but not compressed or stored: the store holds its content.
    Store,
}

/// Reads `rel` as it is now, storing a file's content in the blob store.
pub fn observe(root: &RootDir, rel: &RelPath, max_file_size: u64, blobs: &BlobDir) -> Observation {
    look(root, rel, max_file_size, Some(blobs), None)
}

/// What the index holds for a path about to be observed: lets `observe_expecting` skip work
/// the record already has done.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The stat recorded with the latest version.
    pub stat: StatKey,
    /// The stat was taken long enough after the file's mtime that an equal stat now proves
    /// the content unchanged (not "racy").
    pub stat_proves: bool,
    /// The latest version.
    pub state: State,
}

impl Expected {
    /// The content hash the store holds a blob for, when the latest version is a file whose
    /// content was stored.
    fn stored_hash(&self) -> Option<Hash> {
        match &self.state {
            State::File(f) => f.stored(),
            _ => None,
        }
    }
}

/// `observe` of a path the index knows: a regular file whose stat equals the recorded one (and
/// proves it) is not opened at all, and content whose hash is the latest version's is not
/// compressed or stored again (the blob is there). A rollback's own writes, `sed -i` rewriting
/// a file byte for byte, an editor saving unchanged text: read and hashed at most.
pub fn observe_expecting(
    root: &RootDir,
    rel: &RelPath,
    max_file_size: u64,
    blobs: &BlobDir,
    expected: Option<&Expected>,
) -> Observation {
    look(root, rel, max_file_size, Some(blobs), expected)
}

/// `observe` for a path a walk has just seen as a regular file: one open instead of two, the
/// first index's largest cost after compression. Opening for reading is what `observe` avoids
/// for paths of unknown type (a device's open can have effects); here the file would have to
/// become a device between the walk's stat and this open. Anything but a stable regular file
/// takes `observe`'s careful way.
pub fn observe_file(root: &RootDir, rel: &RelPath, max_file_size: u64, blobs: &BlobDir) -> Observation {
    match read_file(root, rel, max_file_size, Some(blobs), None) {
        Observation::Present(present) => Observation::Present(present),
        _ => observe(root, rel, max_file_size, blobs),
    }
}

/// Whether `rel` is a directory now (not through a symlink); false when it is absent.
pub fn is_dir(root: &RootDir, rel: &RelPath) -> bool {
    root.entry(rel)
        .is_ok_and(|entry| FileType::from_raw_mode(entry.stat.st_mode) == FileType::Directory)
}

/// What `rel` is now, without storing anything: the restorer's check of the disk.
pub fn probe(root: &RootDir, rel: &RelPath, max_file_size: u64) -> Observation {
    look(root, rel, max_file_size, None, None)
}

/// `probe` of a path the index knows: a regular file whose stat equals the recorded one (and
/// proves it) is not opened, as `observe_expecting` does for capture.
pub fn probe_expecting(
    root: &RootDir,
    rel: &RelPath,
    max_file_size: u64,
    expected: Option<&Expected>,
) -> Observation {
    look(root, rel, max_file_size, None, expected)
}

fn look(
    root: &RootDir,
    rel: &RelPath,
    max_file_size: u64,
    blobs: Option<&BlobDir>,
    expected: Option<&Expected>,
) -> Observation {
    let entry = match root.entry(rel) {
        Ok(entry) => entry,
        Err(e) if is_gone(e) => return Observation::Absent,
        Err(e) => return Observation::Unreadable(e.into()),
    };
    let stat = entry.stat;
    let key = StatKey::from_rustix(&stat);
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => present(State::Dir, key),
        FileType::Symlink => {
            match crate::platform::sys::fs::readlinkat(&entry.at, as_os_str(&entry.name), Vec::new()) {
                Ok(target) => present(
                    State::Symlink {
                        target: target.into_bytes(),
                    },
                    key,
                ),
                Err(e) if is_gone(e) => Observation::Absent,
                Err(e) => Observation::Unreadable(e.into()),
            }
        }
        FileType::RegularFile => match expected {
            Some(e) if e.stat_proves && e.stat == key && e.state.is_file() => Observation::Present(Present {
                saved: Saved::Read,
                ..unopened(e.state.clone(), key)
            }),
            _ => read_file(
                root,
                rel,
                max_file_size,
                blobs,
                expected.and_then(Expected::stored_hash),
            ),
        },
        _ => Observation::Special,
    }
}

/// A regular file whose content cannot be read (it gave `Observation::Unreadable`), as `stat`
/// sees it: recorded as `FileState::unreadable`, so its turn lists it and a rollback that
/// would touch it says so. `None` when it is not a regular file (or cannot even be stat'd).
pub fn unreadable_file(root: &RootDir, rel: &RelPath) -> Option<Present> {
    let stat = StatKey::from_rustix(&root.entry(rel).ok()?.stat);
    if FileType::from_raw_mode(crate::platform::raw_mode(stat.mode)) != FileType::RegularFile {
        return None;
    }
    let file = FileState::unreadable(stat.size, stat.mode);
    Some(Present {
        state: State::File(file),
        stat,
        blob: None,
        streamed: None,
        saved: Saved::Nothing,
    })
}

fn present(state: State, stat: StatKey) -> Observation {
    Observation::Present(unopened(state, stat))
}

fn unopened(state: State, stat: StatKey) -> Present {
    Present {
        state,
        stat,
        blob: None,
        streamed: None,
        saved: Saved::Nothing,
    }
}

fn is_gone(e: Errno) -> bool {
    // ELOOP / EXDEV: a component is now a symlink, so the tracked path no longer exists as a
    // path beneath the root.
    matches!(e, Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::XDEV)
}

/// `stored`: a hash whose blob the store holds (the latest version's): content with that hash
/// is not compressed again.
fn read_file(
    root: &RootDir,
    rel: &RelPath,
    max_file_size: u64,
    blobs: Option<&BlobDir>,
    stored: Option<Hash>,
) -> Observation {
    for _ in 0..READ_ATTEMPTS {
        let fd = match open_for_reading(root, rel) {
            Ok(fd) => fd,
            Err(e) if is_gone(e) => return Observation::Absent,
            Err(e) => return Observation::Unreadable(e.into()),
        };
        match read_once(fd, max_file_size, blobs, stored) {
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
fn open_for_reading(root: &RootDir, rel: &RelPath) -> crate::platform::sys::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK;
    match root.open_beneath(rel, flags | crate::platform::NO_ATIME) {
        Err(Errno::PERM) => root.open_beneath(rel, flags),
        opened => opened,
    }
}

/// One attempt: `None` when the file changed while it was read.
fn read_once(
    fd: OwnedFd,
    max_file_size: u64,
    blobs: Option<&BlobDir>,
    stored: Option<Hash>,
) -> Result<Option<Present>, ReadError> {
    let before = StatKey::from_rustix(&crate::platform::sys::fs::fstat(&fd)?);
    if FileType::from_raw_mode(crate::platform::raw_mode(before.mode)) != FileType::RegularFile {
        return Ok(None);
    }
    let mode = permission_bits(before.mode);
    let mut file = File::from(fd);
    if before.size > max_file_size {
        return too_large(&file, before, mode);
    }
    if blobs.is_none() && before.size > STREAM_ABOVE {
        let (hash, size) = hash_stream(&mut file)?;
        let state = file_state(hash, size, mode, false);
        return Ok(stable(&file, before, size).then_some(Present {
            state,
            stat: before,
            blob: None,
            streamed: None,
            saved: Saved::Nothing,
        }));
    }
    if before.size > STREAM_ABOVE
        && let Some(hash) = stored
        && let Some(same) = large_and_stored(&mut file, before, mode, hash)?
    {
        return Ok(same);
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
        let state = file_state(blob.hash, blob.size, mode, false);
        return Ok(Some(Present {
            state,
            stat: before,
            blob: Some(blob),
            streamed: Some(tmp),
            saved: Saved::Nothing,
        }));
    }
    let mut raw = Vec::with_capacity(usize::try_from(before.size).unwrap_or(0));
    file.read_to_end(&mut raw)?;
    if !stable(&file, before, raw.len() as u64) {
        return Ok(None);
    }
    let hash = Hash::of(&raw);
    let blob = match blobs.filter(|_| stored != Some(hash)) {
        Some(blobs) => Some(
            blobs
                .prepare(hash, &raw)
                .map_err(|e| ReadError::Store(e.into_io()))?,
        ),
        None => None,
    };
    let state = file_state(hash, raw.len() as u64, mode, false);
    let saved = if blobs.is_some() && blob.is_none() {
        Saved::Store
    } else {
        Saved::Nothing
    };
    Ok(Some(Present {
        state,
        stat: before,
        blob,
        streamed: None,
        saved,
    }))
}

/// A file over `max_file_size` (G9): its size and print (`fs::print`), never a full read,
/// whatever its size; `None` when it changed while its sample was read.
fn too_large(file: &File, before: StatKey, mode: u16) -> Result<Option<Present>, ReadError> {
    let hash = super::print::of(file, before.size, before.mtime_ns)?;
    Ok(stable(file, before, before.size).then_some(Present {
        state: file_state(hash, before.size, mode, true),
        stat: before,
        blob: None,
        streamed: None,
        saved: Saved::Nothing,
    }))
}

/// A large file hashed before it is streamed into the store: `Some` when its content is the
/// stored blob's (`Some(None)`: it changed while read), `None` to stream it (rewound).
fn large_and_stored(
    file: &mut File,
    before: StatKey,
    mode: u16,
    stored: Hash,
) -> Result<Option<Option<Present>>, ReadError> {
    let (hash, size) = hash_stream(file)?;
    if !stable(file, before, size) {
        return Ok(Some(None));
    }
    if hash != stored {
        file.seek(io::SeekFrom::Start(0))?;
        return Ok(None);
    }
    Ok(Some(Some(Present {
        state: file_state(hash, size, mode, false),
        stat: before,
        blob: None,
        streamed: None,
        saved: Saved::Store,
    })))
}

/// A file's state: its content and `mode`, its permission bits.
fn file_state(hash: Hash, size: u64, mode: u16, too_large: bool) -> State {
    let content = if too_large {
        Content::TooLarge(hash)
    } else {
        Content::Stored(hash)
    };
    State::File(FileState {
        content,
        size,
        executable: mode & 0o111 != 0,
        mode: Some(mode),
    })
}

/// The file is the same object with the same size and times after the read as before it.
fn stable(file: &File, before: StatKey, bytes_read: u64) -> bool {
    let Ok(after) = crate::platform::sys::fs::fstat(file.as_fd()) else {
        return false;
    };
    StatKey::from_rustix(&after) == before && bytes_read == before.size
}

fn hash_stream(file: &mut File) -> io::Result<(Hash, u64)> {
    let mut hasher = blake3::Hasher::new();
    let size = io::copy(file, &mut hasher)?;
    Ok((Hash(*hasher.finalize().as_bytes()), size))
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
