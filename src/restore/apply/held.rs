//! The directories an apply wrote its temp files in, held open until it ends: its temp files
//! are removed through them, wherever those directories are by then (a directory moved away
//! or swapped for a symlink takes its temp files along; a path would miss them, or follow
//! the symlink into another directory).

use crate::platform::sys::{AsFd, OwnedFd};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::fs::ops::{Parent, unlink_temp_at};
use crate::paths::RelPath;

/// At most this many directories are held (each an open descriptor): beyond them, a temp
/// file is found by its path and, if a race moved it, by the tag sweep.
const MAX_HELD: usize = 512;

/// Each directory of the apply's temp files, by the path it had when a temp file was written
/// in it (two, when the path named another directory by the second write).
#[derive(Default)]
pub(super) struct HeldDirs {
    dirs: Mutex<HashMap<Option<RelPath>, Vec<Held>>>,
}

/// One directory held: its inode number, and its descriptor.
type Held = (u64, Arc<OwnedFd>);

impl HeldDirs {
    /// Holds `parent` (the directory of `path`, where a temp file was just made).
    pub(super) fn hold(&self, path: &RelPath, parent: &Parent) {
        let Ok(ino) = crate::platform::sys::fs::fstat(&parent.fd).map(|st| st.st_ino) else {
            return;
        };
        let Ok(mut dirs) = self.dirs.lock() else {
            return;
        };
        let full = dirs.len() >= MAX_HELD;
        let held = dirs.entry(path.parent());
        if full && matches!(held, std::collections::hash_map::Entry::Vacant(_)) {
            return;
        }
        let held = held.or_default();
        if held.iter().any(|(i, _)| *i == ino) {
            return;
        }
        if let Ok(fd) = parent.fd.try_clone() {
            held.push((ino, Arc::new(fd)));
        }
    }

    /// Removes the temp file `temp` of `path` through its held directories: `None` when none
    /// is held, else whether the file is gone from each.
    pub(super) fn remove(&self, path: &RelPath, temp: &str) -> Option<bool> {
        let held = self.dirs.lock().ok()?.get(&path.parent()).cloned()?;
        Some(held.iter().all(|(_, fd)| unlink_temp_at(fd.as_fd(), temp)))
    }
}
