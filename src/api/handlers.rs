//! One function per route.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use tokio::sync::oneshot;

use super::access::JsonBody;
use super::error::{ApiError, ErrorCode};
use super::{AppState, render};
use crate::capture::verify::VerifyError;
use crate::engine::Command;
use crate::paths::RelPath;
use crate::sessions::turns::{self, TurnMarker, TurnSelector};
use crate::store::{briefs, journal};
use crate::wire::listing::{Listing, RollbackSummary};
use crate::wire::request::{Fork, Gc, TurnEnd, TurnStart, Verify};
use crate::wire::session::{Forked, Sessions};
use crate::wire::status::{FailedRollback, Filesystem, OpenTurn, Recovery, Status};
use crate::wire::turn::TurnStarted;
use crate::wire::upkeep::{GcReport, Verified};
use crate::{history, sessions};

type TurnAnswer = Result<Json<crate::wire::turn::Turn>, ApiError>;

/// A session name as `sessions::is_valid_name` allows, else `bad_session`.
pub fn valid_session(name: &str) -> Result<(), ApiError> {
    if sessions::is_valid_name(name) {
        return Ok(());
    }
    Err(ApiError::bad_request(ErrorCode::BadSession, sessions::NAME_RULE))
}

pub async fn status(State(state): State<Arc<AppState>>) -> Result<Json<Status>, ApiError> {
    if state.stats.capture_stopped() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::CaptureStopped,
            "the capture thread died: nothing is recorded any more and the daemon is stopping; start it again (it recovers as after a crash)",
        ));
    }
    state
        .read(|conn, state| {
            let open_turns = turns::open(conn)?
                .into_iter()
                .map(|t| OpenTurn {
                    session: t.session,
                    turn: t.number,
                })
                .collect();
            let totals = history::totals(conn)?;
            Ok(Json(Status {
                root: state.root.clone(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                pid: std::process::id(),
                state_dir: state.state_dir.clone(),
                tracked_files: totals.tracked.files,
                tracked_dirs: totals.tracked.dirs,
                tracked_symlinks: totals.tracked.symlinks,
                store_bytes: totals.store_bytes,
                index_bytes: crate::state::index_bytes(&state.state_dir),
                latest_seq: totals.latest_seq,
                open_turns,
                watcher: state.stats.snapshot(),
                workspace_lost: state.stats.workspace_lost(),
                verify: state.stats.verify(),
                recovery: journal::last_recovered(conn)?.as_ref().map(Recovery::of),
                failed_rollbacks: journal::reverting_rollbacks(conn)?
                    .iter()
                    .map(FailedRollback::of)
                    .collect(),
                filesystem: crate::fs::mode::describe(&state.root).map(|fs| Filesystem {
                    kind: fs.kind,
                    install_mode: fs.mode.name().to_string(),
                    probed: fs.probed,
                }),
                ownership: state.stats.ownership(),
            }))
        })
        .await
}

/// What `agent` may be: 1 to 64 characters of `A-Za-z0-9._:-`.
fn valid_agent(agent: Option<&str>) -> Result<(), ApiError> {
    let fits = |a: &str| {
        (1..=64).contains(&a.len())
            && a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
    };
    match agent {
        Some(agent) if !fits(agent) => Err(ApiError::bad_request(
            ErrorCode::BadRequest,
            "\"agent\" is 1 to 64 characters of A-Z a-z 0-9 . _ : -",
        )),
        _ => Ok(()),
    }
}

pub async fn start_turn(
    State(state): State<Arc<AppState>>,
    Path(session): Path<String>,
    JsonBody(body): JsonBody<TurnStart>,
) -> Result<(StatusCode, Json<TurnStarted>), ApiError> {
    valid_session(&session)?;
    valid_agent(body.agent.as_deref())?;
    let (reply, answer) = oneshot::channel();
    let marker = TurnMarker {
        turn_ref: body.turn_ref,
        label: body.label,
        agent: body.agent,
    };
    state.worker.send(Command::TurnStart {
        session,
        marker,
        reply,
    })?;
    let started = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))??;
    let ended = match started.ended {
        Some(turn) => Some(
            state
                .read(move |conn, state| Ok(render::turn(conn, &state.blobs, &turn, false)?))
                .await?,
        ),
        None => None,
    };
    let turn = started.turn;
    let body = TurnStarted {
        session: turn.session,
        turn: turn.number,
        turn_ref: turn.turn_ref,
        label: turn.label,
        start_seq: turn.start_seq,
        started_at: crate::model::format_time(turn.started_at),
        ended,
    };
    Ok((StatusCode::CREATED, Json(body)))
}

