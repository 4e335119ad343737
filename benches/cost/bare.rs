//! The bare inotify watcher, armed on the tree in a thread of the bench for the runs of its
//! side, as any inotify-based tool must watch it. Every directory filewatchd would watch (all
//! but `.git/` and the ignored `node_modules/`) gets a watch with the mask filewatchd arms
//! (notify's core events: create, delete, modify, attributes, moves); a directory created
//! later is armed when its event comes; every event is read and dropped, the queue read at
//! most once every 2 ms (filewatchd's own pause in a burst), so a command's events pile up
//! and are read in one go: the fewest wake-ups a watcher that keeps up can cost. (A watcher
//! that reads each event as it comes made the 2,000-file sed 1.56× slower here, filewatchd
//! 1.20×.) A command's time under it is what the kernel makes the command pay for being
//! watched at all, before any work of the watcher's own, so filewatchd ÷ bare is what
//! filewatchd adds on top.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// What filewatchd's watcher arms on each directory (notify's `EventKindMask::CORE` without
/// recursion).
fn mask() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::MOVE_SELF
        | WatchFlags::DELETE_SELF
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::ONLYDIR
}

/// The watcher while it runs; dropped, it stops.
pub struct Watcher {
    fd: Arc<OwnedFd>,
    root: i32,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the watcher on `tree`.
pub fn start(tree: &Path) -> Result<Watcher, String> {
    let fd = inotify::init(CreateFlags::CLOEXEC).map_err(|e| format!("inotify_init: {e}"))?;
    let mut dirs = HashMap::new();
    arm_tree(&fd, tree, &mut dirs)?;
    let root = dirs
        .iter()
        .find_map(|(wd, dir)| (dir == tree).then_some(*wd))
        .ok_or("the tree itself was not armed")?;
    let fd = Arc::new(fd);
    let stop = Arc::new(AtomicBool::new(false));
    let (fd2, stop2) = (fd.clone(), stop.clone());
    let thread = std::thread::Builder::new()
        .name("bare-inotify".into())
        .spawn(move || drain(&fd2, dirs, &stop2))
        .map_err(|e| format!("spawn the bare watcher: {e}"))?;
    Ok(Watcher {
        fd,
        root,
        stop,
        thread: Some(thread),
    })
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Its removal is an event (`IN_IGNORED`): the thread wakes, sees the stop and ends.
        let _ = inotify::remove_watch(&*self.fd, self.root);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn skipped(name: &OsStr) -> bool {
    name == ".git" || name == "node_modules"
}

fn arm_tree(fd: &OwnedFd, dir: &Path, dirs: &mut HashMap<i32, PathBuf>) -> Result<(), String> {
    let wd = inotify::add_watch(fd, dir, mask()).map_err(|e| format!("watch {}: {e}", dir.display()))?;
    dirs.insert(wd, dir.to_path_buf());
    let entries = std::fs::read_dir(dir).map_err(|e| format!("list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("list {}: {e}", dir.display()))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && !skipped(&entry.file_name()) {
            arm_tree(fd, &entry.path(), dirs)?;
        }
    }
    Ok(())
}

/// Between two reads of the queue.
const PAUSE: Duration = Duration::from_millis(2);

/// Reads every event until stopped; a new directory is armed as its event is read (a
/// directory moved in is too, without what it holds: no command of the bench moves one in).
fn drain(fd: &OwnedFd, mut dirs: HashMap<i32, PathBuf>, stop: &AtomicBool) {
    let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
    let mut reader = inotify::Reader::new(fd, &mut buf);
    loop {
        let Ok(event) = reader.next() else {
            return;
        };
        if stop.load(Ordering::Acquire) {
            return;
        }
        if let Some(dir) = new_dir(&event, &dirs)
            && let Ok(wd) = inotify::add_watch(fd, &dir, mask())
        {
            dirs.insert(wd, dir);
        }
        if reader.is_buffer_empty() {
            std::thread::sleep(PAUSE);
        }
    }
}

fn new_dir(event: &inotify::Event<'_>, dirs: &HashMap<i32, PathBuf>) -> Option<PathBuf> {
    let flags = event.events();
    let created = flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO);
    if !created || !flags.contains(ReadFlags::ISDIR) {
        return None;
    }
    let name = OsStr::from_bytes(event.file_name()?.to_bytes());
    (!skipped(name)).then(|| dirs.get(&event.wd()).map(|parent| parent.join(name)))?
}
