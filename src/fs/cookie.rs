//! The daemon's own files in the root, cookies (`.filewatchd-cookie-<instance>-<n>`), and
//! what they are for besides the barrier (`engine::barrier`): letting notify's thread catch up
//! with the daemon's own writes.
//!
//! A rollback of 10,000 files makes some 90,000 events in a second and a half (each file's temp
//! file written, swapped into place, the old one removed) on the machine's every core; notify's
//! thread, waiting for one meanwhile, fell 16,384 events behind (the kernel's
//! `max_queued_events`), the queue overflowed, and the whole workspace was rescanned after the
//! undo: 1.7 s at a million files, which the next marker waited for.
//!
//! So a rollback writing many files stops every so many (`Drain::per_pass`) and waits here: it
//! plants a cookie in the root, as the barrier does, and notify's thread, once it has read that
//! cookie's event, has read every event before it. The worker gets the cookie's hint too, and
//! ignores it as one of its own (`IgnoreRules::is_cookie`).

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::paths::RelPath;

/// Name prefix of the daemon's cookie files, created and removed in the root by the daemon.
/// The prefix alone does not make a cookie: see [`cookie_instance`].
pub const COOKIE_PREFIX: &[u8] = b".filewatchd-cookie-";

/// This process's cookie instance: 128 random bits drawn once and written into the name of
/// every cookie it makes (`.filewatchd-cookie-<instance>-<n>`). A file whose name merely
/// starts with the prefix is the user's, tracked like any other; the state directory keeps
/// the instances whose cookies a killed daemon may have left (`state::StateDir`).
pub fn cookie_instance() -> &'static str {
    static INSTANCE: OnceLock<String> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        let mut raw = [0u8; 16];
        if crate::platform::random_bytes(&mut raw).is_err() {
            // No kernel randomness: still unique to this process and moment.
            let seed = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
            raw.copy_from_slice(&blake3::hash(seed.as_bytes()).as_bytes()[..16]);
        }
        raw.iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// A new cookie's name (`.filewatchd-cookie-<instance>-<n>`), never the same twice in this
/// process: the barrier's and the drain's (`Drain`) cookies share the counter.
pub fn next_cookie_name() -> RelPath {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    let name = format!(
        "{}{}-{n}",
        String::from_utf8_lossy(COOKIE_PREFIX),
        cookie_instance()
    );
    RelPath::from_fs_bytes(name.into_bytes())
}

/// The instance a cookie's file name carries (`<prefix><32 hex>-<digits>`), if it has that shape.
pub fn cookie_instance_of(name: &[u8]) -> Option<&[u8]> {
    let rest = name.strip_prefix(COOKIE_PREFIX)?;
    let (instance, counter) = (rest.get(..32)?, rest.get(32..)?);
    let counter = counter.strip_prefix(b"-")?;
    let hex = instance
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    let digits = !counter.is_empty() && counter.iter().all(u8::is_ascii_digit);
    (hex && digits).then_some(instance)
}

const QUEUE_LIMIT: &str = "/proc/sys/fs/inotify/max_queued_events";
/// The kernel's default `max_queued_events`, when the limit cannot be read.
const DEFAULT_QUEUE: usize = 16_384;
/// The most events one file's change makes in one pass of a rollback: its temp file created,
/// written, closed and its mode set, or swapped into place (two renames' four events) and what
/// it swapped out removed.
const EVENTS_PER_FILE: usize = 8;

/// The cookies waited for, shared by the rollback that plants them and notify's thread.
pub struct Drain {
    root: PathBuf,
    /// The kernel's queue limit, taken when the watcher's instance was (as the kernel does).
    per_pass: usize,
    /// `names.len()`, kept beside it so that notify's thread, at every event, takes no lock
    /// while nobody waits.
    waiting: AtomicUsize,
    names: Mutex<HashSet<RelPath>>,
    arrived: Condvar,
}

impl Drain {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            per_pass: per_catch_up(),
            waiting: AtomicUsize::new(0),
            names: Mutex::new(HashSet::new()),
            arrived: Condvar::new(),
        }
    }

    /// How many files a rollback changes in one pass before it lets notify's thread catch up.
    pub fn per_pass(&self) -> usize {
        self.per_pass
    }

    /// Notify's thread read an event naming `path`.
    pub fn saw(&self, path: &RelPath) {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        if self.waited_for(|names| names.remove(path)) {
            self.arrived.notify_all();
        }
    }

    /// Plants a cookie and waits, at most `timeout`, until notify's thread has read its event:
    /// every event before it has been read then. False when the cookie could not be planted
    /// or did not come back in time (then a rescan catches what the watcher missed).
    pub fn catch_up(&self, timeout: Duration) -> bool {
        let cookie = next_cookie_name();
        let abs = cookie.to_abs(&self.root);
        self.waited_for(|names| names.insert(cookie.clone()));
        let planted = OpenOptions::new().write(true).create_new(true).open(&abs).is_ok();
        let came = planted && self.wait_for(&cookie, Instant::now() + timeout);
        if !came {
            self.waited_for(|names| names.remove(&cookie));
        }
        if planted {
            let _ = std::fs::remove_file(&abs);
        }
        came
    }

    /// Changes the cookies waited for, and `waiting` with them.
    fn waited_for<T>(&self, change: impl FnOnce(&mut HashSet<RelPath>) -> T) -> T {
        let mut names = self.lock();
        let changed = change(&mut names);
        self.waiting.store(names.len(), Ordering::Release);
        changed
    }

    fn wait_for(&self, cookie: &RelPath, deadline: Instant) -> bool {
        let mut names = self.lock();
        while names.contains(cookie) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            names = match self.arrived.wait_timeout(names, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<RelPath>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Files whose events fill at most half the kernel's queue.
fn per_catch_up() -> usize {
    let limit = std::fs::read_to_string(QUEUE_LIMIT)
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_QUEUE);
    (limit / EVENTS_PER_FILE / 2).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookie_nobody_reads_times_out_and_is_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let drain = Drain::new(dir.path());
        assert!(!drain.catch_up(Duration::from_millis(20)));
        assert_eq!(drain.waiting.load(Ordering::Acquire), 0);
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
        assert!(left.is_empty(), "the cookie is removed: {left:?}");
    }

    #[test]
    fn a_cookie_seen_ends_the_wait() {
        let dir = tempfile::tempdir().expect("temp dir");
        let drain = Drain::new(dir.path());
        let done = std::sync::atomic::AtomicBool::new(false);
        let came = std::thread::scope(|scope| {
            // Stands in for notify's thread: it reports every file that appears in the root.
            scope.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    for entry in std::fs::read_dir(dir.path()).expect("list").flatten() {
                        drain.saw(&RelPath::from_fs_bytes(entry.file_name().into_encoded_bytes()));
                    }
                    std::thread::yield_now();
                }
            });
            let came = drain.catch_up(Duration::from_secs(30));
            done.store(true, Ordering::Release);
            came
        });
        assert!(came);
        assert_eq!(drain.waiting.load(Ordering::Acquire), 0);
    }
}
