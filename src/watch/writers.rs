//! Who wrote each file, where the kernel says (docs/tracking.md, "By process"): with
//! `CAP_SYS_ADMIN`, fanotify reports the pid of every process that closes a file it wrote on
//! the workspace's file system. A thread of its own reads the events as they come, while the
//! writer most likely still runs, and keeps each written file's writers by their ancestry
//! (`crate::fs::procs`): the chain of parents that names the agent session they descend from
//! (`crate::capture::owners`). inotify stays the record of what changed; this only says who.
//!
//! Files are known by their file handle (`FAN_REPORT_FID`, `name_to_handle_at`), so a file
//! written under a temp name and renamed into place (`sed -i`) is the one recorded, and no
//! descriptor is ever opened for an event: closing one would drop the POSIX locks SQLite holds
//! on the daemon's own index. The daemon's own writes are left out. A marker's batch first
//! waits until the reader has taken every event queued before it (`caught_up`). Without the
//! capability (or fanotify), nothing starts and ownership is by tool-call windows alone.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::fs::procs;

/// A file by its handle on the watched file system (its type, then its bytes).
pub type FileId = Vec<u8>;

/// The ancestry of one writer: its pid, then its parents, nearest first.
pub type Chain = Vec<u32>;

/// Written files kept between two batches at most (the whole file system's, not only the
/// workspace's: a handle says nothing of where a file is): past this, later ones are
/// forgotten (their writes then fall to the tool-call windows).
const FILES_MAX: usize = 200_000;
const CHAIN_MAX: usize = 64;
const HANDLE_MAX: usize = 128;

#[derive(Default)]
struct Seen {
    /// Each file written since the last `take`, with when it was first seen.
    writers: HashMap<FileId, (Instant, Vec<Chain>)>,
    chains: Chains,
    /// Drain passes finished: `caught_up` waits for one that began after it was called.
    passes: u64,
}

/// Files seen this long ago and not taken are the rest of the file system's (the workspace's
/// are taken at its next batch, within seconds): forgotten once many have piled up.
const STALE: Duration = Duration::from_secs(30);
const PRUNE_AT: usize = 10_000;

struct Shared {
    fd: OwnedFd,
    seen: Mutex<Seen>,
    /// Signalled each time the reader has taken what was queued.
    drained: Condvar,
}

/// The fanotify listener, while the daemon runs.
pub struct Writers {
    shared: Arc<Shared>,
}

/// `FILEWATCHD_FANOTIFY=off` keeps ownership to the tool-call windows even with the capability.
const FANOTIFY_ENV: &str = "FILEWATCHD_FANOTIFY";

impl Writers {
    /// The daemon's listener for `root`, when it may have one; `stats` says which way it is
    /// (`status`, `doctor`).
    pub fn for_daemon(root: &Path, stats: &crate::stats::Stats) -> Option<Writers> {
        let started = match std::env::var(FANOTIFY_ENV).as_deref() {
            Ok("off" | "0" | "false") => Err(format!("{FANOTIFY_ENV} is off")),
            _ => Writers::start(root),
        };
        match started {
            Ok(writers) => {
                stats.set_ownership(None);
                tracing::info!("ownership by process: fanotify names each file's writers");
                Some(writers)
            }
            Err(why) => {
                tracing::debug!(why, "ownership by tool-call windows");
                stats.set_ownership(Some(why));
                None
            }
        }
    }

    /// Starts listening on the file system that holds `root`; why not, when it cannot.
    pub fn start(root: &Path) -> Result<Writers, String> {
        let shared = Arc::new(Shared {
            fd: init(root)?,
            seen: Mutex::new(Seen::default()),
            drained: Condvar::new(),
        });
        let reader = shared.clone();
        std::thread::Builder::new()
            .name("fanotify".into())
            .spawn(move || read_events(&reader))
            .map_err(|e| format!("cannot start the fanotify reader: {e}"))?;
        Ok(Writers { shared })
    }

    /// The writers of every file written since the last call.
    pub fn take(&self) -> HashMap<FileId, Vec<Chain>> {
        let Ok(mut seen) = self.shared.seen.lock() else {
            return HashMap::new();
        };
        let taken = std::mem::take(&mut seen.writers);
        taken.into_iter().map(|(id, (_, chains))| (id, chains)).collect()
    }

    /// Waits (at most `patience`) until the reader has taken every event queued now: the
    /// writers of every write made before the call are then known.
    pub fn caught_up(&self, patience: Duration) -> bool {
        let until = Instant::now() + patience;
        let Ok(mut seen) = self.shared.seen.lock() else {
            return false;
        };
        // The reader drains while holding the lock: with it held here, nothing queued now is
        // being taken, and the next pass to finish began after this call and took it all.
        if !readable(&self.shared.fd) {
            return true;
        }
        let wanted = seen.passes + 1;
        while seen.passes < wanted {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match self.shared.drained.wait_timeout(seen, left) {
                Ok((next, _)) => seen = next,
                Err(_) => return false,
            }
        }
        true
    }
}

/// The handle of the file at `path` (not following a final symlink), as fanotify names it.
pub fn handle_of(path: &Path) -> Option<FileId> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let header = std::mem::size_of::<libc::file_handle>();
    // u32s: the header's alignment, and room for HANDLE_MAX bytes after it.
    let mut buf = vec![0u32; (header + HANDLE_MAX).div_ceil(4)];
    let handle = buf.as_mut_ptr().cast::<libc::file_handle>();
    let mut mount_id: libc::c_int = 0;
    // SAFETY: `buf` is aligned for a file_handle and holds HANDLE_MAX bytes after its header,
    // as `handle_bytes` tells the kernel.
    let got = unsafe {
        (*handle).handle_bytes = HANDLE_MAX as u32;
        libc::name_to_handle_at(libc::AT_FDCWD, path.as_ptr(), handle, &mut mount_id, 0)
    };
    if got != 0 {
        return None;
    }
    // SAFETY: the call filled the header.
    let (len, kind) = unsafe { ((*handle).handle_bytes as usize, (*handle).handle_type) };
    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    Some(file_id(kind, bytes.get(header..header + len)?))
}

