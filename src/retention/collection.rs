//! A collection under way, a step at a time: each step is its own short transaction, so the
//! engine records what was written meanwhile between two steps (a collection of 100,000
//! versions in one transaction held the writer for seconds). The steps: collapse the history
//! a range of path ids at a time (the set it deletes is defined path by path, so the ranges
//! together delete exactly what one statement would), list the hashes the remaining versions
//! name a range of sequence numbers at a time, then delete the blobs none names a range of
//! hashes at a time, catching up first with the versions written since the listing.
//!
//! Between steps nothing may change what the collapse keeps: the engine finishes a
//! collection before it makes or removes a pin or starts another collection. Versions
//! written meanwhile come after the cutoff and change nothing it deletes.

use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};

use super::GcReport;
use crate::model::{Hash, now_ms};
use crate::store::blobs::BlobDir;
use crate::store::{gc, sql, turn_counts};

/// A step aims to hold the writer for about this long: the range it takes next grows while
/// steps are quicker and shrinks when one was slower.
const STEP_AIM: Duration = Duration::from_millis(30);
const FIRST_PATHS: i64 = 256;
const FIRST_SEQS: i64 = 50_000;
const BLOBS_PER_STEP: usize = 2_000;

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
    /// How many path ids (or sequence numbers) the next step takes.
    width: i64,
    /// Fixed by the test knob `FILEWATCHD_TEST_GC_STEP_PATHS`: the width never changes.
    fixed: bool,
    /// The hashes have been listed up to this sequence number.
    listed: i64,
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
        gc::set_meta(&tx, "horizon", report.cutoff_seq)?;
        turn_counts::forget_before(&tx, report.cutoff_seq)?;
        let last = gc::max_path_id(&tx)?;
        tx.commit()?;
        let fixed = crate::test_knobs::get().gc_step_paths;
        Ok(Self {
            report: GcReport {
                versions_removed: 0,
                ..report
            },
            phase: Phase::Collapse { next: 0, last },
            width: fixed.map_or(FIRST_PATHS, |n| i64::try_from(n).unwrap_or(1).max(1)),
            fixed: fixed.is_some(),
            listed: 0,
        })
    }

    /// One step: one short transaction.
    pub fn step(mut self, conn: &mut Connection, blobs: &BlobDir) -> rusqlite::Result<Progress> {
        let began = Instant::now();
        let phase = self.phase.name();
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
        tracing::debug!(phase, width = self.width, took_us, worked_us, "collection step");
        self.adapt(worked);
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
        let to = next.saturating_add(self.width);
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
        self.phase = match to > last {
            true => {
                gc::begin_referenced(conn)?;
                self.width = FIRST_SEQS;
                Phase::List { after: 0 }
            }
            false => Phase::Collapse { next: to, last },
        };
        Ok(worked)
    }

    fn list(&mut self, conn: &Connection, after: i64) -> rusqlite::Result<Duration> {
        let began = Instant::now();
        let upto = after.saturating_add(self.width.max(FIRST_SEQS / 8));
        gc::add_referenced(conn, after, upto)?;
        self.listed = upto;
        self.phase = match upto >= gc::max_seq(conn)? {
            true => Phase::Sweep { after: Vec::new() },
            false => Phase::List { after: upto },
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
        self.listed = latest;
        let end = gc::blob_chunk_end(&tx, after, BLOBS_PER_STEP)?;
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
        for hash in files {
            let _ = std::fs::remove_file(blobs.path_of(hash));
        }
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
        gc::set_meta(conn, "last_gc", now_ms())?;
        let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
        tracing::debug!(
            took_us = began.elapsed().as_micros() as u64,
            "collection: checkpointed"
        );
        self.report.store_bytes_after = sql::store_bytes(conn)?;
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

    fn adapt(&mut self, took: Duration) {
        if self.fixed && matches!(self.phase, Phase::Collapse { .. }) {
            return;
        }
        if took < STEP_AIM / 2 {
            self.width = self.width.saturating_mul(2);
        } else if took > STEP_AIM * 2 {
            self.width = (self.width / 2).max(1);
        }
    }
}
