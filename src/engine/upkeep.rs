//! The worker's upkeep between hints: a collection (retention) a step at a time, hints
//! recorded between its steps; the counts of each turn stored when it ends, and those
//! missing (turns ended before counts were stored, rows a collection or a late version made
//! stale) filled a few turns at a time while nothing else waits.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::worker::{GC_INTERVAL, Worker};
use crate::history::counts;
use crate::retention::{self, Collection, GcReport, Progress};
use crate::store::sql::TurnRow;

type GcReply = oneshot::Sender<rusqlite::Result<GcReport>>;

/// A collection under way and who waits for its report (no one for the daily one).
pub(super) struct GcRun {
    collection: Collection,
    reply: Option<GcReply>,
    /// Whether a test knob's hold was logged.
    held: bool,
}

/// While `FILEWATCHD_TEST_GC_HOLD` holds a collection, the worker looks again this often.
const HOLD_POLL: Duration = Duration::from_millis(10);

impl Worker {
    /// `filewatchd gc` (or the daily one, without a reply): a dry run answers at once; a
    /// collection begins, after any under way has finished.
    pub(super) fn collect_garbage(&mut self, dry_run: bool, reply: Option<GcReply>) {
        self.finish_collection();
        if !dry_run {
            self.next_gc = Instant::now() + GC_INTERVAL;
        }
        match retention::begin(&mut self.conn, &self.ctx.retention, dry_run) {
            Ok(Progress::More(collection)) => {
                self.gc = Some(GcRun {
                    collection,
                    reply,
                    held: false,
                })
            }
            Ok(Progress::Done(report)) => self.collected(reply, Ok(report)),
            Err(err) => self.collected(reply, Err(err)),
        }
    }

    /// Runs what is left of a collection under way: before a command that changes what it
    /// keeps (a pin made or removed), or another collection.
    pub(super) fn finish_collection(&mut self) {
        let Some(run) = self.gc.take() else {
            return;
        };
        let result = run.collection.run_to_end(&mut self.conn, &self.ctx.blobs);
        self.collected(run.reply, result);
    }

    /// One step of the collection under way, or a few turns' missing counts when idle. A
    /// command waiting for its cookie goes first: the step would hold it up.
    pub(super) fn upkeep(&mut self) {
        if let Some(mut run) = self.gc.take() {
            if !self.barrier.is_empty() || run.held() {
                self.gc = Some(run);
                return;
            }
            match run.collection.step(&mut self.conn, &self.ctx.blobs) {
                Ok(Progress::More(collection)) => {
                    self.gc = Some(GcRun {
                        collection,
                        reply: run.reply,
                        held: false,
                    })
                }
                Ok(Progress::Done(report)) => self.collected(run.reply, Ok(report)),
                Err(err) => self.collected(run.reply, Err(err)),
            }
            return;
        }
        if self.counts_owed && self.batch.is_empty() && self.barrier.is_empty() {
            match counts::fill_missing(&mut self.conn) {
                Ok(filled) => self.counts_owed = filled > 0,
                Err(err) => {
                    tracing::warn!(%err, "cannot store turn counts; they are computed on read");
                    self.counts_owed = false;
                }
            }
        }
    }

    /// When the upkeep wants to run next: now while it has work.
    pub(super) fn upkeep_deadline(&self) -> Option<Instant> {
        match (&self.gc, self.counts_owed) {
            (Some(run), _) if gc_held(&run.collection) => Some(Instant::now() + HOLD_POLL),
            // The cookie's arrival wakes the worker (or the barrier's own deadline).
            (Some(_), _) if !self.barrier.is_empty() => None,
            (Some(_), _) => Some(Instant::now()),
            (None, true) if self.batch.is_empty() && self.barrier.is_empty() => Some(Instant::now()),
            _ => None,
        }
    }

    /// Stores the counts of a turn that just ended; if that fails they are computed on read.
    pub(super) fn turn_ended(&mut self, turn: &TurnRow) {
        if let Err(err) = counts::store(&self.conn, turn) {
            tracing::warn!(%err, turn = turn.number, "cannot store turn counts; they are computed on read");
            self.counts_owed = true;
        }
    }

    /// A collection ended (or failed: what it committed stays, the next one goes on from
    /// there); it forgot the counts of the turns it changed.
    fn collected(&mut self, reply: Option<GcReply>, result: rusqlite::Result<GcReport>) {
        self.counts_owed = true;
        match (reply, result) {
            (Some(reply), result) => {
                let _ = reply.send(result);
            }
            (None, Err(err)) => {
                let message = format!("garbage collection failed: {err}");
                self.ctx.stats.set_error(message);
            }
            (None, Ok(_)) => {}
        }
    }
}

impl GcRun {
    /// Whether a test knob holds the collection now (logged once, for the test to see).
    fn held(&mut self) -> bool {
        let held = gc_held(&self.collection);
        if held && !self.held {
            let (phase, steps) = self.collection.position();
            tracing::warn!(phase, steps, "the collection is held by a test knob");
        }
        self.held = held;
        held
    }
}

/// `FILEWATCHD_TEST_GC_HOLD`: the file exists, or `FILEWATCHD_TEST_GC_HOLD_AT`: the
/// collection is where it names, so the collection waits (test-only).
fn gc_held(collection: &Collection) -> bool {
    let knobs = crate::test_knobs::get();
    let at = knobs.gc_hold_at.as_ref().is_some_and(|(phase, steps)| {
        let (now, done) = collection.position();
        now == phase && done >= *steps
    });
    at || knobs.gc_hold.as_ref().is_some_and(|path| path.exists())
}
