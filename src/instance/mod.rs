//! One daemon per tree, machine-wide for this user (docs/daemon.md, "One daemon per tree"): whatever its state
//! directory, a daemon holds a lock named by its root's device and inode in the user's private
//! directory (`dir`: `/tmp/filewatchd-<uid>/trees`, mode 0700, checked), where no other user
//! can plant, read or remove one. Another user's daemon on the same tree, or on a tree around
//! or inside it, is that user's business: it is never seen. The lock is an open file
//! description lock (`F_OFD_SETLK`), released by the kernel when the daemon dies, so `kill -9`
//! never leaves a lock that blocks a restart, and it is tested with `F_OFD_GETLK`, which takes
//! nothing (a test that took a lock, as `flock` would need, could make a daemon starting at
//! that moment refuse). The file (0600) holds one JSON line saying who holds it, for the
//! refusal of the next one and for `stop` (`process`: which process a pid names).

pub mod dir;
pub mod process;

use crate::platform::ext::OpenExt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state;

/// What a tree lock says about the daemon holding it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// The workspace it watches.
    pub root: PathBuf,
    pub state_dir: PathBuf,
    /// When it started (`process::start_time`).
    #[serde(default)]
    pub started: Option<u64>,
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
    /// The lock directory or file cannot be used (another user's, a symlink, an I/O error).
    Unusable(String),
}

impl TreeLock {
    /// Takes the lock of `root` (canonical) for a daemon keeping its state in `state_dir`.
    pub fn acquire(root: &Path, state_dir: &Path) -> Result<Self, Refusal> {
        let dir = dir::lock_dir().map_err(|why| Refusal::Unusable(why.to_string()))?;
        let path = lock_path(dir, root).map_err(|e| Refusal::Unusable(e.to_string()))?;
        let file = lock_file(&path)?;
        let holder = Holder {
            pid: std::process::id(),
            root: root.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            started: process::own_start_time(),
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
            .permission_bits(0o600)
            .no_follow()
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => Refusal::Unusable(format!("{} is a symlink: refused", path.display())),
                _ => unusable("open", e),
            })?;
        check_lock_file(&file, path).map_err(Refusal::Unusable)?;
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
    use crate::platform::ext::{identity_of_entry, identity_of_file};
    match (identity_of_file(file), identity_of_entry(path)) {
        (Ok(open), Ok(named)) => open == named,
        _ => false,
    }
}

/// Whether the tree lock of `root` can be used (else only the state directory's lock keeps
/// a second daemon out): the lock directory is private and the lock, if there, is a regular
/// file of this user's (or root's). A symlink planted as the lock makes a daemon start
/// without one (`TreeLock::acquire` refuses it and says so), so it must not read as "no
/// daemon runs" to `start` and `stop`.
pub fn locks_usable(root: &Path) -> bool {
    let Ok(dir) = dir::lock_dir() else {
        return false;
    };
    let Ok(path) = lock_path(dir, root) else {
        return false;
    };
    match std::fs::symlink_metadata(&path) {
        Ok(meta) => {
            meta.file_type().is_file() && state::is_trusted_owner(crate::platform::ext::owner_of(&meta))
        }
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}

/// The live daemon watching exactly the tree at `root`, if any (and if the lock directory can
/// be used). A lock held for a directory of another name is not counted: its tree was removed
/// (and this one was given its inode) or moved here, and its daemon has lost it.
pub fn holder_of(root: &Path) -> Option<Holder> {
    let path = lock_path(dir::lock_dir().ok()?, root).ok()?;
    let holder = is_held(&path).then(|| read_holder(&path)).flatten()?;
    (holder.root == root).then_some(holder)
}

/// The live daemon keeping its state in `state_dir`, whichever tree it watches, found by the
/// note of the lock it holds: a daemon whose root was removed, moved or replaced (its lock is
/// named after a tree no path leads to now) is still found by its record.
pub fn holder_for_state(state_dir: &Path) -> Option<Holder> {
    let dir = dir::lock_dir().ok()?;
    let listing = std::fs::read_dir(dir).ok()?;
    listing.flatten().find_map(|entry| {
        let path = entry.path();
        let note = read_note(&path).filter(|note| note.state_dir == state_dir)?;
        is_held(&path).then(|| with_url(note))
    })
}

/// A live daemon of this user's whose tree holds `root` or lies inside it (not `root`
/// itself): two such daemons would each record the other's agents' writes as work from
/// outside their turns.
pub fn overlapping(root: &Path) -> Option<Holder> {
    let dir = dir::lock_dir().ok()?;
    let around = root.ancestors().skip(1).find_map(|above| {
        let path = lock_path(dir, above).ok()?;
        is_held(&path).then(|| read_holder(&path)).flatten()
    });
    around.or_else(|| inside(dir, root))
}

/// A live daemon watching a tree inside `root`: its lock names a root below this one that
/// still is the tree the lock is named after. Another tree's files are looked at only once
/// its note names a root below this one: a lock of a tree on a hung mount (a FUSE server
/// gone) holds up no other start.
fn inside(dir: &Path, root: &Path) -> Option<Holder> {
    let listing = std::fs::read_dir(dir).ok()?;
    listing.flatten().find_map(|entry| {
        let path = entry.path();
        let note = read_note(&path)?;
        let below = note.root != root && note.root.starts_with(root);
        let same_tree = below && is_held(&path) && lock_path(dir, &note.root).ok()? == path;
        same_tree.then(|| with_url(note))
    })
}

/// Opens the lock file at `path` to read it: not through a symlink, and only a regular file
/// of this user's (or root's); else `None`, and a warning says why.
fn open_lock(path: &Path) -> Option<File> {
    let opened = OpenOptions::new().read(true).no_follow().open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot open this workspace lock (a symlink?): ignored");
            return None;
        }
    };
    match check_lock_file(&file, path) {
        Ok(()) => Some(file),
        Err(why) => {
            tracing::warn!("{why}");
            None
        }
    }
}