/// Waits until every write made before the request is recorded (the barrier).
pub async fn synced(state: &AppState) -> Result<(), ApiError> {
    // No daemon runs: nothing can change the index, every write is in it.
    if state.offline {
        return Ok(());
    }
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Sync { reply })?;
    answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))
}

pub async fn end_turn(
    State(state): State<Arc<AppState>>,
    Path((session, turn)): Path<(String, String)>,
    JsonBody(body): JsonBody<TurnEnd>,
) -> TurnAnswer {
    valid_session(&session)?;
    let (reply, answer) = oneshot::channel();
    let turn = TurnSelector::parse(&turn);
    state.worker.send(Command::TurnEnd {
        session,
        turn,
        label: body.label,
        reply,
    })?;
    let ended = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))??;
    state
        .read(move |conn, state| Ok(Json(render::turn(conn, &state.blobs, &ended, false)?)))
        .await
}

#[derive(Debug, Deserialize)]
pub struct TurnQuery {
    #[serde(default)]
    diff: bool,
    /// Only the changes at or beneath this path.
    path: Option<String>,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

impl TurnQuery {
    fn changes(&self) -> Result<render::Changes, ApiError> {
        let under = match &self.path {
            Some(text) => Some(
                RelPath::parse(text)
                    .map_err(|e| ApiError::bad_request(ErrorCode::BadPath, format!("{text:?}: {e}")))?,
            ),
            None => None,
        };
        Ok(render::Changes {
            under,
            offset: self.offset,
            limit: self.limit,
        })
    }
}

pub async fn get_turn(
    State(state): State<Arc<AppState>>,
    Path((session, turn)): Path<(String, String)>,
    Query(query): Query<TurnQuery>,
) -> TurnAnswer {
    valid_session(&session)?;
    let page = query.changes()?;
    let (name, selector) = (session.clone(), TurnSelector::parse(&turn));
    sync_if(&state, move |conn| {
        Ok(turns::find(conn, &name, &selector)?.end_seq.is_none())
    })
    .await?;
    state
        .read(move |conn, state| {
            let found = turns::find(conn, &session, &TurnSelector::parse(&turn))?;
            let view = render::turn_page(conn, &state.blobs, &found, query.diff, &page)?;
            Ok(Json(view))
        })
        .await
}

/// Passes the barrier when `can_change` says the answer's state can still change (an open
/// turn): every write made before the request is then in it, as for `history` and `content`.
pub(super) async fn sync_if<F>(state: &Arc<AppState>, can_change: F) -> Result<(), ApiError>
where
    F: FnOnce(&rusqlite::Connection) -> Result<bool, ApiError> + Send + 'static,
{
    if state.read(move |conn, _| can_change(conn)).await? {
        synced(state).await?;
    }
    Ok(())
}

/// The session's latest turn is open (404 for an unknown session).
fn has_open_turn(conn: &rusqlite::Connection, session: &str) -> Result<bool, ApiError> {
    let last = sessions::named(conn, session)?.last_turn(conn)?;
    Ok(last.is_some_and(|turn| turn.end_seq.is_none()))
}

pub async fn list_turns(
    State(state): State<Arc<AppState>>,
    Path(session): Path<String>,
) -> Result<Json<Listing>, ApiError> {
    valid_session(&session)?;
    let name = session.clone();
    sync_if(&state, move |conn| has_open_turn(conn, &name)).await?;
    state
        .read(move |conn, app| {
            let lineage = sessions::named(conn, &session)?;
            let turns = lineage.turns(conn)?;
            let counts = history::counts::of_turns(conn, &turns)?;
            let turns = turns.into_iter().zip(counts);
            let turns = turns
                .map(|(turn, counts)| render::turn_summary(conn, &app.blobs, turn, counts))
                .collect::<rusqlite::Result<_>>()?;
            let rollbacks = briefs::of_session(conn, lineage.session_id())?;
            let rollbacks = rollbacks.into_iter().map(RollbackSummary::of).collect();
            Ok(Json(Listing {
                session,
                turns,
                rollbacks,
            }))
        })
        .await
}

pub async fn fork(
    State(state): State<Arc<AppState>>,
    Path(parent): Path<String>,
    JsonBody(body): JsonBody<Fork>,
) -> Result<(StatusCode, Json<Forked>), ApiError> {
    valid_session(&parent)?;
    let (Some(new_session), Some(turn)) = (body.new_session, body.turn) else {
        return Err(ApiError::bad_request(
            ErrorCode::BadRequest,
            "give \"new_session\" and \"turn\"",
        ));
    };
    valid_session(&new_session)?;
    let turn = ApiError::turn_of(turn)?;
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Fork {
        parent: parent.clone(),
        new_session: new_session.clone(),
        turn,
        reply,
    })?;
    let forked = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))??;
    let body = Forked {
        session: new_session,
        parent,
        fork_turn: forked.number,
        fork_seq: forked.end_seq,
    };
    Ok((StatusCode::CREATED, Json(body)))
}

