//! Early reads: the files of a burst read while the command that writes them still runs, on
//! threads at idle priority, so the batch (above all the one a turn's end marker waits for)
//! finds them read, hashed and compressed. The agent waits for its command and the marker:
//! the reading happens on a core the command leaves idle, not after it.
//!
//! A path is asked for once its latest hint is `QUIET` old. What was read stands for the path
//! only while no later hint named it: a write after the read began has its own event, and a
//! marker's batch comes after every event before the marker (its cookie), so a read without a
//! later hint is the path as it is at the marker. One change has no event of its own: a
//! watched directory moved away takes its files with it, so its `Gone` drops everything read
//! early. Every batch taken or cleared ends an epoch: what was asked for before is dropped,
//! read or not. (A file with several hard links written in place through another name has no
//! event for this name either: its early read may predate that write, as any read of it does
//! when the write comes after its batch; the verification pass finds it.)
//!
//! Once `RECORD_AHEAD` reads wait, the worker records them (`take_ready`) while the burst goes
//! on, as a batch due early for those paths alone: the same turn is open (a marker records
//! what is pending before it changes the turns), so they are attributed as at the marker, and
//! the marker's own transaction is left with the tail of the burst.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::capture::record::{Observer, ReadEarly};
use crate::fs::read::{Observation, observe};
use crate::model::{State, now_ns};
use crate::paths::RelPath;
use crate::stats::Stats;
use crate::store::blobs::INLINE_MAX;

/// How long a path goes without a hint before it is read early: a file written in several
/// chunks is read once, after the last.
pub const QUIET: Duration = Duration::from_millis(10);
/// The most reads held or asked for at once, and the most bytes of inline content held: past
/// either, the batch reads the rest itself.
const MAX_HELD: usize = 4096;
const MAX_HELD_BYTES: usize = 32 << 20;
/// Reads waiting, or bytes of content held, past which they are recorded ahead of the batch.
const RECORD_AHEAD: usize = 512;
const RECORD_AHEAD_BYTES: usize = 4 << 20;
/// Readers: the command has one core; the rest, when idle, read.
const READERS: usize = 2;
/// Hints waiting to be quiet, at most: past it, the batch reads the rest itself.
const MAX_QUEUED: usize = 4 * MAX_HELD;

struct Job {
    path: RelPath,
    hint: u64,
    epoch: u64,
}

struct Done {
    path: RelPath,
    hint: u64,
    epoch: u64,
    read: ReadEarly,
}

pub struct EarlyReads {
    stats: Arc<Stats>,
    /// `None` once no reader could be started: nothing is read early.
    jobs: Option<Sender<Job>>,
    /// The readers' results, through a channel: a reader at idle priority preempted while
    /// holding a lock would hold up the worker, and a marker with it.
    done: Receiver<Done>,
    /// Bumped when a batch takes everything: jobs of an older epoch are skipped.
    epoch: Arc<AtomicU64>,
    /// Each pending path's latest hint, by number.
    hinted: HashMap<RelPath, u64>,
    /// The hints in the order they came: the path, its number, when.
    queue: VecDeque<(RelPath, u64, Instant)>,
    next_hint: u64,
    /// Reads of the current epoch taken from the readers, each for its path's latest hint.
    held: HashMap<RelPath, ReadEarly>,
    held_bytes: usize,
    /// Asked for in the current epoch and not taken back yet.
    asked: usize,
}

impl EarlyReads {
    pub fn new(observer: Observer, stats: Arc<Stats>) -> Self {
        let epoch = Arc::new(AtomicU64::new(0));
        let (tx, rx) = channel::<Job>();
        let (done_tx, done) = channel::<Done>();
        let rx = Arc::new(Mutex::new(rx));
        let started = (0..READERS).filter(|i| {
            let (observer, epoch, rx, done) = (observer.clone(), epoch.clone(), rx.clone(), done_tx.clone());
            std::thread::Builder::new()
                .name(format!("early-read-{i}"))
                .spawn(move || serve(&observer, &epoch, &rx, &done))
                .is_ok()
        });
        let jobs = (started.count() > 0).then_some(tx);
        Self {
            stats,
            jobs,
            done,
            epoch,
            hinted: HashMap::new(),
            queue: VecDeque::new(),
            next_hint: 0,
            held: HashMap::new(),
            held_bytes: 0,
            asked: 0,
        }
    }

    /// A path an event named.
    pub fn hinted(&mut self, path: &RelPath, now: Instant) {
        if self.jobs.is_none() {
            return;
        }
        self.next_hint += 1;
        self.hinted.insert(path.clone(), self.next_hint);
        if self.queue.len() < MAX_QUEUED {
            self.queue.push_back((path.clone(), self.next_hint, now));
        }
        // What was read before this write does not stand for the path any more.
        if let Some(read) = self.held.remove(path) {
            self.held_bytes = self.held_bytes.saturating_sub(inline_bytes(&read.observed));
        }
    }