fn file_id(kind: i32, handle: &[u8]) -> FileId {
    let mut id = kind.to_le_bytes().to_vec();
    id.extend_from_slice(handle);
    id
}

fn init(root: &Path) -> Result<OwnedFd, String> {
    use std::os::unix::ffi::OsStrExt;
    let flags = libc::FAN_CLASS_NOTIF
        | libc::FAN_CLOEXEC
        | libc::FAN_NONBLOCK
        | libc::FAN_UNLIMITED_QUEUE
        | libc::FAN_REPORT_FID;
    let event_flags = (libc::O_RDONLY | libc::O_CLOEXEC) as u32;
    // SAFETY: plain system call; the descriptor it returns is owned below.
    let raw = unsafe { libc::fanotify_init(flags, event_flags) };
    if raw < 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!(
            "fanotify is not available to this daemon ({err}): it needs CAP_SYS_ADMIN"
        ));
    }
    // SAFETY: `raw` is a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let path = std::ffi::CString::new(root.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    let mark = libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM;
    // SAFETY: `fd` is a fanotify descriptor, `path` a NUL-terminated string.
    let marked = unsafe {
        libc::fanotify_mark(
            fd.as_raw_fd(),
            mark,
            libc::FAN_CLOSE_WRITE,
            libc::AT_FDCWD,
            path.as_ptr(),
        )
    };
    if marked != 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!(
            "fanotify cannot watch the file system of {} ({err})",
            root.display()
        ));
    }
    Ok(fd)
}

/// Whether events wait to be read.
fn readable(fd: &OwnedFd) -> bool {
    poll_in(fd, 0).unwrap_or(false)
}

/// Waits at most `timeout_ms` (-1: for ever) for events to read.
fn poll_in(fd: &OwnedFd, timeout_ms: libc::c_int) -> std::io::Result<bool> {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    match unsafe { libc::poll(&mut poll, 1, timeout_ms) } {
        n if n < 0 => Err(std::io::Error::last_os_error()),
        n => Ok(n > 0 && poll.revents & libc::POLLIN != 0),
    }
}

/// Waits for events, then takes all that are queued under the lock, until the daemon exits.
fn read_events(shared: &Shared) {
    let me = std::process::id();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match poll_in(&shared.fd, -1) {
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return stop(shared),
            Ok(_) => {}
        }
        let Ok(mut seen) = shared.seen.lock() else {
            return stop(shared);
        };
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::read(shared.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            for (pid, id) in parse(&buf[..n as usize]) {
                if pid != me {
                    seen.keep(id, pid);
                }
            }
        }
        seen.passes += 1;
        drop(seen);
        shared.drained.notify_all();
    }
}

/// The reader gives up: the mark goes, so the kernel queues nothing more for nobody to read.
fn stop(shared: &Shared) {
    tracing::warn!("the fanotify reader stopped: writers are no longer named");
    // SAFETY: a fanotify descriptor; a flush takes no path.
    unsafe {
        libc::fanotify_mark(
            shared.fd.as_raw_fd(),
            libc::FAN_MARK_FLUSH | libc::FAN_MARK_FILESYSTEM,
            0,
            libc::AT_FDCWD,
            std::ptr::null(),
        );
    }
}

/// Each event's pid and file.
fn parse(buf: &[u8]) -> Vec<(u32, FileId)> {
    let size = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut events = Vec::new();
    let mut at = 0;
    while at + size <= buf.len() {
        // SAFETY: the kernel wrote whole records; the read is unaligned-safe.
        let meta: libc::fanotify_event_metadata =
            unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
        let len = meta.event_len as usize;
        if len < size || at + len > buf.len() || meta.vers != libc::FANOTIFY_METADATA_VERSION {
            break;
        }
        let info = buf
            .get(at + meta.metadata_len as usize..at + len)
            .unwrap_or_default();
        if let Some(id) = fid_of(info) {
            events.push((meta.pid as u32, id));
        }
        at += len;
    }
    events
}

/// The file handle of an event's first FID record: a 4-byte header, the 8-byte fsid, then
/// `struct file_handle` (bytes, type, the handle).
fn fid_of(info: &[u8]) -> Option<FileId> {
    let (&kind, rest) = info.split_first()?;
    if kind != libc::FAN_EVENT_INFO_TYPE_FID {
        return None;
    }
    let handle = rest.get(3 + 8..)?;
    let bytes = u32::from_ne_bytes(handle.get(..4)?.try_into().ok()?) as usize;
    let kind = i32::from_ne_bytes(handle.get(4..8)?.try_into().ok()?);
    Some(file_id(kind, handle.get(8..8 + bytes)?))
}

impl Seen {
    fn keep(&mut self, id: FileId, pid: u32) {
        let now = Instant::now();
        if self.writers.len() >= PRUNE_AT {
            self.writers
                .retain(|_, (seen, _)| now.duration_since(*seen) < STALE);
        }
        if self.writers.len() >= FILES_MAX && !self.writers.contains_key(&id) {
            return;
        }
        let chain = self.chains.of(pid);
        let (_, chains) = self.writers.entry(id).or_insert_with(|| (now, Vec::new()));
        if !chains.contains(&chain) {
            chains.push(chain);
        }
    }
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
