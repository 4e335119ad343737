//! The batch: the paths hinted and not yet recorded, and when they are to be. A burst is
//! recorded once it settles (`SETTLE` without a hint), a continuous stream at least every
//! `MAX_DELAY`, a huge one at `MAX_PENDING` paths; after a storage fault not before the
//! back-off has passed (250 ms doubling to 5 s). Every decision takes the time as an argument
//! (the worker passes `Instant::now()`), so the timing cases are data: `batch_cases/*.toml`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::paths::RelPath;

/// Quiet time after the last hint before a batch is recorded (editors' save bursts, `sed -i`
/// temp files). A turn marker does not wait for it.
pub const SETTLE: Duration = Duration::from_millis(20);
/// A continuous stream of hints is still recorded at least this often. What the stream wrote
/// is read meanwhile at idle priority, each file once it has been quiet for a moment
/// (`engine::early`), and recorded ahead in blocks; this bounds what is left. A turn marker
/// does not wait for it.
pub const MAX_DELAY: Duration = Duration::from_secs(2);
pub const MAX_PENDING: usize = 20_000;
/// Back-off after a batch failed (disk full, I/O error) before trying again: doubled at
/// every failure up to `RETRY_MAX`. A turn marker retries at once.
pub const RETRY_AFTER: Duration = Duration::from_millis(250);
pub const RETRY_MAX: Duration = Duration::from_secs(5);

pub struct Batch {
    pending: BTreeSet<RelPath>,
    /// When the oldest pending path was added (`None` while nothing is pending).
    first: Option<Instant>,
    last_hint: Instant,
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl Batch {
    pub fn new(now: Instant) -> Self {
        Self {
            pending: BTreeSet::new(),
            first: None,
            last_hint: now,
            retry_at: None,
            backoff: RETRY_AFTER,
        }
    }

    /// A path an event named.
    pub fn hint(&mut self, path: RelPath, now: Instant) {
        self.first.get_or_insert(now);
        self.last_hint = now;
        self.pending.insert(path);
    }

    /// Paths to record again (they kept changing while read, or the store failed them); the
    /// batch is due as if they had been hinted when the last hint came.
    pub fn requeue(&mut self, paths: impl IntoIterator<Item = RelPath>, now: Instant) {
        self.first.get_or_insert(now);
        self.pending.extend(paths);
    }

    /// Everything pending, in path order; the batch is empty after.
    pub fn take(&mut self) -> Vec<RelPath> {
        self.first = None;
        std::mem::take(&mut self.pending).into_iter().collect()
    }

    /// Takes `paths` out of the batch: they are recorded apart, ahead of it.
    pub fn remove(&mut self, paths: &[RelPath]) {
        for path in paths {
            self.pending.remove(path);
        }
        if self.pending.is_empty() {
            self.first = None;
        }
    }

    /// Drops what is pending (a full rescan is to see it all, or capture stopped).
    pub fn clear(&mut self) {
        self.first = None;
        self.pending.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    pub fn last_hint(&self) -> Instant {
        self.last_hint
    }

    /// A storage fault: nothing is retried before the back-off, which doubles.
    pub fn failed(&mut self, now: Instant) {
        self.retry_at = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(RETRY_MAX);
    }

    /// The store took everything: no back-off any more.
    pub fn succeeded(&mut self) {
        self.retry_at = None;
        self.backoff = RETRY_AFTER;
    }

    /// Whether the back-off (if any) has passed.
    pub fn may_retry(&self, now: Instant) -> bool {
        self.retry_at.is_none_or(|at| now >= at)
    }

    /// When the back-off ends, while there is one.
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// Whether the batch is to be recorded now.
    pub fn due(&self, now: Instant) -> bool {
        let Some(first) = self.first else {
            return false;
        };
        if !self.may_retry(now) {
            return false;
        }
        self.pending.len() >= MAX_PENDING
            || now.duration_since(self.last_hint) >= SETTLE
            || now.duration_since(first) >= MAX_DELAY
    }

    /// When the batch will be due if no hint comes meanwhile.
    pub fn deadline(&self) -> Option<Instant> {
        self.first.map(|first| {
            let settle = (self.last_hint + SETTLE).min(first + MAX_DELAY);
            self.retry_at.map_or(settle, |retry| settle.max(retry))
        })
    }
}

#[cfg(test)]
mod cases;
