//! `GET /v1/timeline`: one page of the timeline (docs/api.md), newest first.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::{ApiError, ErrorCode};
use super::handlers::{sync_if, valid_session};
use super::render::first_line;
use crate::history::{ChangeKind, Counts};
use crate::model::{Kind, RollbackKind, format_time};
use crate::restore::chain::Target;
use crate::restore::outcome::{ActionStatus, Outcome};
use crate::restore::past::Status;
use crate::restore::plan::Action;
use crate::sessions::{review, turns};
use crate::timeline::{
    self, Cursor, Entry, OutsideEntry, OutsideKind, RollbackEntry, RollbackEntryKind, Scope, TurnEntry,
};

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

#[derive(Serialize)]
pub struct TimelineAnswer {
    session: Option<String>,
    order: &'static str,
    entries: Vec<EntryView>,
    next_before: Option<String>,
}

pub async fn timeline(
    State(state): State<Arc<AppState>>,
    query: Result<Query<TimelineQuery>, QueryRejection>,
) -> Result<Json<TimelineAnswer>, ApiError> {
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
        .read(move |conn, _| {
            let page = timeline::page(conn, &request)?;
            let mut entries = Vec::with_capacity(page.entries.len());
            for entry in &page.entries {
                let mut view = EntryView::of(entry, with_paths);
                if let (EntryView::Turn(turn), Entry::Turn(row)) = (&mut view, entry) {
                    turn.reviewed =
                        review::of_turn(conn, row.turn.id, &row.turn.session, row.turn.number)?.reviewed;
                    if unreviewed && turn.reviewed {
                        continue;
                    }
                }
                entries.push(view);
            }
            Ok(Json(TimelineAnswer {
                session,
                order: "newest_first",
                entries,
                next_before: page.next.map(|c| c.to_string()),
            }))
        })
        .await
}

#[derive(Serialize)]
#[serde(untagged)]
enum EntryView {
    Turn(TurnView),
    Rollback(RollbackView),
    Outside(OutsideView),
}

impl EntryView {
    fn of(entry: &Entry, with_paths: bool) -> Self {
        match entry {
            Entry::Turn(turn) => Self::Turn(TurnView::of(turn, with_paths)),
            Entry::Rollback(rollback) => Self::Rollback(RollbackView::of(rollback, with_paths)),
            Entry::Outside(run) => Self::Outside(OutsideView::of(run, with_paths)),
        }
    }
}

/// A run of writes outside any turn between two turn boundaries: `outside` or `found`.
#[derive(Serialize)]
struct OutsideView {
    kind: OutsideKind,
    /// When the latest of its versions was recorded.
    time: String,
    cursor: String,
    /// Always `null`: no session wrote it.
    session: Option<String>,
    first_seq: i64,
    last_seq: i64,
    /// How many paths were written (the net `counts` may hold fewer).
    paths: usize,
    counts: Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    changes: Option<Vec<TurnPath>>,
}

impl OutsideView {
    fn of(entry: &OutsideEntry, with_paths: bool) -> Self {
        Self {
            kind: entry.kind,
            time: format_time(entry.span.time_ms),
            cursor: entry.cursor.to_string(),
            session: None,
            first_seq: entry.span.first_seq,
            last_seq: entry.span.last_seq,
            paths: entry.paths,
            counts: Counts::of(&entry.changes),
            changes: with_paths.then(|| entry.changes.iter().map(TurnPath::of).collect()),
        }
    }
}

#[derive(Serialize)]
struct TurnView {
    kind: &'static str,
    time: String,
    cursor: String,
    session: String,
    turn: i64,
    #[serde(rename = "ref")]
    turn_ref: Option<String>,
    label: Option<String>,
    prompt: Option<String>,
    started_at: String,
    ended_at: Option<String>,
    start_seq: i64,
    end_seq: Option<i64>,
    open: bool,
    undone: bool,
    reviewed: bool,
    counts: Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    changes: Option<Vec<TurnPath>>,
}

