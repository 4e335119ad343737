//! One daemon per tree, machine-wide (PRODUCT.md 4): whatever its state directory, a daemon
//! holds a lock named by its root's device and inode in one directory every process on the
//! machine sees (`/tmp/.filewatchd-trees`). The lock is an open file description lock
//! (`F_OFD_SETLK`), released by the kernel when the daemon dies, so `kill -9` never leaves a
//! lock that blocks a restart, and it is tested with `F_OFD_GETLK`, which takes nothing (a
//! test that took a lock, as `flock` would need, could make a daemon starting at that moment
//! refuse). The file holds one JSON line saying who holds it, for the refusal of the next one.

use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state;

/// Where the tree locks live: one directory for the whole machine (sticky and world-writable,
/// as `/tmp/.X11-unix`), not under a state home a flag or variable can move.
pub const LOCK_DIR: &str = "/tmp/.filewatchd-trees";

/// What a tree lock says about the daemon holding it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// The workspace it watches.
    pub root: PathBuf,
    pub state_dir: PathBuf,
    /// From its `daemon.json`; `None` while it is still indexing.
    #[serde(skip)]
    pub url: Option<String>,
}

/// The lock of the tree this daemon watches, held until the process ends. A clean exit
/// removes the file while still holding it; a locker checks, once it holds a lock, that the
/// file is still the one at the path (else it was removed meanwhile and it tries again).
pub struct TreeLock {
    file: File,
    path: PathBuf,
}

