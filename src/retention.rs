//! Retention (docs/rollback.md, "Retention"): garbage collection keeps every version of the last `keep_days`
//! days and of the last `keep_turns` turns of each session (inherited turns included), and
//! everything a pending redo needs. History before the cutoff collapses to each path's state
//! at the cutoff, so the latest version of every path always stays; boundaries before it
//! expire (a rollback to one is refused, never inexact), except the states pins name: each
//! path's version at each pin stays, whatever the rules above say. Blobs no version names are
//! deleted. A collection runs a step at a time, each its own transaction (`collection`).

mod collection;

use rusqlite::Connection;

use crate::config::Retention;
use crate::model::{RollbackKind, now_ms};
use crate::sessions::Lineage;
use crate::store::{gc, journal, pins, size, sql};

pub use collection::{Collection, Progress};

/// What a collection removed (or, on a dry run, would remove).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct GcReport {
    pub dry_run: bool,
    /// Boundaries before this sequence number are (or would be) expired.
    pub cutoff_seq: i64,
    pub versions_removed: i64,
    pub blobs_removed: i64,
    pub bytes_freed: i64,
    pub turns_expired: i64,
    pub store_bytes_before: i64,
    pub store_bytes_after: i64,
}

/// A state retention has removed: the history before `horizon` was collapsed, so no
/// boundary before it is exact any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    pub seq: i64,
    /// The oldest sequence number whose state is still exact.
    pub horizon: i64,
}

/// `Some` when retention has removed the state at `seq`. A pinned state is exact whatever
/// its age: collection keeps every version a pin needs.
pub fn expired(conn: &Connection, seq: i64) -> rusqlite::Result<Option<Expired>> {
    let horizon = gc::horizon(conn)?;
    if seq >= horizon || pins::is_pinned(conn, seq)? {
        return Ok(None);
    }
    Ok(Some(Expired { seq, horizon }))
}

/// Begins one collection (or, with `dry_run`, describes it: `Done` at once). A collection
/// under way goes on a step at a time (`Collection::step`), each step its own transaction.
pub fn begin(conn: &mut Connection, retention: &Retention, dry_run: bool) -> rusqlite::Result<Progress> {
    let began = std::time::Instant::now();
    let store_bytes_before = size::store_bytes(conn)?;
    tracing::debug!(
        took_us = began.elapsed().as_micros() as u64,
        "collection: store bytes"
    );
    let over_budget = retention
        .max_store_bytes
        .is_some_and(|max| store_bytes_before as u64 > max);
    let horizon = gc::horizon(conn)?;
    let cutoff = if !journal::needs_recovery(conn)? {
        cutoff(conn, retention, over_budget)?.max(horizon)
    } else {
        horizon // a rollback awaits recovery: touch nothing it may need
    };
    let mut report = GcReport {
        dry_run,
        cutoff_seq: cutoff,
        versions_removed: 0,
        blobs_removed: 0,
        bytes_freed: 0,
        turns_expired: gc::count_turns_before(conn, cutoff)? - gc::count_turns_before(conn, horizon)?,
        store_bytes_before,
        store_bytes_after: store_bytes_before,
    };
    if !dry_run {
        tracing::debug!(
            took_us = began.elapsed().as_micros() as u64,
            "collection: cutoff chosen"
        );
        return Collection::begin(conn, report).map(Progress::More);
    }
    report.versions_removed = gc::count_collapsible(conn, cutoff)?;
    let (count, bytes) = gc::blobs_freed_by_collapse(conn, cutoff)?;
    report.blobs_removed = count;
    report.bytes_freed = bytes;
    report.store_bytes_after = store_bytes_before - bytes;
    Ok(Progress::Done(report))
}

/// The oldest sequence number a retained boundary or a pending redo needs.
fn cutoff(conn: &Connection, retention: &Retention, over_budget: bool) -> rusqlite::Result<i64> {
    let mut cutoff = sql::latest_seq(conn)?;
    if retention.keep_days > 0 && !over_budget {
        let since = now_ms() - i64::from(retention.keep_days) * 24 * 60 * 60 * 1000;
        cutoff = cutoff.min(journal::seq_at_time(conn, since)?);
    }
    for session_id in gc::session_ids(conn)? {
        let turns = Lineage::of(conn, session_id)?.turns(conn)?;
        let keep = usize::try_from(retention.keep_turns).unwrap_or(usize::MAX);
        if keep > 0 && !turns.is_empty() {
            let oldest_kept = &turns[turns.len().saturating_sub(keep)];
            cutoff = cutoff.min(oldest_kept.start_seq);
        }
        cutoff = cutoff.min(pending_redo(
            conn,
            Some(session_id),
            turns.last().and_then(|t| t.end_seq),
        )?);
    }
    Ok(cutoff.min(pending_redo(conn, None, None)?))
}

/// The oldest state a pending redo of this chain returns to (`i64::MAX`: none).
fn pending_redo(conn: &Connection, session_id: Option<i64>, since: Option<i64>) -> rusqlite::Result<i64> {
    let chain = journal::session_chain(conn, session_id, since.unwrap_or(0))?;
    let mut stack: Vec<i64> = Vec::new();
    for op in chain {
        if op.kind == RollbackKind::Redo {
            stack.pop();
        } else {
            stack.push(op.from_seq);
        }
    }
    Ok(stack.into_iter().min().unwrap_or(i64::MAX))
}
