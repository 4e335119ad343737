//! The watcher: notify's backend for the OS (inotify on Linux, FSEvents on macOS) with one
//! non-recursive watch per tracked directory,
//! so ignored directories (`.git/`, a gitignored `node_modules/`) cost no watch at all. The
//! notify callback only forwards hints to the capture worker: it never waits for the worker
//! or the disk, and sleeps only to let a burst of events pile up (`pace`, at most 2 ms a
//! wake-up), so a command's 10,000 events cost a few wake-ups, not 10,000.
//!
//! notify-debouncer-full is not used: its events leave only after its timeout and it has no
//! flush, while the barrier (G1) must see every event up to its cookie at once. Coalescing
//! happens in the capture worker instead, which re-reads the disk for every hint anyway.
//!
//! The barrier needs a backend that delivers one watch's events in the order they happened
//! and never merges the cookie's event into another: then the cookie's event coming back
//! proves every event before it has been read. inotify keeps one ordered queue per watcher.
//! On macOS, FSEvents was chosen over kqueue: its events carry increasing ids and a stream
//! delivers them in that order; it coalesces only events of one path, and every cookie has a
//! name never used before, so the cookie's own event is never merged away (a path written
//! both before and after the cookie may be reported once, after it, which only delays that
//! hint; the verification at every marker re-reads such paths). kqueue would need a
//! descriptor open for every watched file and directory (the process's descriptor limit),
//! and its directory events do not name the entry that changed. That FSEvents keeps the
//! barrier is reasoned from its documented order, not yet proven by a test run on macOS
//! (docs/platforms.md).

pub mod filter;
mod kept;
mod pace;
// Ownership by process needs fanotify, which only Linux has; elsewhere the module says so
// (`Writers::for_daemon` is `None`, with the reason in `status`) and the tool-call windows
// decide whose a write is.
#[cfg_attr(
    not(all(target_os = "linux", not(feature = "portable"))),
    path = "writers_absent.rs"
)]
pub mod writers;

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;

use notify::event::{EventKindMask, ModifyKind, RenameMode};
use notify::{Config, Event, EventKind, PathOp, RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::fs::cookie::Drain;
use crate::paths::RelPath;
use crate::stats::Stats;

/// More queued hints than this and the callback stops queueing and asks for a rescan
/// instead, so a burst cannot grow memory without bound.
const MAX_QUEUED_HINTS: usize = 1 << 20;

/// What the watcher tells its receiver: hints, never facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hint {
    /// A path an event named: something about it may have changed.
    Path(RelPath),
    /// A path an event named as removed or moved away. If it was a watched directory, its
    /// watch (and those beneath it) is gone with it: notify dropped them, or the inode they
    /// follow is no longer at this path. A directory now at the path is a new one to watch
    /// and walk, however soon it came and whatever the kernel's events' order.
    Gone(RelPath),
    /// Events were lost: everything must be re-checked.
    Rescan,
    /// The root directory itself had an event (moved, removed, replaced?).
    RootChanged,
    /// A hook queued a turn marker (`crate::queue`): the name of its file in the queue. The
    /// queue is watched by the same inotify instance as the workspace, so this comes in order
    /// with the hints of the writes made before it.
    Queued(OsString),
}

/// Where hints go: false once the receiver is gone.
pub type Deliver = Arc<dyn Fn(Hint) -> bool + Send + Sync>;

/// The forwarding end shared with notify's thread.
#[derive(Clone)]
pub struct HintSender {
    root: PathBuf,
    /// The marker queue, watched beside the workspace.
    queue: Option<PathBuf>,
    tx: Deliver,
    queued: Arc<AtomicUsize>,
    overflow: Arc<AtomicBool>,
    drain: Arc<Drain>,
    stats: Arc<Stats>,
}