pub async fn list_sessions(State(state): State<Arc<AppState>>) -> Result<Json<Sessions>, ApiError> {
    state
        .read(|conn, _| {
            let sessions = sessions::list(conn)?.iter().map(render::session).collect();
            Ok(Json(Sessions { sessions }))
        })
        .await
}

/// A query's `?path=`, parsed: missing or not a workspace path, a `bad_path`.
pub fn query_path(text: Option<&str>) -> Result<RelPath, ApiError> {
    let text = text.ok_or_else(|| ApiError::bad_request(ErrorCode::BadPath, "give the path as ?path="))?;
    RelPath::parse(text).map_err(|e| ApiError::bad_request(ErrorCode::BadPath, format!("{text:?}: {e}")))
}

#[derive(Debug, Deserialize)]
pub struct HistoryQuery {
    path: Option<String>,
}

pub async fn history(
    State(state): State<Arc<AppState>>,
    Query(query): Query<HistoryQuery>,
) -> Result<Json<crate::wire::history::History>, ApiError> {
    let path = query_path(query.path.as_deref())?;
    synced(&state).await?;
    let asked = path.clone();
    let versions = state
        .read(move |conn, _| Ok(history::path_history(conn, &asked)?))
        .await?;
    if versions.is_empty() {
        let unrecorded = ApiError::not_found(format!("{path} has no recorded version"));
        return Err(super::ignored::or_ignored(&state, path, unrecorded).await);
    }
    let path = path.to_text();
    Ok(Json(super::versions::history(path, &versions)))
}

pub async fn not_found() -> ApiError {
    ApiError::not_found("no such endpoint; see docs/api.md")
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::MethodNotAllowed,
        "this endpoint does not take that method",
    )
}

/// `POST /v1/gc`: retention now (or what it would remove).
pub async fn gc(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<Gc>,
) -> Result<Json<GcReport>, ApiError> {
    // With the workspace lost the history is all the user has left: retention waits.
    let lost = |state: &AppState| {
        state
            .stats
            .workspace_lost()
            .map(|l| ApiError::workspace_lost(l.message()))
    };
    if let Some(err) = lost(&state) {
        return Err(err);
    }
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Gc {
        dry_run: body.dry_run,
        reply,
    })?;
    let report = answer.await.map_err(|_| {
        lost(&state).unwrap_or_else(|| ApiError::unavailable("the daemon is shutting down"))
    })??;
    Ok(Json(report))
}

/// `POST /v1/verify`: a verification pass now (G2), behind the barrier: what it recorded.
pub async fn verify(
    State(state): State<Arc<AppState>>,
    JsonBody(_): JsonBody<Verify>,
) -> Result<Json<Verified>, ApiError> {
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Verify { reply })?;
    let found = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))?
        .map_err(|err| match err {
            VerifyError::Store(e) => ApiError::from(e),
            VerifyError::Refused(why) => ApiError::from(why),
        })?;
    Ok(Json(found))
}
