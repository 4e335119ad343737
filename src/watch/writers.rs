//! Who wrote each file, where the kernel says (docs/tracking.md, "By process"): with
//! `CAP_SYS_ADMIN`, fanotify reports the pid of every process that closes a file it wrote on
//! the workspace's file system. A thread of its own reads the events as they come, while the
//! writer most likely still runs, and keeps each written file's writers by their ancestry
//! (`crate::fs::procs`): the chain of parents that names the agent session they descend from
//! (`crate::capture::owners`). inotify stays the record of what changed; this only says who.
//!
//! Files are known by device and inode, so a file written under a temp name and renamed into
//! place (`sed -i`) is the one recorded. The daemon's own writes (a rollback's) are left out;
//! its barrier cookies are followed, so a marker knows when every write before it is in
//! (`caught_up`). Without the capability (or fanotify), nothing starts and ownership is by
//! tool-call windows alone.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::fs::cookie::COOKIE_PREFIX;
use crate::fs::procs;

/// A file by device and inode.
pub type FileId = (u64, u64);

/// The ancestry of one writer: its pid, then its parents, nearest first.
pub type Chain = Vec<u32>;

/// Written files kept between two batches at most: past this, the oldest are forgotten (their
/// writes then fall to the tool-call windows).
const FILES_MAX: usize = 200_000;
const CHAIN_MAX: usize = 64;

#[derive(Default)]
struct Seen {
    writers: HashMap<FileId, Vec<Chain>>,
    cookies: HashSet<Vec<u8>>,
}

/// The fanotify listener, while the daemon runs.
pub struct Writers {
    seen: Arc<(Mutex<Seen>, Condvar)>,
}

impl Writers {
    /// Starts listening on the file system that holds `root`; why not, when it cannot.
    pub fn start(root: &Path) -> Result<Writers, String> {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let fd = init(&root)?;
        let seen = Arc::new((Mutex::new(Seen::default()), Condvar::new()));
        let shared = seen.clone();
        // The thread owns the descriptor: it reads until the daemon exits.
        std::thread::Builder::new()
            .name("fanotify".into())
            .spawn(move || read_events(&fd, &root, &shared))
            .map_err(|e| format!("cannot start the fanotify reader: {e}"))?;
        Ok(Writers { seen })
    }

    /// The writers of every file written since the last call.
    pub fn take(&self) -> HashMap<FileId, Vec<Chain>> {
        let Ok(mut seen) = self.seen.0.lock() else {
            return HashMap::new();
        };
        std::mem::take(&mut seen.writers)
    }

    /// Waits (at most `patience`) until the barrier cookie `name` was seen: every write made
    /// before it is then known.
    pub fn caught_up(&self, name: &[u8], patience: Duration) -> bool {
        let (lock, signal) = &*self.seen;
        let until = Instant::now() + patience;
        let Ok(mut seen) = lock.lock() else {
            return false;
        };
        loop {
            if seen.cookies.remove(name) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match signal.wait_timeout(seen, left) {
                Ok((next, _)) => seen = next,
                Err(_) => return false,
            }
        }
    }
}

fn init(root: &Path) -> Result<OwnedFd, String> {
    use std::os::unix::ffi::OsStrExt;
    let flags = libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_UNLIMITED_QUEUE;
    let event_flags = (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_LARGEFILE | libc::O_NOATIME) as u32;
    // SAFETY: plain system call; the descriptor it returns is owned below.
    let raw = unsafe { libc::fanotify_init(flags, event_flags) };
    if raw < 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!("fanotify is not available to this daemon ({err}): it needs CAP_SYS_ADMIN"));
    }
    // SAFETY: `raw` is a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let path = std::ffi::CString::new(root.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    let mark = libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM;
    // SAFETY: `fd` is a fanotify descriptor, `path` a NUL-terminated string.
    let marked = unsafe { libc::fanotify_mark(fd.as_raw_fd(), mark, libc::FAN_CLOSE_WRITE, libc::AT_FDCWD, path.as_ptr()) };
    if marked != 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!("fanotify cannot watch the file system of {} ({err})", root.display()));
    }
    Ok(fd)
}

