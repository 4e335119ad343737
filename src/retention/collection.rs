//! A collection under way, a step at a time: each step is its own short transaction, so the
//! engine records what was written meanwhile between two steps (a collection of 100,000
//! versions in one transaction held the writer for seconds). The steps: collapse the history
//! a range of path ids at a time (the set it deletes is defined path by path, so the ranges
//! together delete exactly what one statement would), list the hashes the remaining versions
//! name a range of sequence numbers at a time, then delete the blobs none names a range of
//! hashes at a time, catching up first with the versions written since the listing. Every
//! range is bounded by the rows it covers (versions, blobs), never by its width in keys: a
//! range of sequence numbers sparse after a collapse can meet a dense one, and a step's cost
//! is its rows.
//!
//! Between steps nothing may change what the collapse keeps: the engine finishes a
//! collection before it makes or removes a pin or starts another collection. Versions
//! written meanwhile come after the cutoff and change nothing it deletes.

use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};

use super::GcReport;
use crate::model::{Hash, now_ms};
use crate::store::blobs::BlobDir;
use crate::store::{gc, meta, size, turn_counts};

/// A step aims to hold the writer for about this long: the rows it takes next follow the
/// rate the last step worked at (at most twice as many, at least half).
const STEP_AIM: Duration = Duration::from_millis(25);
/// The rows of a phase's first step: versions collapsed, versions listed, blobs swept.
const FIRST_VERSIONS: i64 = 8_192;
const FIRST_LISTED: i64 = 20_000;
const FIRST_BLOBS: i64 = 2_000;

/// What a collection does next.
#[derive(Debug, Clone)]
enum Phase {
    /// Collapse the paths with ids from `next` up to `last` (inclusive).
    Collapse { next: i64, last: i64 },
    /// List the hashes named by the versions after `after`.
    List { after: i64 },
    /// Delete the unnamed blobs with hashes after `after`.
    Sweep { after: Vec<u8> },
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Self::Collapse { .. } => "collapse",
            Self::List { .. } => "list",
            Self::Sweep { .. } => "sweep",
        }
    }
}

/// A collection begun by `retention::begin`: its cutoff is the horizon already.
#[derive(Debug)]
pub struct Collection {
    pub(super) report: GcReport,
    phase: Phase,
    /// How many rows the next step takes (versions, or blobs when sweeping).
    width: i64,
    /// The test knobs `FILEWATCHD_TEST_GC_STEP_PATHS` (a collapse takes this many path ids,
    /// whatever their versions) and `FILEWATCHD_TEST_GC_STEP_ROWS` (every step takes this
    /// many rows): their widths never change.
    fixed_paths: Option<i64>,
    fixed_rows: Option<i64>,
    /// The hashes have been listed up to this sequence number.
    listed: i64,
    /// The steps taken in the phase under way.
    steps_in_phase: u64,
}

/// Where a collection stands after a step.
#[derive(Debug)]
pub enum Progress {
    More(Collection),
    Done(GcReport),
}