/// A lock file is a regular file of this user's (or root's).
fn check_lock_file(file: &File, path: &Path) -> Result<(), String> {
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file: ignored", path.display()));
    }
    state::check_owner(path, crate::platform::ext::owner_of(&meta)).map_err(|e| e.to_string())
}

/// `<dir>/<device>-<inode>.lock` of the tree at `root`.
fn lock_path(dir: &Path, root: &Path) -> io::Result<PathBuf> {
    let (dev, ino) = crate::platform::ext::identity(root)?;
    Ok(dir.join(format!("{dev}-{ino}.lock")))
}

/// Whether a live process holds the lock at `path`.
fn is_held(path: &Path) -> bool {
    open_lock(path).is_some_and(|file| crate::platform::ext::is_write_locked(&file))
}

/// Takes the write lock of the whole file without waiting; `false` when another has it.
fn set_write_lock(file: &File) -> io::Result<bool> {
    crate::platform::ext::try_write_lock(file)
}

/// Overwrites the note in place, then cuts what a longer earlier note left: a reader takes
/// the first line only, so it never sees half of one.
fn write_note(file: &File, holder: &Holder) -> io::Result<()> {
    let mut line = serde_json::to_vec(holder).map_err(io::Error::other)?;
    line.push(b'\n');
    crate::platform::ext::write_all_at(file, &line, 0)?;
    file.set_len(line.len() as u64)
}

/// The most of a lock file read: its note is one short line.
const NOTE_LIMIT: u64 = 64 * 1024;

/// Who holds the lock at `path`, with the URL of its `daemon.json` when that is its own (and
/// this user's: `state::read_info` believes no other user's file).
fn read_holder(path: &Path) -> Option<Holder> {
    read_note(path).map(with_url)
}

/// The note of the lock at `path` alone (nothing of its tree or state dir is touched).
fn read_note(path: &Path) -> Option<Holder> {
    let mut bytes = Vec::new();
    open_lock(path)?.take(NOTE_LIMIT).read_to_end(&mut bytes).ok()?;
    let line = bytes.split(|&b| b == b'\n').next()?;
    serde_json::from_slice(line).ok()
}

/// The holder with the URL of its `daemon.json`, when that is its own.
fn with_url(mut holder: Holder) -> Holder {
    holder.url = state::read_info(&holder.state_dir)
        .ok()
        .filter(|info| info.pid == holder.pid)
        .map(|info| info.url);
    holder
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

    #[test]
    fn a_symlink_as_the_lock_is_refused_and_turns_the_tree_lock_off() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        let dir = dir::lock_dir().expect("the lock directory");
        let path = lock_path(dir, &root).expect("lock path");
        assert!(locks_usable(&root));
        // A lock left by an earlier tree whose inode this one reuses (a daemon killed -9).
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &path).expect("symlink");
        let refused = TreeLock::acquire(&root, &root.join("state"));
        let _ = std::fs::remove_file(&path);
        match refused {
            Err(Refusal::Unusable(why)) => assert!(why.contains("is a symlink"), "{why}"),
            _ => panic!("a symlink planted as the lock was used"),
        }
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &path).expect("symlink");
        let usable = locks_usable(&root);
        let _ = std::fs::remove_file(&path);
        assert!(!usable, "a symlink as the lock reads as a usable lock");
    }
}
