//! Walking the tracked tree (or one subtree) with the ignore rules: the first index, the
//! restart reconcile, rescans and new directories all start here. Symlinks are never
//! followed and ignored directories are never entered. Several directories are listed at once:
//! a cold walk waits on the disk for each listing and each stat, a warm one on the CPU.

use std::ffi::OsStr;
use std::fs::DirEntry;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Condvar, Mutex, RwLock};

use crate::model::{StatKey, StatPrint};
use crate::paths::RelPath;
use crate::watch::filter::IgnoreRules;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Symlink,
    Dir,
}

#[derive(Debug)]
pub struct Entry {
    pub path: RelPath,
    pub kind: EntryKind,
    /// `None` when the walk was asked not to stat (nothing in the index to compare with); its
    /// print only (`StatKey::print`): a restart holds a million of these.
    pub stat: Option<StatPrint>,
}

// A walk holds one per path until it is merged: a million of them are 48 MB.
const _: () = assert!(std::mem::size_of::<Entry>() <= 48);

/// Directories listed at the same time.
const WALKERS: usize = 4;

/// Every tracked entry beneath `start` (the root when `None`), `start` itself excluded, in no
/// particular order. Directories whose listing fails are skipped
/// and counted. Every directory below the root is armed (`arm`, a batch at a time) before it is
/// listed, so a file created in it after the listing has its own event. Without `with_stat` the kinds
/// come from the listing itself and no entry is stat'ed: a first index reads every file anyway.
pub fn walk(
    root: &Path,
    start: Option<&RelPath>,
    rules: &mut IgnoreRules,
    arm: impl FnMut(&[RelPath]) + Send,
    with_stat: bool,
) -> (Vec<Entry>, usize) {
    walk_from(root, vec![start.cloned()], rules, arm, with_stat)
}

/// `walk` beneath each of several directories (`None`: the root) at once.
pub fn walk_from(
    root: &Path,
    starts: Vec<Option<RelPath>>,
    rules: &mut IgnoreRules,
    arm: impl FnMut(&[RelPath]) + Send,
    with_stat: bool,
) -> (Vec<Entry>, usize) {
    let (entries, unreadable, _) = walk_from_unless(root, starts, rules, arm, with_stat, &|| false);
    (entries, unreadable)
}

/// `walk`, abandoned as soon as `stop` says so (asked before each directory is listed): the
/// third value says whether it was, and then the entries are incomplete (the verification
/// pass yields this way to a command waiting for the worker).
pub fn walk_unless(
    root: &Path,
    start: Option<&RelPath>,
    rules: &mut IgnoreRules,
    arm: impl FnMut(&[RelPath]) + Send,
    with_stat: bool,
    stop: &(dyn Fn() -> bool + Sync),
) -> (Vec<Entry>, usize, bool) {
    walk_from_unless(root, vec![start.cloned()], rules, arm, with_stat, stop)
}

