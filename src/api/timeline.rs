//! `GET /v1/timeline`: one page of the timeline (docs/api.md), newest first.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Deserialize;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use super::handlers::{sync_if, valid_session};
use super::render::first_line;
use crate::history::Counts;
use crate::model::answer::{ActionLine, Outcome};
use crate::model::format_time;
use crate::sessions::{review, turns};
use crate::store::journal::RollbackRow;
use crate::timeline::{self, Cursor, Entry, OutsideEntry, RollbackEntryKind, Scope, TurnEntry};
use crate::wire::timeline::{self as wire, Order, PathChange, RollbackPath, Timeline, TurnKind};

/// Entries per page when the request does not say.
const DEFAULT_LIMIT: usize = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineQuery {
    /// A session's name, or `all` (the default).
    session: Option<String>,
    since: Option<String>,
    before: Option<String>,
    limit: Option<usize>,
    #[serde(default)]
    paths: bool,
    /// Only the turns not marked reviewed (the other entries stay).
    #[serde(default)]
    unreviewed: bool,
}

pub async fn timeline(
    State(state): State<Arc<AppState>>,
    query: Result<Query<TimelineQuery>, QueryRejection>,
) -> Result<Json<Timeline>, ApiError> {
    // A query that does not parse (`limit=many`, an unknown parameter) is a JSON error too.
    let Query(query) = query.map_err(|e| ApiError::bad_request(ErrorCode::BadRequest, e.body_text()))?;
    let scope = match query.session.as_deref() {
        None | Some("all") => Scope::All,
        Some(name) => {
            valid_session(name)?;
            Scope::Session(name.to_string())
        }
    };
    let bad = |message: String| ApiError::bad_request(ErrorCode::BadRequest, message);
    let since_ms = match query.since.as_deref() {
        Some(at) => {
            Some(crate::model::parse_time(at).map_err(|e| ApiError::bad_request(ErrorCode::BadTime, e))?)
        }
        None => None,
    };
    let before = query
        .before
        .as_deref()
        .map(str::parse::<Cursor>)
        .transpose()
        .map_err(bad)?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=timeline::PAGE_MAX).contains(&limit) {
        return Err(bad(format!("limit is 1 to {}", timeline::PAGE_MAX)));
    }
    // An open turn's changes are complete once every write made before the request is in.
    sync_if(&state, |conn| Ok(!turns::open(conn)?.is_empty())).await?;
    let (with_paths, unreviewed) = (query.paths, query.unreviewed);
    let session = match &scope {
        Scope::Session(name) => Some(name.clone()),
        Scope::All => None,
    };
    let request = timeline::Query {
        scope,
        since_ms,
        before,
        limit,
        with_paths: query.paths,
    };
    state
        .read(move |conn, app| {
            let page = timeline::page(conn, &request)?;
            let mut entries = Vec::with_capacity(page.entries.len());
            for entry in &page.entries {
                let mut view = entry_of(entry, with_paths);
                if let (wire::Entry::Turn(turn), Entry::Turn(row)) = (&mut view, entry) {
                    turn.reviewed =
                        review::of_turn(conn, row.turn.id, &row.turn.session, row.turn.number)?.reviewed;
                    let (start, end) = (row.turn.start_seq, row.turn.end_seq);
                    turn.git = crate::store::git::moved_between(conn, &app.blobs, start, end)?;
                    if unreviewed && turn.reviewed {
                        continue;
                    }
                }
                entries.push(view);
            }
            Ok(Json(Timeline {
                session,
                order: Order::NewestFirst,
                entries,
                next_before: page.next.map(|c| c.to_string()),
            }))
        })
        .await
}

fn entry_of(entry: &Entry, with_paths: bool) -> wire::Entry {
    match entry {
        Entry::Turn(turn) => wire::Entry::Turn(turn_of(turn, with_paths)),
        Entry::Rollback(at, rollback) => wire::Entry::Rollback(rollback_of(*at, rollback, with_paths)),
        Entry::Outside(run) => wire::Entry::Outside(outside_of(run, with_paths)),
    }
}

fn outside_of(entry: &OutsideEntry, with_paths: bool) -> wire::OutsideEntry {
    wire::OutsideEntry {
        kind: entry.kind,
        time: format_time(entry.span.time_ms),
        cursor: entry.cursor.to_string(),
        session: None,
        first_seq: entry.span.first_seq,
        last_seq: entry.span.last_seq,
        paths: entry.paths,
        counts: Counts::of(&entry.changes),
        changes: with_paths.then(|| entry.changes.iter().map(path_change).collect()),
    }
}

/// Its `reviewed` is the caller's to set.
fn turn_of(entry: &TurnEntry, with_paths: bool) -> wire::TurnEntry {
    let turn = &entry.turn;
    wire::TurnEntry {
        kind: TurnKind::Turn,
        time: format_time(turn.started_at),
        cursor: entry.cursor.to_string(),
        session: turn.session.clone(),
        turn: turn.number,
        turn_ref: turn.turn_ref.clone(),
        label: turn.label.clone(),
        prompt: turn.label.as_deref().map(|l| first_line(l).to_string()),
        started_at: format_time(turn.started_at),
        ended_at: turn.ended_at.map(format_time),
        start_seq: turn.start_seq,
        end_seq: turn.end_seq,
        open: turn.end_seq.is_none(),
        undone: entry.undone,
        kept: entry.kept.clone(),
        reviewed: false,
        counts: entry.counts,
        changes: with_paths.then(|| entry.changes.iter().map(path_change).collect()),
        git: Vec::new(),
    }
}

fn path_change(change: &crate::history::Change) -> PathChange {
    let shown = if change.after.is_present() {
        &change.after
    } else {
        &change.before
    };
    let size = match &change.after {
        crate::model::State::File(f) => Some(f.size),
        _ => None,
    };
    PathChange {
        path: change.path.to_text(),
        from: change.from.as_ref().map(|p| p.to_text()),
        change: change.kind,
        kind: shown.kind(),
        size,
    }
}

fn rollback_of(at: Cursor, rollback: &RollbackRow, with_paths: bool) -> wire::RollbackEntry {
    let brief = rollback.brief.as_ref();
    let changes = with_paths.then(|| rollback.outcome.as_ref().map(rollback_paths).unwrap_or_default());
    wire::RollbackEntry {
        kind: RollbackEntryKind::of(rollback),
        time: format_time(rollback.created_at),
        cursor: at.to_string(),
        session: rollback.session.clone(),
        rollback_id: rollback.id,
        operation: rollback.kind,
        target: brief.and_then(|b| b.target.clone()),
        status: rollback.status,
        paths: rollback.paths.clone().filter(|paths| !paths.is_empty()),
        redo_of: rollback.redo_of,
        counts: brief.map(|b| b.counts),
        recovery: brief.and_then(|b| b.recovery.clone()),
        actor: brief.and_then(|b| b.actor),
        changes,
    }
}

fn rollback_paths(outcome: &Outcome) -> Vec<RollbackPath> {
    let line = |a: &ActionLine| RollbackPath {
        path: a.path.clone(),
        action: a.action,
        kind: a.kind,
        status: a.status,
        lines_added: a.lines_added,
        lines_removed: a.lines_removed,
    };
    outcome.actions.iter().map(line).collect()
}