impl Collection {
    /// Makes the cutoff the horizon (a state before it is expired from now on: its history is
    /// being collapsed) and forgets the counts of the turns it will change.
    pub(super) fn begin(conn: &mut Connection, report: GcReport) -> rusqlite::Result<Self> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        meta::set_meta(&tx, "horizon", report.cutoff_seq)?;
        turn_counts::forget_before(&tx, report.cutoff_seq)?;
        let last = gc::max_path_id(&tx)?;
        tx.commit()?;
        let knobs = crate::test_knobs::get();
        let knob = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(1).max(1));
        Ok(Self {
            report: GcReport {
                versions_removed: 0,
                ..report
            },
            phase: Phase::Collapse { next: 0, last },
            width: knob(knobs.gc_step_rows).unwrap_or(FIRST_VERSIONS),
            fixed_paths: knob(knobs.gc_step_paths),
            fixed_rows: knob(knobs.gc_step_rows),
            listed: 0,
            steps_in_phase: 0,
        })
    }

    /// The phase under way and how many of its steps are done (the test knob
    /// `FILEWATCHD_TEST_GC_HOLD_AT` holds a collection at such a point).
    pub fn position(&self) -> (&'static str, u64) {
        (self.phase.name(), self.steps_in_phase)
    }

    /// One step: one short transaction.
    pub fn step(mut self, conn: &mut Connection, blobs: &BlobDir) -> rusqlite::Result<Progress> {
        let began = Instant::now();
        let (phase, width) = (self.phase.name(), self.width);
        // The work alone decides the next width: a commit's fsync costs the same whatever it
        // commits, and a slow disk must not shrink the steps to a path each.
        let worked = match self.phase.clone() {
            Phase::Collapse { next, last } => self.collapse(conn, next, last)?,
            Phase::List { after } => self.list(conn, after)?,
            Phase::Sweep { after } => match self.sweep(conn, blobs, &after)? {
                Some(worked) => worked,
                None => return self.finish(conn).map(Progress::Done),
            },
        };
        let took = began.elapsed();
        let (took_us, worked_us) = (took.as_micros() as u64, worked.as_micros() as u64);
        tracing::debug!(phase, width, took_us, worked_us, "collection step");
        if self.phase.name() == phase {
            self.steps_in_phase += 1;
            self.adapt(worked);
        } else {
            self.steps_in_phase = 0
        }
        Ok(Progress::More(self))
    }

    /// Runs every step left (before a command that must see the collection finished).
    pub fn run_to_end(self, conn: &mut Connection, blobs: &BlobDir) -> rusqlite::Result<GcReport> {
        let mut progress = Progress::More(self);
        loop {
            match progress {
                Progress::More(c) => progress = c.step(conn, blobs)?,
                Progress::Done(report) => return Ok(report),
            }
        }
    }

    fn collapse(&mut self, conn: &mut Connection, next: i64, last: i64) -> rusqlite::Result<Duration> {
        let to = match self.fixed_paths {
            Some(paths) => next.saturating_add(paths),
            None => gc::path_id_after_versions(conn, next, self.width)?
                .map_or(last.saturating_add(1), |end| end.max(next.saturating_add(1))),
        };
        let cutoff = self.report.cutoff_seq;
        let (deleted, worked) = gc::without_foreign_keys(conn, |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let began = Instant::now();
            let deleted = gc::collapse_range(&tx, cutoff, next, to)?;
            let dangling = gc::dangling_in_range(&tx, next, to)?;
            if dangling > 0 {
                // Dropping `tx` rolls the step back: nothing of it is committed.
                let message = format!(
                    "collapsing paths {next}..{to} would leave {dangling} rows naming what it deletes"
                );
                return Err(rusqlite::Error::ToSqlConversionFailure(message.into()));
            }
            let worked = began.elapsed();
            tx.commit()?;
            Ok((deleted, worked))
        })?;
        self.report.versions_removed += deleted as i64;
        self.phase = if to > last {
            gc::begin_referenced(conn)?;
            self.width = self.fixed_rows.unwrap_or(FIRST_LISTED);
            Phase::List { after: 0 }
        } else {
            Phase::Collapse { next: to, last }
        };
        Ok(worked)
    }

    fn list(&mut self, conn: &Connection, after: i64) -> rusqlite::Result<Duration> {
        let began = Instant::now();
        let (upto, last) = match gc::seq_after_versions(conn, after, self.width)? {
            Some(upto) => (upto, false),
            None => (gc::max_seq(conn)?, true),
        };
        gc::add_referenced(conn, after, upto)?;
        self.listed = upto;
        self.phase = if last {
            self.width = self.fixed_rows.unwrap_or(FIRST_BLOBS);
            Phase::Sweep { after: Vec::new() }
        } else {
            Phase::List { after: upto }
        };
        Ok(began.elapsed())
    }

    /// Deletes one range of unnamed blobs (how long that took); `None` once there are no more
    /// to look at.
    fn sweep(
        &mut self,
        conn: &mut Connection,
        blobs: &BlobDir,
        after: &[u8],
    ) -> rusqlite::Result<Option<Duration>> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let began = Instant::now();
        // Versions written since the listing may name a blob that was unnamed then.
        let latest = gc::max_seq(&tx)?;
        gc::add_referenced(&tx, self.listed, latest)?;
        crate::store::git::add_referenced(&tx)?;
        self.listed = latest;
        let end = gc::blob_chunk_end(&tx, after, usize::try_from(self.width).unwrap_or(1))?;
        let mut files: Vec<Hash> = Vec::new();
        for (hash, is_file, size) in gc::unreferenced_in(&tx, after, end.as_deref())? {
            gc::delete_blob(&tx, hash)?;
            self.report.blobs_removed += 1;
            self.report.bytes_freed += size;
            if is_file {
                files.push(hash);
            }
        }
        let worked = began.elapsed();
        tx.commit()?;
        let removing = Instant::now();
        for hash in files {
            let _ = std::fs::remove_file(blobs.path_of(hash));
        }
        // Removing blob files holds the writer as much as the rows do.
        let worked = worked + removing.elapsed();
        match end {
            Some(end) => {
                self.phase = Phase::Sweep { after: end };
                Ok(Some(worked))
            }
            None => Ok(None),
        }
    }

    fn finish(mut self, conn: &mut Connection) -> rusqlite::Result<GcReport> {
        let began = Instant::now();
        gc::end_referenced(conn)?;
        // Counts stored meanwhile (a turn that ended during the collection) may predate a range.
        turn_counts::forget_before(conn, self.report.cutoff_seq)?;
        meta::set_meta(conn, "last_gc", now_ms())?;
        // PASSIVE: it copies what no reader still needs and waits for no one. A TRUNCATE one
        // waited for the API's readers with the writer held (140 ms at a million versions);
        // `journal_size_limit` trims the log when it next restarts from its beginning.
        let _ = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);");
        tracing::debug!(
            took_us = began.elapsed().as_micros() as u64,
            "collection: checkpointed"
        );
        self.report.store_bytes_after = size::store_bytes(conn)?;
        tracing::debug!(
            took_us = began.elapsed().as_micros() as u64,
            "collection: finished"
        );
        tracing::info!(
            cutoff = self.report.cutoff_seq,
            versions = self.report.versions_removed,
            blobs = self.report.blobs_removed,
            bytes = self.report.bytes_freed,
            "garbage collected"
        );
        Ok(self.report)
    }

    /// Sets the next step's rows from the rate this one worked at, within half and twice them.
    fn adapt(&mut self, took: Duration) {
        let fixed = match self.phase {
            Phase::Collapse { .. } => self.fixed_paths.is_some() || self.fixed_rows.is_some(),
            Phase::List { .. } | Phase::Sweep { .. } => self.fixed_rows.is_some(),
        };
        if fixed {
            return;
        }
        let took_us = took.as_micros().max(1);
        let aimed = i128::from(self.width) * STEP_AIM.as_micros() as i128 / took_us as i128;
        let (low, high) = ((self.width / 2).max(1), self.width.saturating_mul(2));
        self.width = i64::try_from(aimed).unwrap_or(high).clamp(low, high);
    }
}
