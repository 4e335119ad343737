//! Walking the tracked tree (or one subtree) with the ignore rules: the first index, the
//! restart reconcile, rescans and new directories all start here. Symlinks are never
//! followed and ignored directories are never entered. Several directories are listed at once:
//! a cold walk waits on the disk for each listing and each stat, a warm one on the CPU.

use crate::platform::sys::OwnedFd;
use std::ffi::CStr;
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard, RwLock};

use crate::platform::sys::fs::{AtFlags, FileType, OFlags};

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

/// Directories listed at the same time by a walk below the root (a new directory, a scoped
/// rescan).
const WALKERS: usize = 4;

/// Directories listed at the same time by a walk of the whole tree (a start, a verification
/// pass, a rescan after lost events). From a cold disk each walker waits for the disk at
/// almost every directory and inode, so more of them keep more reads in flight: a cold
/// restart of a million files in 71,428 directories took 7.8-9.0 s with 4 walkers, 5.8-6.9 s
/// with 16 (and with 32). Warm, on 2 cores, 16 cost up to 0.2 s of a 2.2-2.3 s restart.
const TREE_WALKERS: usize = 16;

/// Directories armed in one exchange with the watcher's thread.
const ARM_BATCH: usize = 256;

/// How a walk lists: whether it stats each entry, when it gives up, and which entries it
/// keeps (a survey drops, as it lists, what the index proves unchanged: `super::known`).
#[derive(Clone, Copy)]
pub struct Walk<'a> {
    /// Without it the kinds come from the listing itself and no entry is stat'ed: a first
    /// index reads every file anyway.
    pub with_stat: bool,
    /// Asked before each directory is listed: once true, the walk ends unfinished (the
    /// verification pass yields this way to a command waiting for the worker).
    pub stop: &'a (dyn Fn() -> bool + Sync),
    pub keep: &'a (dyn Fn(&Entry) -> bool + Sync),
}