impl Drop for TreeLock {
    fn drop(&mut self) {
        if is_at_path(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Why the lock of a tree could not be had.
pub enum Refusal {
    /// A live daemon watches this very tree.
    Held(Option<Holder>),
    /// The lock directory or file cannot be used (another user's, unsafe, I/O error).
    Unusable(String),
}

impl TreeLock {
    /// Takes the lock of `root` (canonical) for a daemon keeping its state in `state_dir`.
    pub fn acquire(root: &Path, state_dir: &Path) -> Result<Self, Refusal> {
        let dir = lock_dir().map_err(Refusal::Unusable)?;
        let path = lock_path(&dir, root).map_err(|e| Refusal::Unusable(e.to_string()))?;
        let file = lock_file(&path)?;
        let holder = Holder {
            pid: std::process::id(),
            root: root.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            url: None,
        };
        write_note(&file, &holder)
            .map_err(|e| Refusal::Unusable(format!("cannot write {}: {e}", path.display())))?;
        Ok(Self { file, path })
    }
}

/// Opens and write-locks the lock file at `path`, again if a clean exit removed the one it
/// opened before it got the lock.
fn lock_file(path: &Path) -> Result<File, Refusal> {
    let unusable =
        |what: &str, e: io::Error| Refusal::Unusable(format!("cannot {what} {}: {e}", path.display()));
    for _ in 0..8 {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| unusable("open", e))?;
        match set_write_lock(&file) {
            Ok(true) if is_at_path(&file, path) => return Ok(file),
            Ok(true) => continue,
            Ok(false) => return Err(Refusal::Held(read_holder(path))),
            Err(e) => return Err(unusable("lock", e)),
        }
    }
    Err(Refusal::Unusable(format!(
        "{} keeps being replaced",
        path.display()
    )))
}

/// Whether `path` still names the open `file`.
fn is_at_path(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Whether the tree locks can be used here (else only the state directory's lock keeps a
/// second daemon out).
pub fn locks_usable() -> bool {
    lock_dir().is_ok()
}

/// The live daemon watching exactly the tree at `root`, if any (and if the lock directory can
/// be read). A lock held for a directory of another name is not counted: its tree was removed
/// (and this one was given its inode) or moved here, and its daemon has lost it.
pub fn holder_of(root: &Path) -> Option<Holder> {
    let path = lock_path(&lock_dir().ok()?, root).ok()?;
    let holder = is_held(&path).then(|| read_holder(&path)).flatten()?;
    (holder.root == root).then_some(holder)
}

/// A live daemon whose tree holds `root` or lies inside it (not `root` itself): two such
/// daemons would each record the other's agents' writes as work from outside their turns.
pub fn overlapping(root: &Path) -> Option<Holder> {
    let dir = lock_dir().ok()?;
    let around = root.ancestors().skip(1).find_map(|above| {
        let path = lock_path(&dir, above).ok()?;
        is_held(&path).then(|| read_holder(&path)).flatten()
    });
    around.or_else(|| inside(&dir, root))
}

/// A live daemon watching a tree inside `root`: its lock names a root below this one that
/// still is the tree the lock is named after.
fn inside(dir: &Path, root: &Path) -> Option<Holder> {
    let listing = std::fs::read_dir(dir).ok()?;
    listing.flatten().find_map(|entry| {
        let holder = read_holder(&entry.path())?;
        let below = holder.root != root && holder.root.starts_with(root);
        let same_tree = lock_path(dir, &holder.root).ok()? == entry.path();
        (below && same_tree && is_held(&entry.path())).then_some(holder)
    })
}

/// The lock directory, created sticky and world-writable if missing, and refused when
/// someone else could swap the files in it.
fn lock_dir() -> Result<PathBuf, String> {
    let dir = PathBuf::from(LOCK_DIR);
    match std::fs::DirBuilder::new().mode(0o1777).create(&dir) {
        Ok(()) => {
            // The umask took bits away.
            let sticky = std::fs::Permissions::from_mode(0o1777);
            std::fs::set_permissions(&dir, sticky)
                .map_err(|e| format!("cannot set permissions on {LOCK_DIR}: {e}"))?;
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {LOCK_DIR}: {e}")),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("cannot read {LOCK_DIR}: {e}"))?;
    let mode = meta.mode();
    let owner_ok = meta.uid() == 0 || meta.uid() == rustix::process::geteuid().as_raw();
    let others_cannot_swap = mode & 0o1000 != 0 || mode & 0o022 == 0;
    if !meta.is_dir() || !owner_ok || !others_cannot_swap {
        return Err(format!(
            "{LOCK_DIR} is not a directory owned by root or by this user that others cannot swap files in"
        ));
    }
    Ok(dir)
}

/// `<dir>/<device>-<inode>.lock` of the tree at `root`.
fn lock_path(dir: &Path, root: &Path) -> io::Result<PathBuf> {
    let meta = std::fs::metadata(root)?;
    Ok(dir.join(format!("{}-{}.lock", meta.dev(), meta.ino())))
}

/// Whether a live process holds the lock at `path`.
fn is_held(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut probe = whole_file(libc::F_WRLCK);
    // SAFETY: `probe` is a valid `flock` that outlives the call; the descriptor is open.
    let got = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut probe) };
    got == 0 && probe.l_type != libc::F_UNLCK as libc::c_short
}

/// Takes the write lock of the whole file without waiting; `false` when another has it.
fn set_write_lock(file: &File) -> io::Result<bool> {
    let lock = whole_file(libc::F_WRLCK);
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

fn whole_file(kind: libc::c_int) -> libc::flock {
    // SAFETY: `flock` is plain data; all-zero is a valid value (whole file, pid 0 as OFD needs).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock
}

/// Overwrites the note in place, then cuts what a longer earlier note left: a reader takes
/// the first line only, so it never sees half of one.
fn write_note(file: &File, holder: &Holder) -> io::Result<()> {
    let mut line = serde_json::to_vec(holder).map_err(io::Error::other)?;
    line.push(b'\n');
    file.write_all_at(&line, 0)?;
    file.set_len(line.len() as u64)
}

/// Who holds the lock at `path`, with the URL of its `daemon.json` when that is its own.
fn read_holder(path: &Path) -> Option<Holder> {
    let bytes = std::fs::read(path).ok()?;
    let line = bytes.split(|&b| b == b'\n').next()?;
    let mut holder: Holder = serde_json::from_slice(line).ok()?;
    holder.url = state::read_info(&holder.state_dir)
        .ok()
        .filter(|info| info.pid == holder.pid)
        .map(|info| info.url);
    Some(holder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_seen_and_refuses_a_second_holder() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        let state = tmp.path().join("state");
        let lock = TreeLock::acquire(&root, &state).ok().expect("first lock");
        // A second description of the same file: what another process would have.
        match TreeLock::acquire(&root, &state) {
            Err(Refusal::Held(Some(holder))) => {
                assert_eq!(holder.pid, std::process::id());
                assert_eq!(holder.state_dir, state);
            }
            _ => panic!("a second lock of the same tree was not refused"),
        }
        let sub = root.join("sub");
        std::fs::create_dir(&sub).expect("mkdir");
        assert_eq!(overlapping(&sub).map(|h| h.root), Some(root.clone()));
        let path = lock.path.clone();
        drop(lock);
        assert!(overlapping(&sub).is_none(), "a released lock still counts");
        assert!(!path.exists(), "a released lock leaves its file");
    }
}