    /// Asks for every path quiet for `QUIET`, as long as there is room.
    pub fn ask_quiet(&mut self, now: Instant) {
        if self.jobs.is_none() {
            return;
        }
        self.collect();
        let epoch = self.epoch.load(Ordering::Acquire);
        while self.has_room() {
            let Some((path, hint, at)) = self.queue.pop_front() else {
                return;
            };
            if at + QUIET > now {
                self.queue.push_front((path, hint, at));
                return;
            }
            if self.hinted.get(&path) != Some(&hint) || asked_to_fail(&path) {
                continue;
            }
            let job = Job { path, hint, epoch };
            if self.jobs.as_ref().is_none_or(|jobs| jobs.send(job).is_err()) {
                // Every reader is gone: nothing more is read early.
                self.jobs = None;
                self.queue.clear();
                return;
            }
            self.asked += 1;
        }
    }

    /// When the next path will be quiet, while there is room to ask for it.
    pub fn deadline(&self) -> Option<Instant> {
        let (_, _, at) = self.queue.front()?;
        self.has_room().then_some(*at + QUIET)
    }

    /// What was read early of the pending paths, for the batch taking them all; the epoch ends.
    pub fn take(&mut self) -> HashMap<RelPath, ReadEarly> {
        self.collect();
        let held = std::mem::take(&mut self.held);
        self.end_epoch();
        held
    }

    /// Drops everything: the pending paths are to be read another way (a rescan), or what
    /// was read may stand for nothing (a directory gone).
    pub fn clear(&mut self) {
        self.take();
    }

    fn has_room(&self) -> bool {
        self.asked + self.held.len() < MAX_HELD && self.held_bytes < MAX_HELD_BYTES
    }

    /// Enough waits to be recorded ahead of the batch.
    pub fn ready(&mut self) -> bool {
        self.collect();
        self.held.len() >= RECORD_AHEAD || self.held_bytes >= RECORD_AHEAD_BYTES
    }

    /// What was read early, for those paths to be recorded now, apart from the rest of the
    /// batch; a later hint of one of them asks for it again.
    pub fn take_ready(&mut self) -> HashMap<RelPath, ReadEarly> {
        let held = std::mem::take(&mut self.held);
        for path in held.keys() {
            self.hinted.remove(path);
        }
        self.held_bytes = 0;
        held
    }

    fn end_epoch(&mut self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.hinted.clear();
        self.queue.clear();
        self.held_bytes = 0;
        self.asked = 0;
    }

    /// Takes the readers' results: those still standing for their path are held, the rest
    /// dropped.
    fn collect(&mut self) {
        let epoch = self.epoch.load(Ordering::Acquire);
        while let Ok(d) = self.done.try_recv() {
            if d.epoch != epoch {
                continue;
            }
            self.asked = self.asked.saturating_sub(1);
            if !usable(&d.read.observed) || self.hinted.get(&d.path) != Some(&d.hint) {
                continue;
            }
            self.held_bytes += inline_bytes(&d.read.observed);
            self.stats.read_early.fetch_add(1, Ordering::Relaxed);
            if let Some(older) = self.held.insert(d.path, d.read) {
                self.held_bytes = self.held_bytes.saturating_sub(inline_bytes(&older.observed));
            }
        }
    }
}

/// What can stand for a path at its batch: a file whose content is held in memory (inline, so
/// nothing was written to the store's directory that a dropped read would leave behind), a
/// directory, a symlink, or nothing there.
fn usable(observed: &Observation) -> bool {
    match observed {
        Observation::Absent => true,
        Observation::Present(p) => match &p.state {
            State::File(f) => {
                !f.is_too_large()
                    && p.streamed.is_none()
                    && p.blob.as_ref().is_none_or(|b| b.inline.is_some())
            }
            _ => true,
        },
        _ => false,
    }
}

fn inline_bytes(observed: &Observation) -> usize {
    match observed {
        Observation::Present(p) => p
            .blob
            .as_ref()
            .and_then(|b| b.inline.as_ref())
            .map_or(0, Vec::len),
        _ => 0,
    }
}

/// The test knob that makes a reader panic on a path (`capture::panic_if_asked`) is for the
/// batch's readers: such a path is left to them.
fn asked_to_fail(path: &RelPath) -> bool {
    crate::test_knobs::get().panic_on.as_deref() == Some(path.file_name())
}

/// A reader: at idle priority (not on FUSE: `fs::fuse`), reads what it is asked for until the
/// worker is gone, skipping what an epoch ended since it was asked. Files larger than an inline
/// blob are left to the batch (read here as too large, which is not used): their content would
/// be written to the store's directory, and a read dropped later would leave it there.
fn serve(observer: &Observer, epoch: &AtomicU64, jobs: &Mutex<Receiver<Job>>, done: &Sender<Done>) {
    if crate::fs::fuse::reads_at_idle(observer.root.fd()) {
        crate::platform::lower_own_priority();
    }
    let max_file_size = observer.max_file_size.min(INLINE_MAX as u64);
    loop {
        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = job else {
            return;
        };
        if job.epoch != epoch.load(Ordering::Acquire) {
            continue;
        }
        let at_ns = now_ns();
        let observed = observe(&observer.root, &job.path, max_file_size, &observer.blobs);
        let read = ReadEarly { observed, at_ns };
        let sent = done.send(Done {
            path: job.path,
            hint: job.hint,
            epoch: job.epoch,
            read,
        });
        if sent.is_err() {
            return;
        }
    }
}