/// Every tracked entry beneath each start (`None`: the root), the starts themselves excluded,
/// in no particular order, that `how.keep` keeps. Directories whose listing fails are skipped
/// and counted. Every directory below the root is armed (`arm`, a batch at
/// a time) before it is listed, so a file created in it after the listing has its own event.
pub fn walk(
    root: &Path,
    starts: Vec<Option<RelPath>>,
    rules: &mut IgnoreRules,
    mut arm: impl FnMut(&[RelPath]) + Send,
    how: Walk<'_>,
) -> Listed {
    let walkers = if starts.iter().any(Option::is_none) {
        TREE_WALKERS
    } else {
        WALKERS
    };
    let below_root: Vec<RelPath> = starts.iter().flatten().cloned().collect();
    if !below_root.is_empty() {
        arm(&below_root);
    }
    let shared = Shared {
        root,
        how,
        rules: RwLock::new(rules),
        arm: Mutex::new(arm),
        queue: Mutex::new(Queue {
            dirs: starts,
            unarmed: Vec::new(),
            busy: 0,
            waiting: 0,
            failed: false,
            stopped: false,
        }),
        ready: Condvar::new(),
    };
    let found: Vec<Listed> = std::thread::scope(|scope| {
        let walkers: Vec<_> = (0..walkers).map(|_| scope.spawn(|| shared.run())).collect();
        walkers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    Listed {
        count: found.iter().map(|part| part.count).sum(),
        unreadable: found.iter().map(|part| part.unreadable).sum(),
        stopped: shared.queue.lock().unwrap_or_else(|p| p.into_inner()).stopped,
        entries: concat(found.into_iter().map(|part| part.entries).collect()),
    }
}

/// What a walk (or one of its walkers) listed.
#[derive(Default)]
pub struct Listed {
    /// The entries `Walk::keep` kept.
    pub entries: Vec<Entry>,
    /// Entries listed, kept or not.
    pub count: usize,
    /// Directories that could not be listed.
    pub unreadable: usize,
    /// `Walk::stop` ended the walk: the entries are incomplete.
    pub stopped: bool,
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
    how: Walk<'a>,
    rules: RwLock<&'a mut IgnoreRules>,
    arm: Mutex<A>,
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// Directories waiting to be listed, and how many walkers are listing one (and may add more).
struct Queue {
    /// Armed, to be listed.
    dirs: Vec<Option<RelPath>>,
    /// Found by their parent's listing, to be armed before they are listed: `ARM_BATCH` at a
    /// time, each batch one exchange with the watcher's thread (one a listing was 71,428
    /// exchanges at a million files, a tenth of a restart's CPU in wake-ups).
    unarmed: Vec<RelPath>,
    /// Walkers listing a directory or arming a batch (either may add directories).
    busy: usize,
    /// Walkers waiting for a directory: only they are woken, one to arm a listing's new
    /// directories, and as many as it armed (a walk of 71,428 directories woke every walker
    /// after each).
    waiting: usize,
    /// A walker panicked: the others stop instead of waiting for it (the scope re-raises).
    failed: bool,
    /// `stop` said so: the walk ends unfinished.
    stopped: bool,
}

impl<A: FnMut(&[RelPath])> Shared<'_, A> {
    /// One walker: lists directories until none is left and no other walker can add one.
    fn run(&self) -> Listed {
        let _panic = StopOnPanic(&self.queue, &self.ready);
        let mut listed = Listed::default();
        let mut scratch = Scratch::default();
        while let Some(dir) = self.next_dir() {
            let subdirs = match self.list(&dir, &mut listed, &mut scratch) {
                Some(subdirs) => subdirs,
                None => {
                    listed.unreadable += 1;
                    Vec::new()
                }
            };
            self.done_with(subdirs);
        }
        listed
    }

    fn next_dir(&self) -> Option<Option<RelPath>> {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if queue.failed || queue.stopped {
                return None;
            }
            if (self.how.stop)() {
                queue.stopped = true;
                self.ready.notify_all();
                return None;
            }
            if queue.unarmed.len() >= ARM_BATCH || (queue.dirs.is_empty() && !queue.unarmed.is_empty()) {
                queue = self.arm_batch(queue);
                continue;
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

    /// Arms the latest `ARM_BATCH` unarmed directories (the queue unlocked meanwhile: the
    /// others go on listing), then queues them for listing.
    fn arm_batch<'q>(&'q self, mut queue: MutexGuard<'q, Queue>) -> MutexGuard<'q, Queue> {
        let from = queue.unarmed.len().saturating_sub(ARM_BATCH);
        let batch: Vec<RelPath> = queue.unarmed.drain(from..).collect();
        queue.busy += 1;
        drop(queue);
        (self.arm.lock().unwrap_or_else(|p| p.into_inner()))(&batch);
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let added = batch.len();
        queue.dirs.extend(batch.into_iter().map(Some));
        queue.busy -= 1;
        for _ in 0..added.min(queue.waiting) {
            self.ready.notify_one();
        }
        queue
    }

    fn done_with(&self, subdirs: Vec<RelPath>) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let added = subdirs.len();
        queue.unarmed.extend(subdirs);
        queue.busy -= 1;
        if queue.busy == 0 && queue.dirs.is_empty() && queue.unarmed.is_empty() {
            // The walk is over: every waiting walker returns.
            self.ready.notify_all();
        } else if added > 0 && queue.waiting > 0 {
            // One walker arms them, and wakes others for what it armed.
            self.ready.notify_one();
        }
    }

    /// Lists one directory into `listed`; returns its tracked subdirectories (not armed yet),
    /// or `None` when it cannot be listed. Allocates only for what it keeps: a restart lists a
    /// million entries and keeps a few.
    fn list(
        &self,
        dir: &Option<RelPath>,
        listed: &mut Listed,
        scratch: &mut Scratch,
    ) -> Option<Vec<RelPath>> {
        let abs = dir
            .as_ref()
            .map_or_else(|| self.root.to_path_buf(), |d| d.to_abs(self.root));
        // Never through a symlink: a directory replaced by one since its parent was listed.
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // A directory past PATH_MAX (a tree thousands deep) a piece at a time.
        let fd = crate::fs::deep::open(&abs, flags).ok()?;
        scratch.read(&fd).ok()?;
        if scratch.names().any(IgnoreRules::is_ignore_name) {
            self.rules
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .reload_dir(dir.as_ref());
        }
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        let Scratch {
            names, ends, path, ..
        } = scratch;
        let mut subdirs = Vec::new();
        let mut from = 0;
        for &(end, listed_type) in ends.iter() {
            let name = &names[from..=end];
            from = end + 1;
            let Ok(name) = CStr::from_bytes_with_nul(name) else {
                continue;
            };
            let child = rel_child_in(dir, name.to_bytes(), std::mem::take(path));
            let Some(entry) = self.entry(&fd, name, listed_type, child, &rules) else {
                continue;
            };
            if entry.kind == EntryKind::Dir {
                subdirs.push(entry.path.clone());
            }
            listed.count += 1;
            if (self.how.keep)(&entry) {
                listed.entries.push(entry);
            } else {
                *path = entry.path.into_bytes();
            }
        }
        Some(subdirs)
    }

    /// The entry `name` of the directory open as `fd`, unless the ignore rules leave it out or
    /// it is of a kind never tracked (or gone). Its kind is the listing's (an lstat only where
    /// the file system gives none); a directory is never stat'ed: its own stat says nothing of
    /// its children, which are checked anyway.
    fn entry(
        &self,
        fd: &OwnedFd,
        name: &CStr,
        listed_type: FileType,
        path: RelPath,
        rules: &IgnoreRules,
    ) -> Option<Entry> {
        let lstat = || crate::platform::sys::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).ok();
        let mut stat = None;
        let kind = match kind_of(listed_type) {
            Some(kind) => kind,
            None if listed_type == FileType::Unknown => {
                stat = Some(lstat()?);
                kind_of(FileType::from_raw_mode(stat.as_ref()?.st_mode))?
            }
            None => return None,
        };
        if rules.is_ignored(&path, kind == EntryKind::Dir) {
            return None;
        }
        if !self.how.with_stat || kind == EntryKind::Dir {
            return Some(Entry {
                path,
                kind,
                stat: None,
            });
        }
        let stat = match stat {
            Some(stat) => stat,
            None => lstat()?,
        };
        let kind = kind_of(FileType::from_raw_mode(stat.st_mode))?;
        let stat = Some(StatKey::from_rustix(&stat).print());
        Some(Entry { path, kind, stat })
    }
}

/// A walker's buffers, reused from one directory to the next.
#[derive(Default)]
struct Scratch {
    /// What `getdents64` fills.
    dirents: crate::platform::DirReader,
    /// The listing's names end to end, each with its NUL, and where each NUL is with the type
    /// the listing gave.
    names: Vec<u8>,
    ends: Vec<(usize, FileType)>,
    /// The next entry's path, once an entry not kept gives its bytes back.
    path: Vec<u8>,
}

impl Scratch {
    /// The names in the directory open as `fd`, `.` and `..` left out.
    fn read(&mut self, fd: &OwnedFd) -> crate::platform::sys::io::Result<()> {
        self.names.clear();
        self.ends.clear();
        let (names, ends) = (&mut self.names, &mut self.ends);
        self.dirents.read(fd, |name, file_type| {
            let name = name.to_bytes_with_nul();
            if name != b".\0" && name != b"..\0" {
                names.extend_from_slice(name);
                ends.push((names.len() - 1, file_type));
            }
        })
    }

    /// The names, without their NULs.
    fn names(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().map(|&(end, _)| end + 1));
        starts
            .zip(&self.ends)
            .map(|(from, &(end, _))| &self.names[from..end])
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

fn kind_of(file_type: FileType) -> Option<EntryKind> {
    match file_type {
        FileType::Directory => Some(EntryKind::Dir),
        FileType::Symlink => Some(EntryKind::Symlink),
        FileType::RegularFile => Some(EntryKind::File),
        _ => None,
    }
}

/// `dir`'s child `name`, written into `bytes` (whatever they held).
fn rel_child_in(dir: &Option<RelPath>, name: &[u8], mut bytes: Vec<u8>) -> RelPath {
    bytes.clear();
    if let Some(dir) = dir {
        bytes.extend_from_slice(dir.as_bytes());
        bytes.push(b'/');
    }
    bytes.extend_from_slice(name);
    RelPath::from_fs_bytes(bytes)
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
        let mut walk_unless = |stop: bool| {
            let how = Walk {
                with_stat: true,
                stop: &move || stop,
                keep: &|_| true,
            };
            let listed = walk(root.path(), vec![None], &mut rules, |_| {}, how);
            (listed.entries.len(), listed.stopped)
        };
        assert_eq!(walk_unless(false), (5, false));
        assert_eq!(walk_unless(true), (0, true));
    }

    #[test]
    fn every_directory_is_armed_before_it_is_listed() {
        let root = tempfile::tempdir().expect("tempdir");
        let state = tempfile::tempdir().expect("tempdir");
        // More directories than one batch, nested, so arming runs in several exchanges.
        for i in 0..(ARM_BATCH + 40) {
            let dir = root.path().join(format!("d{}/e{i}", i % 7));
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("f"), "x").expect("write");
        }
        let mut rules = IgnoreRules::new(root.path(), state.path(), &[]).expect("rules");
        let armed = Mutex::new(std::collections::HashSet::new());
        let listed_unarmed = Mutex::new(Vec::new());
        let keep = |entry: &Entry| {
            if let Some(parent) = entry.path.parent()
                && !armed.lock().expect("armed").contains(&parent)
            {
                listed_unarmed.lock().expect("listed").push(entry.path.to_text());
            }
            true
        };
        let how = Walk {
            with_stat: true,
            stop: &|| false,
            keep: &keep,
        };
        let arm = |dirs: &[RelPath]| armed.lock().expect("armed").extend(dirs.iter().cloned());
        let listed = walk(root.path(), vec![None], &mut rules, arm, how);
        assert_eq!(listed.count, 7 + 2 * (ARM_BATCH + 40));
        assert_eq!(listed_unarmed.into_inner().expect("listed"), Vec::<String>::new());
        assert_eq!(armed.into_inner().expect("armed").len(), 7 + ARM_BATCH + 40);
    }
}
