//! The worker's upkeep between hints: a collection (retention) a step at a time, hints
//! recorded between its steps; the counts of each turn stored when it ends, and those
//! missing (turns ended before counts were stored, rows a collection or a late version made
//! stale) filled a few turns at a time while nothing else waits; once a start, the store size
//! counter corrected when its check (`super::drift`) has measured it; the write-ahead log
//! checkpointed when the worker is quiet (`super::checkpoint`).

use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use rusqlite::Connection;

use super::checkpoint::{Checkpoints, Commit};
use super::drift::{DRIFT_POLL, DriftCheck};
use crate::capture::Context;
use crate::history::counts;
use crate::retention::{self, Collection, GcReport, Progress};
use crate::store::sql::TurnRow;

/// The daemon collects garbage on its own once a day (and `filewatchd gc` any time).
const GC_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

pub(super) type GcReply = oneshot::Sender<rusqlite::Result<GcReport>>;

/// A collection under way and who waits for its report (no one for the daily one).
struct GcRun {
    collection: Collection,
    reply: Option<GcReply>,
    /// Whether a test knob's hold was logged.
    held: bool,
}

/// While `FILEWATCHD_TEST_GC_HOLD` holds a collection, the worker looks again this often.
const HOLD_POLL: Duration = Duration::from_millis(10);

/// The worker's upkeep, a type of its own the worker owns: the daily collection and the one
/// under way, and whether ended turns may lack stored counts.
pub(super) struct Upkeep {
    next_gc: Instant,
    gc: Option<GcRun>,
    counts_owed: bool,
    drift: Option<DriftCheck>,
    checkpoints: Checkpoints,
}

/// What the worker has waiting, which upkeep yields to.
#[derive(Clone, Copy)]
pub(super) struct Waiting {
    /// A command waits for its cookie.
    pub command: bool,
    /// Hinted paths are not recorded yet.
    pub hints: bool,
}

impl Waiting {
    /// The worker writes again soon.
    fn busy(self) -> bool {
        self.command || self.hints
    }
}

impl Upkeep {
    /// At start, once the start has recorded what changed (a first index sets the store size
    /// counter from the sum: a drift measured before it would be corrected twice): the first
    /// daily collection a day away, every turn's counts to be checked, the counter's drift
    /// measured beside the worker (`db`: the index; `None`: in memory, nothing to check).
    pub(super) fn new(now: Instant, db: Option<&std::path::Path>) -> Self {
        Self {
            next_gc: now + GC_INTERVAL,
            gc: None,
            counts_owed: true,
            drift: db.map(DriftCheck::start),
            checkpoints: Checkpoints::start(db),
        }
    }

    /// `filewatchd gc` (or the daily one, without a reply): a dry run answers at once; a
    /// collection begins, after any under way has finished.
    pub(super) fn collect(
        &mut self,
        conn: &mut Connection,
        ctx: &Context,
        dry_run: bool,
        reply: Option<GcReply>,
    ) {
        self.finish_collection(conn, ctx);
        if !dry_run {
            self.next_gc = Instant::now() + GC_INTERVAL;
        }
        match retention::begin(conn, &ctx.retention, dry_run) {
            Ok(Progress::More(collection)) => {
                self.gc = Some(GcRun {
                    collection,
                    reply,
                    held: false,
                })
            }
            Ok(Progress::Done(report)) => self.collected(ctx, reply, Ok(report)),
            Err(err) => self.collected(ctx, reply, Err(err)),
        }
    }

    /// Runs what is left of a collection under way: before a command that changes what it
    /// keeps (a pin made or removed), or another collection.
    pub(super) fn finish_collection(&mut self, conn: &mut Connection, ctx: &Context) {
        let Some(run) = self.gc.take() else {
            return;
        };
        let result = run.collection.run_to_end(conn, &ctx.blobs);
        self.collected(ctx, run.reply, result);
    }

    /// The daily collection when it is due, then one step of the collection under way, or a
    /// few turns' missing counts when idle. A command waiting for its cookie goes first: the
    /// step would hold it up.
    pub(super) fn run(&mut self, conn: &mut Connection, ctx: &Context, waiting: Waiting) {
        self.checkpoints.run(Instant::now(), waiting.busy());
        if self.drift.as_ref().is_some_and(|drift| drift.correct(conn)) {
            self.drift = None;
        }
        if Instant::now() >= self.next_gc {
            self.collect(conn, ctx, false, None);
        }
        if let Some(mut run) = self.gc.take() {
            if waiting.command || run.held() {
                self.gc = Some(run);
                return;
            }
            match run.collection.step(conn, &ctx.blobs) {
                Ok(Progress::More(collection)) => {
                    self.gc = Some(GcRun {
                        collection,
                        reply: run.reply,
                        held: false,
                    })
                }
                Ok(Progress::Done(report)) => self.collected(ctx, run.reply, Ok(report)),
                Err(err) => self.collected(ctx, run.reply, Err(err)),
            }
            return;
        }
        if self.counts_owed && !waiting.hints && !waiting.command {
            match counts::fill_missing(conn) {
                Ok(filled) => self.counts_owed = filled > 0,
                Err(err) => {
                    tracing::warn!(%err, "cannot store turn counts; they are computed on read");
                    self.counts_owed = false;
                }
            }
        }
    }

    /// When the upkeep wants to run next: now while it has work, else the daily collection.
    pub(super) fn deadline(&self, waiting: Waiting) -> Instant {
        let now = match (&self.gc, self.counts_owed) {
            (Some(run), _) if gc_held(&run.collection) => Some(Instant::now() + HOLD_POLL),
            // The cookie's arrival wakes the worker (or the barrier's own deadline).
            (Some(_), _) if waiting.command => None,
            (Some(_), _) => Some(Instant::now()),
            (None, true) if !waiting.hints && !waiting.command => Some(Instant::now()),
            _ if self.drift.is_some() => Some(Instant::now() + DRIFT_POLL),
            _ => None,
        };
        let checkpoint = self.checkpoints.deadline(waiting.busy());
        [now, checkpoint]
            .into_iter()
            .flatten()
            .fold(self.next_gc, Instant::min)
    }

    /// The worker wrote (`engine::checkpoint`).
    pub(super) fn wrote(&mut self, commit: Commit) {
        self.checkpoints.wrote(Instant::now(), commit);
    }

    /// Stores the counts of a turn that just ended; if that fails they are computed on read.
    pub(super) fn turn_ended(&mut self, conn: &Connection, turn: &TurnRow) {
        if let Err(err) = counts::store(conn, turn) {
            tracing::warn!(%err, turn = turn.number, "cannot store turn counts; they are computed on read");
            self.counts_owed = true;
        }
    }

    /// At a stop, before the writer closes: the drift check's connection is closed first, so the
    /// writer's close is the last and checkpoints the log away.
    pub(super) fn stop(&mut self) {
        self.drift = None;
        self.checkpoints.stop();
    }

    /// Versions were recorded into ended turns (a verification pass): their counts are owed.
    pub(super) fn owe_counts(&mut self) {
        self.counts_owed = true;
    }

    /// A collection ended (or failed: what it committed stays, the next one goes on from
    /// there); it forgot the counts of the turns it changed.
    fn collected(&mut self, ctx: &Context, reply: Option<GcReply>, result: rusqlite::Result<GcReport>) {
        self.counts_owed = true;
        match (reply, result) {
            (Some(reply), result) => {
                let _ = reply.send(result);
            }
            (None, Err(err)) => {
                let message = format!("garbage collection failed: {err}");
                ctx.stats.set_error(message);
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