#[derive(Serialize)]
struct TurnPath {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    change: ChangeKind,
    kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

impl TurnView {
    fn of(entry: &TurnEntry, with_paths: bool) -> Self {
        let turn = &entry.turn;
        let changes = with_paths.then(|| entry.changes.iter().map(TurnPath::of).collect());
        Self {
            kind: "turn",
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
            reviewed: false,
            counts: entry.counts,
            changes,
        }
    }
}

impl TurnPath {
    fn of(change: &crate::history::Change) -> Self {
        let shown = if change.after.is_present() {
            &change.after
        } else {
            &change.before
        };
        let size = match &change.after {
            crate::model::State::File(f) => Some(f.size),
            _ => None,
        };
        Self {
            path: change.path.to_text(),
            from: change.from.as_ref().map(|p| p.to_text()),
            change: change.kind,
            kind: shown.kind(),
            size,
        }
    }
}

#[derive(Serialize)]
struct RollbackView {
    kind: RollbackEntryKind,
    time: String,
    cursor: String,
    session: Option<String>,
    rollback_id: i64,
    operation: RollbackKind,
    target: Option<Target>,
    status: Status,
    paths: Option<Vec<String>>,
    redo_of: Option<i64>,
    counts: Option<RollbackCounts>,
    recovery: Option<String>,
    /// Who asked for it, when not the user (`mcp`).
    actor: Option<crate::restore::Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    changes: Option<Vec<RollbackPath>>,
}

/// What a rollback changed: the paths it created, restored (content, mode or link target)
/// and deleted (files and directories), and those it skipped or kept.
#[derive(Serialize)]
struct RollbackCounts {
    added: usize,
    modified: usize,
    deleted: usize,
    skipped: usize,
    kept: usize,
}

#[derive(Serialize)]
struct RollbackPath {
    path: String,
    action: Action,
    kind: Kind,
    status: ActionStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    lines_added: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lines_removed: Option<usize>,
}

impl RollbackView {
    fn of(entry: &RollbackEntry, with_paths: bool) -> Self {
        let rollback = &entry.rollback;
        let outcome = entry.outcome.as_ref();
        let changes = with_paths.then(|| outcome.map(RollbackPath::all).unwrap_or_default());
        Self {
            kind: entry.kind,
            time: format_time(rollback.created_at),
            cursor: entry.cursor.to_string(),
            session: rollback.session.clone(),
            rollback_id: rollback.id,
            operation: rollback.kind,
            target: outcome.map(|o| o.target.clone()),
            status: rollback.status,
            paths: (!entry.paths.is_empty()).then(|| entry.paths.clone()),
            redo_of: rollback.redo_of,
            counts: outcome.map(RollbackCounts::of),
            recovery: outcome.and_then(|o| o.recovery.clone()),
            actor: outcome.and_then(|o| o.actor),
            changes,
        }
    }
}

impl RollbackCounts {
    fn of(outcome: &Outcome) -> Self {
        let mut counts = Self {
            added: 0,
            modified: 0,
            deleted: 0,
            skipped: outcome.skipped.len(),
            kept: outcome.kept.len(),
        };
        for action in outcome.actions.iter().filter(|a| a.status == ActionStatus::Done) {
            match action.action {
                Action::Create => counts.added += 1,
                Action::Restore | Action::SetMode | Action::Relink => counts.modified += 1,
                Action::Delete | Action::RemoveDir => counts.deleted += 1,
            }
        }
        counts
    }
}

impl RollbackPath {
    fn all(outcome: &Outcome) -> Vec<Self> {
        let line = |a: &crate::restore::outcome::ActionLine| Self {
            path: a.path.clone(),
            action: a.action,
            kind: a.kind,
            status: a.status,
            lines_added: a.lines_added,
            lines_removed: a.lines_removed,
        };
        outcome.actions.iter().map(line).collect()
    }
}