/// Reads events until the descriptor is closed with the daemon.
fn read_events(fd: &OwnedFd, root: &Path, seen: &(Mutex<Seen>, Condvar)) {
    let me = std::process::id();
    let mut buf = vec![0u8; 64 * 1024];
    let mut chains = Chains::default();
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            let err = std::io::Error::last_os_error();
            if n < 0 && err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            tracing::debug!(error = %err, "fanotify reader stops");
            return;
        }
        let events = parse(&buf[..n as usize]);
        let mut found = Vec::with_capacity(events.len());
        for (pid, event_fd) in events {
            // SAFETY: the kernel opened this descriptor for us with the event.
            let file = unsafe { OwnedFd::from_raw_fd(event_fd) };
            if let Some(written) = describe(&file, pid, me, root, &mut chains) {
                found.push(written);
            }
        }
        keep(seen, found);
    }
}

/// Each event's pid and file descriptor.
fn parse(buf: &[u8]) -> Vec<(u32, RawFd)> {
    let size = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut events = Vec::new();
    let mut at = 0;
    while at + size <= buf.len() {
        // SAFETY: the kernel wrote whole metadata records; the read is unaligned-safe.
        let meta: libc::fanotify_event_metadata =
            unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
        let len = meta.event_len as usize;
        if len < size || meta.vers != libc::FANOTIFY_METADATA_VERSION {
            break;
        }
        if meta.fd >= 0 {
            events.push((meta.pid as u32, meta.fd));
        }
        at += len;
    }
    events
}

enum Written {
    Cookie(Vec<u8>),
    File(FileId, Chain),
}

/// What one event says: our own cookie, or a file beneath the root and its writer.
fn describe(file: &OwnedFd, pid: u32, me: u32, root: &Path, chains: &mut Chains) -> Option<Written> {
    let path = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    let rel = path.strip_prefix(root).ok()?;
    if pid == me {
        let name = rel.as_os_str().as_encoded_bytes();
        return name.starts_with(COOKIE_PREFIX).then(|| Written::Cookie(name.to_vec()));
    }
    let meta = rustix::fs::fstat(file).ok()?;
    Some(Written::File((meta.st_dev, meta.st_ino), chains.of(pid)))
}

/// Each writer's ancestry, read once while it keeps writing (a `sed -i` over 2,000 files is
/// one process), forgotten after `CHAINS_FOR` so a pid used again is read again.
#[derive(Default)]
struct Chains {
    known: HashMap<u32, Chain>,
    since: Option<Instant>,
}

const CHAINS_FOR: Duration = Duration::from_secs(2);

impl Chains {
    fn of(&mut self, pid: u32) -> Chain {
        let now = Instant::now();
        if self.since.is_none_or(|since| now - since > CHAINS_FOR) {
            self.known.clear();
            self.since = Some(now);
        }
        self.known
            .entry(pid)
            .or_insert_with(|| {
                let mut chain = vec![pid];
                chain.extend(procs::ancestry(pid, CHAIN_MAX));
                chain
            })
            .clone()
    }
}

fn keep(seen: &(Mutex<Seen>, Condvar), found: Vec<Written>) {
    if found.is_empty() {
        return;
    }
    let Ok(mut kept) = seen.0.lock() else {
        return;
    };
    for written in found {
        match written {
            Written::Cookie(name) => {
                // Cookies nobody waits for (a rescan's) are not kept for ever.
                if kept.cookies.len() > 1000 {
                    kept.cookies.clear();
                }
                kept.cookies.insert(name);
            }
            Written::File(id, chain) => {
                if kept.writers.len() >= FILES_MAX && !kept.writers.contains_key(&id) {
                    continue;
                }
                let chains = kept.writers.entry(id).or_default();
                if !chains.contains(&chain) {
                    chains.push(chain);
                }
            }
        }
    }
    seen.1.notify_all();
}