impl HintSender {
    /// Hints go into `tx` as messages of the receiver's own type.
    pub fn new<M: From<Hint> + Send + 'static>(root: &Path, tx: Sender<M>, stats: Arc<Stats>) -> Self {
        let deliver: Deliver = Arc::new(move |hint| tx.send(M::from(hint)).is_ok());
        Self::with(root, deliver, stats)
    }

    fn with(root: &Path, tx: Deliver, stats: Arc<Stats>) -> Self {
        Self {
            root: root.to_path_buf(),
            queue: None,
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
            overflow: Arc::new(AtomicBool::new(false)),
            drain: Arc::new(Drain::new(root)),
            stats,
        }
    }

    /// Also watches the marker queue `dir` (outside the workspace) and forwards its markers.
    pub fn with_queue(mut self, dir: PathBuf) -> Self {
        self.queue = Some(dir);
        self
    }

    pub fn queued(&self) -> Arc<AtomicUsize> {
        self.queued.clone()
    }

    pub fn overflow(&self) -> Arc<AtomicBool> {
        self.overflow.clone()
    }

    fn forward(&self, result: notify::Result<Event>) {
        let event = match result {
            Ok(event) => event,
            Err(err) => return self.forward_error(err),
        };
        if event.need_rescan() {
            self.stats.overflows.fetch_add(1, Ordering::Relaxed);
            self.request_rescan();
            return;
        }
        for (i, abs) in event.paths.iter().enumerate() {
            if abs == &self.root {
                let _ = (self.tx)(Hint::RootChanged);
                continue;
            }
            if let Some(name) = self.queued_marker(abs) {
                let _ = (self.tx)(Hint::Queued(name));
                continue;
            }
            let Some(rel) = RelPath::from_abs(&self.root, abs) else {
                continue;
            };
            self.drain.saw(&rel);
            if self.queued.fetch_add(1, Ordering::AcqRel) >= MAX_QUEUED_HINTS {
                self.queued.fetch_sub(1, Ordering::AcqRel);
                self.request_rescan();
                return;
            }
            self.stats.hints.fetch_add(1, Ordering::Relaxed);
            let hint = if names_gone(&event.kind, i) {
                Hint::Gone(rel)
            } else {
                Hint::Path(rel)
            };
            if !(self.tx)(hint) {
                return;
            }
        }
    }

    /// The file name of a marker in the queue that `abs` names, if it names one.
    fn queued_marker(&self, abs: &Path) -> Option<OsString> {
        let queue = self.queue.as_deref()?;
        let name = abs.file_name()?;
        (abs.parent() == Some(queue) && crate::queue::is_marker_name(name)).then(|| name.to_os_string())
    }

    fn forward_error(&self, err: notify::Error) {
        if matches!(err.kind, notify::ErrorKind::MaxFilesWatch) {
            self.stats.set_degraded(WATCH_LIMIT);
        }
        self.stats.set_error(format!("watcher: {err}"));
        self.request_rescan();
    }

    fn request_rescan(&self) {
        if !self.overflow.swap(true, Ordering::AcqRel) {
            let _ = (self.tx)(Hint::Rescan);
        }
    }
}

/// Whether the `i`th path of an event of `kind` is gone from where it was: removed, or the
/// source of a rename (`Both` names the source first, then the destination).
fn names_gone(kind: &EventKind, i: usize) -> bool {
    match kind {
        EventKind::Remove(_) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => i == 0,
        _ => false,
    }
}

/// What `status` says while the watch limit leaves directories unwatched.
pub const WATCH_LIMIT: &str = "watch_limit: raise fs.inotify.max_user_watches \
    (sysctl -w fs.inotify.max_user_watches=524288; inside a user namespace the limit in force \
    may be its own user.max_inotify_watches); until then the directories it left \
    unwatched are verified by a stat walk at every turn marker and rollback";

/// What `status` says once a directory is too deep to watch.
const TOO_DEEP: &str = "directories deeper than inotify takes (paths over 4096 bytes) cannot be watched: \
    they are counted as unwatched and verified by a stat walk at every turn marker and rollback";

/// inotify refused the directory's path for its length.
fn is_too_deep(err: &notify::Error) -> bool {
    match &err.kind {
        notify::ErrorKind::Io(io) => io.raw_os_error() == Some(libc::ENAMETOOLONG),
        _ => false,
    }
}

/// The directories under watch, owned by the capture worker, and those the inotify watch
/// limit left unwatched: nothing reports their changes, so `capture::unwatched` walks them at
/// every marker (G2).
pub struct Watches {
    root: PathBuf,
    inner: RecommendedWatcher,
    watched: HashSet<RelPath>,
    unwatched: BTreeSet<RelPath>,
    /// `TOO_DEEP` was said (once a daemon).
    too_deep_said: bool,
    drain: Arc<Drain>,
    stats: Arc<Stats>,
}

impl Watches {
    pub fn start(hints: HintSender, stats: Arc<Stats>) -> notify::Result<Self> {
        let root = hints.root.clone();
        let queue = hints.queue.clone();
        let drain = hints.drain.clone();
        let config = Config::default()
            .with_follow_symlinks(false)
            .with_event_kinds(EventKindMask::CORE);
        let mut pace = pace::Pace::default();
        let forward = move |event| {
            hints.forward(event);
            if let Some(pause) = pace.after_event() {
                std::thread::sleep(pause);
                pace.paused();
            }
        };
        let inner = RecommendedWatcher::new(forward, config)?;
        let mut watches = Self {
            root,
            inner,
            watched: HashSet::new(),
            unwatched: BTreeSet::new(),
            too_deep_said: false,
            drain,
            stats,
        };
        let mode = if crate::platform::WATCH_SUBTREE {
            RecursiveMode::Recursive
        } else {
            RecursiveMode::NonRecursive
        };
        watches.inner.watch(&watches.root.clone(), mode)?;
        if let Some(queue) = queue {
            // Without it, markers queued from now on wait for the next rescan.
            if let Err(err) = watches.inner.watch(&queue, RecursiveMode::NonRecursive) {
                tracing::warn!(queue = %queue.display(), %err, "cannot watch the marker queue");
            }
        }
        // The root's own watch, counted even where no directory beneath it is ever armed.
        watches.count();
        Ok(watches)
    }

