//! Writes outside any turn in the timeline: between each two turn boundaries (a rollback's
//! start is one too: a run never spans a rollback, so each run stands where it happened), one
//! entry for the versions written while no turn was open (`outside`: you, an editor, another
//! process) and one for those found by a scan (`found`: at start-up, by a reconcile).
//!
//! The runs are found with two index probes per gap between boundaries, so placing them costs
//! what the turns cost; only the runs on a page have their versions read.

use std::collections::HashSet;

use rusqlite::Connection;

use super::Cursor;
use crate::history::{self, Change};
use crate::model::Origin;
use crate::store::timeline::{self as sql, BoundaryAt, OriginSpan};

/// Who wrote the versions of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutsideKind {
    /// Written while no turn was open: you, an editor, another process.
    Outside,
    /// Found by a scan: changed while the daemon was not running (or not watching).
    Found,
}

pub struct OutsideEntry {
    pub cursor: Cursor,
    pub kind: OutsideKind,
    pub span: OriginSpan,
    /// How many paths were written (some may be back as they were: see `changes`).
    pub paths: usize,
    /// The run's net changes.
    pub changes: Vec<Change>,
}

/// Every run of versions outside any turn, one per origin and gap between two turn boundaries.
///
/// A run's time is its latest version's, but earlier than the start of the turn that follows
/// it: the barrier of a turn's start records the writes made before it, and can record them
/// after the time the turn took as its start.
pub fn spans(conn: &Connection) -> rusqlite::Result<Vec<OriginSpan>> {
    let start = BoundaryAt {
        seq: 0,
        started_at: None,
    };
    let end = BoundaryAt {
        seq: i64::MAX,
        started_at: None,
    };
    let mut edges = vec![start];
    edges.extend(sql::turn_boundaries(conn)?);
    edges.push(end);
    edges.dedup_by_key(|b| b.seq);
    let mut spans = Vec::new();
    for gap in edges.windows(2) {
        for origin in [Origin::Outside, Origin::Offline] {
            let Some(mut span) = sql::origin_span(conn, origin, gap[0].seq, gap[1].seq)? else {
                continue;
            };
            if let Some(next_turn) = gap[1].started_at {
                span.time_ms = span.time_ms.min(next_turn - 1);
            }
            spans.push(span);
        }
    }
    Ok(spans)
}

/// A run as the page shows it: its paths and net changes.
pub fn entry(conn: &Connection, at: Cursor, span: &OriginSpan) -> rusqlite::Result<OutsideEntry> {
    let versions = sql::span_versions(conn, span)?;
    let paths = versions
        .iter()
        .map(|(path_id, _)| *path_id)
        .collect::<HashSet<_>>()
        .len();
    let kind = match span.origin {
        Origin::Outside => OutsideKind::Outside,
        _ => OutsideKind::Found,
    };
    Ok(OutsideEntry {
        cursor: at,
        kind,
        span: *span,
        paths,
        changes: history::net_changes(conn, versions, span.first_seq - 1)?,
    })
}