pub fn walk_from_unless(
    root: &Path,
    starts: Vec<Option<RelPath>>,
    rules: &mut IgnoreRules,
    mut arm: impl FnMut(&[RelPath]) + Send,
    with_stat: bool,
    stop: &(dyn Fn() -> bool + Sync),
) -> (Vec<Entry>, usize, bool) {
    let below_root: Vec<RelPath> = starts.iter().flatten().cloned().collect();
    if !below_root.is_empty() {
        arm(&below_root);
    }
    let shared = Shared {
        root,
        with_stat,
        stop,
        rules: RwLock::new(rules),
        arm: Mutex::new(arm),
        queue: Mutex::new(Queue {
            dirs: starts,
            busy: 0,
            waiting: 0,
            failed: false,
            stopped: false,
        }),
        ready: Condvar::new(),
    };
    let found: Vec<(Vec<Entry>, usize)> = std::thread::scope(|scope| {
        let walkers: Vec<_> = (0..WALKERS).map(|_| scope.spawn(|| shared.run())).collect();
        walkers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    let stopped = shared.queue.lock().unwrap_or_else(|p| p.into_inner()).stopped;
    let unreadable = found.iter().map(|(_, n)| n).sum();
    (
        concat(found.into_iter().map(|(e, _)| e).collect()),
        unreadable,
        stopped,
    )
}

/// The walkers' lists as one, exactly sized, grown from the largest: never a second copy of
/// the whole beside the parts (a million entries are 48 MB; the realloc of a block that size
/// remaps its pages instead of copying them).
fn concat(mut parts: Vec<Vec<Entry>>) -> Vec<Entry> {
    let Some(largest) = (0..parts.len()).max_by_key(|&i| parts[i].len()) else {
        return Vec::new();
    };
    let mut entries = parts.swap_remove(largest);
    entries.reserve_exact(parts.iter().map(Vec::len).sum());
    for mut part in parts {
        entries.append(&mut part);
    }
    entries.shrink_to_fit();
    entries
}

struct Shared<'a, A> {
    root: &'a Path,
    with_stat: bool,
    stop: &'a (dyn Fn() -> bool + Sync),
    rules: RwLock<&'a mut IgnoreRules>,
    arm: Mutex<A>,
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// Directories waiting to be listed, and how many walkers are listing one (and may add more).
struct Queue {
    dirs: Vec<Option<RelPath>>,
    busy: usize,
    /// Walkers waiting for a directory: only they are woken, and only as many as there are
    /// new directories (a walk of 71,428 directories woke every walker after each).
    waiting: usize,
    /// A walker panicked: the others stop instead of waiting for it (the scope re-raises).
    failed: bool,
    /// `stop` said so: the walk ends unfinished.
    stopped: bool,
}

impl<A: FnMut(&[RelPath])> Shared<'_, A> {
    /// One walker: lists directories until none is left and no other walker can add one.
    fn run(&self) -> (Vec<Entry>, usize) {
        let _panic = StopOnPanic(&self.queue, &self.ready);
        let (mut entries, mut unreadable) = (Vec::new(), 0);
        while let Some(dir) = self.next_dir() {
            let subdirs = match self.list(&dir, &mut entries) {
                Some(subdirs) => subdirs,
                None => {
                    unreadable += 1;
                    Vec::new()
                }
            };
            self.done_with(subdirs);
        }
        (entries, unreadable)
    }

    fn next_dir(&self) -> Option<Option<RelPath>> {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if queue.failed || queue.stopped {
                return None;
            }
            if (self.stop)() {
                queue.stopped = true;
                self.ready.notify_all();
                return None;
            }
            if let Some(dir) = queue.dirs.pop() {
                queue.busy += 1;
                return Some(dir);
            }
            if queue.busy == 0 {
                return None;
            }
            queue.waiting += 1;
            queue = self.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
            queue.waiting -= 1;
        }
    }

    fn done_with(&self, subdirs: Vec<RelPath>) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let added = subdirs.len();
        queue.dirs.extend(subdirs.into_iter().map(Some));
        queue.busy -= 1;
        if queue.busy == 0 && queue.dirs.is_empty() {
            // The walk is over: every waiting walker returns.
            self.ready.notify_all();
        } else {
            for _ in 0..added.min(queue.waiting) {
                self.ready.notify_one();
            }
        }
    }

    /// Lists one directory into `entries`; returns its tracked subdirectories, armed, or
    /// `None` when it cannot be listed.
    fn list(&self, dir: &Option<RelPath>, entries: &mut Vec<Entry>) -> Option<Vec<RelPath>> {
        let abs = dir
            .as_ref()
            .map_or_else(|| self.root.to_path_buf(), |d| d.to_abs(self.root));
        let children: Vec<DirEntry> = std::fs::read_dir(&abs).ok()?.flatten().collect();
        if children
            .iter()
            .any(|c| IgnoreRules::is_ignore_file(&rel_child(dir, &c.file_name())))
        {
            self.rules
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .reload_dir(dir.as_ref());
        }
        let kept = self.tracked(dir, children);
        let mut subdirs = Vec::new();
        for (path, child, kind) in kept {
            let (kind, stat) = if self.with_stat {
                // DirEntry::metadata is an fstatat(AT_SYMLINK_NOFOLLOW) on Linux: never follows.
                let Ok(meta) = child.metadata() else { continue };
                let Some(kind) = kind_of(meta.file_type()) else {
                    continue;
                };
                (kind, Some(StatKey::from_metadata(&meta).print()))
            } else {
                (kind, None)
            };
            if kind == EntryKind::Dir {
                subdirs.push(path.clone());
            }
            entries.push(Entry { path, kind, stat });
        }
        if !subdirs.is_empty() {
            (self.arm.lock().unwrap_or_else(|p| p.into_inner()))(&subdirs);
        }
        Some(subdirs)
    }

    /// The children the ignore rules keep, with the kind the listing gave.
    fn tracked(&self, dir: &Option<RelPath>, children: Vec<DirEntry>) -> Vec<(RelPath, DirEntry, EntryKind)> {
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        children
            .into_iter()
            .filter_map(|child| {
                // From the listing's d_type; an lstat only where the file system gives none.
                let kind = kind_of(child.file_type().ok()?)?;
                let path = rel_child(dir, &child.file_name());
                (!rules.is_ignored(&path, kind == EntryKind::Dir)).then_some((path, child, kind))
            })
            .collect()
    }
}

/// Stops the other walkers when this one panics, so nobody waits for it forever.
struct StopOnPanic<'a>(&'a Mutex<Queue>, &'a Condvar);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).failed = true;
            self.1.notify_all();
        }
    }
}

fn kind_of(file_type: std::fs::FileType) -> Option<EntryKind> {
    match file_type {
        t if t.is_dir() => Some(EntryKind::Dir),
        t if t.is_symlink() => Some(EntryKind::Symlink),
        t if t.is_file() => Some(EntryKind::File),
        _ => None,
    }
}

fn rel_child(dir: &Option<RelPath>, name: &OsStr) -> RelPath {
    match dir {
        Some(d) => d.join(name.as_bytes()),
        None => RelPath::from_fs_bytes(name.as_bytes().to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_told_to_stop_says_it_is_incomplete() {
        let root = tempfile::tempdir().expect("tempdir");
        let state = tempfile::tempdir().expect("tempdir");
        for dir in ["a/b", "c"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("mkdir");
            std::fs::write(root.path().join(dir).join("f"), "x").expect("write");
        }
        let mut rules = IgnoreRules::new(root.path(), state.path(), &[]).expect("rules");
        let (entries, _, stopped) = walk_unless(root.path(), None, &mut rules, |_| {}, true, &|| false);
        assert_eq!((entries.len(), stopped), (5, false));
        let (entries, _, stopped) = walk_unless(root.path(), None, &mut rules, |_| {}, true, &|| true);
        assert_eq!((entries.len(), stopped), (0, true));
    }
}