    /// What lets the daemon's own writers wait for this watcher to catch up with them.
    pub fn drain(&self) -> Arc<Drain> {
        self.drain.clone()
    }

    /// Arms a watch on a tracked directory (idempotent). Errors are counted, not fatal: the
    /// next rescan catches what an unwatched directory misses.
    pub fn watch(&mut self, dir: &RelPath) {
        self.watch_all(std::slice::from_ref(dir));
    }

    /// `watch` for many directories in one exchange with the watcher's thread (a walk arms
    /// thousands).
    pub fn watch_all(&mut self, dirs: &[RelPath]) {
        let mut todo: Vec<&RelPath> = dirs.iter().filter(|d| !self.watched.contains(*d)).collect();
        if crate::platform::WATCH_SUBTREE {
            // The root's watch already covers them.
            self.armed(todo.drain(..));
        }
        while let Some(&first) = todo.first() {
            let ops = todo
                .iter()
                .map(|d| PathOp::watch_non_recursive(d.to_abs(&self.root)))
                .collect();
            let Err(err) = self.inner.update_paths(ops) else {
                self.armed(todo.drain(..));
                break;
            };
            let applied = match err.origin {
                Some(_) => todo.len().saturating_sub(err.remaining.len() + 1),
                None => 0,
            };
            self.armed(todo.drain(..applied));
            let failed = todo.first().copied().unwrap_or(first);
            if matches!(err.source.kind, notify::ErrorKind::MaxFilesWatch) {
                // The limit holds for the rest of the batch too: none of it is watched.
                self.unwatched.extend(todo.drain(..).cloned());
                self.stats.set_degraded(WATCH_LIMIT);
                break;
            }
            if is_too_deep(&err.source) {
                // inotify takes a path: one past PATH_MAX cannot be watched, but can be walked.
                self.unwatched.insert(failed.clone());
                if !self.too_deep_said {
                    self.too_deep_said = true;
                    self.stats.set_error(TOO_DEEP.to_string());
                }
            } else {
                tracing::debug!(dir = %failed, error = %err.source, "could not watch a directory");
            }
            if err.origin.is_none() {
                break;
            }
            todo.remove(0);
        }
        self.count();
    }

    fn armed<'a>(&mut self, dirs: impl Iterator<Item = &'a RelPath>) {
        for dir in dirs {
            self.unwatched.remove(dir);
            self.watched.insert(dir.clone());
        }
    }

    fn count(&self) {
        self.stats
            .watched_dirs
            .store(self.watched.len() + 1, Ordering::Relaxed);
        self.stats
            .unwatched_dirs
            .store(self.unwatched.len(), Ordering::Relaxed);
        if self.unwatched.is_empty() {
            self.stats.clear_degraded(WATCH_LIMIT);
        }
    }

    /// Drops the watches of `dir` and everything beneath it (it was removed or moved away).
    pub fn unwatch_tree(&mut self, dir: &RelPath) {
        let gone: Vec<RelPath> = self
            .watched
            .iter()
            .filter(|w| w.starts_with(dir))
            .cloned()
            .collect();
        for path in gone {
            self.watched.remove(&path);
            if !crate::platform::WATCH_SUBTREE {
                let _ = self.inner.unwatch(&path.to_abs(&self.root));
            }
        }
        self.unwatched.retain(|u| !u.starts_with(dir));
        self.count();
    }

    pub fn is_watched(&self, dir: &RelPath) -> bool {
        self.watched.contains(dir)
    }

    /// The directories the watch limit left unwatched that lie beneath no other such
    /// directory, in the order of the paths beneath them (`dir/` sorts apart from `dir`: `a-b/`
    /// comes before `a/`). A walk of each covers every unwatched directory.
    pub fn unwatched_tops(&self) -> Vec<RelPath> {
        let beneath_another = |dir: &RelPath| {
            std::iter::successors(dir.parent(), RelPath::parent).any(|up| self.unwatched.contains(&up))
        };
        let mut tops: Vec<RelPath> = self
            .unwatched
            .iter()
            .filter(|dir| !beneath_another(dir))
            .cloned()
            .collect();
        tops.sort_by_key(RelPath::child_prefix);
        tops
    }

    /// Forgets an unwatched directory that is no longer a directory.
    pub fn forget_unwatched(&mut self, dir: &RelPath) {
        self.unwatched.retain(|u| !u.starts_with(dir));
        self.count();
    }
}
