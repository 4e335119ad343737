//! The rollback routes: `POST /v1/sessions/{s}/rollback`, `/undo`, `/redo`, and
//! `/turns/{n}/revert` (one file or hunk of a turn).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use tokio::sync::oneshot;

use super::AppState;
use super::access::JsonBody;
use super::error::{ApiError, ErrorCode};
use super::handlers::valid_session;
use crate::engine::Command;
use crate::paths::RelPath;
use crate::restore::apply::Cause;
use crate::restore::revert::RevertError;
use crate::restore::{Operation, Request, RollbackError};
use crate::sessions::turns::TurnSelector;
use crate::wire::error::Details;
use crate::wire::request::{Revert, Rollback};
use crate::wire::rollback::RollbackAnswer;

type Answer = Result<(StatusCode, Json<RollbackAnswer>), ApiError>;

pub async fn rollback(
    state: State<Arc<AppState>>,
    Path(session): Path<String>,
    JsonBody(body): JsonBody<Rollback>,
) -> Answer {
    let (Some(to), Some(turn)) = (body.to, body.turn.clone()) else {
        return Err(ApiError::bad_request(
            ErrorCode::BadRequest,
            "give \"to\": \"before\" or \"after\", and \"turn\"",
        ));
    };
    let turn = ApiError::turn_of(turn)?;
    run(state, Some(session), Operation::Rollback { to, turn }, body).await
}

/// `POST /v1/rollback`: the workspace as recorded at a time, or at the point a pin names, for
/// users with no agent hooks.
pub async fn rollback_in_time(state: State<Arc<AppState>>, JsonBody(body): JsonBody<Rollback>) -> Answer {
    let operation = match (body.at.as_deref(), body.pin.clone(), body.seq) {
        (Some(at), None, None) => Operation::Time {
            at_ms: parse_time(at)?,
        },
        (None, Some(name), None) => Operation::Pin { name },
        (None, None, Some(seq)) => Operation::Seq { seq },
        _ => {
            return Err(ApiError::bad_request(
                ErrorCode::BadRequest,
                "give one of \"at\" (an RFC 3339 time), \"pin\" (a pin's name) or \"seq\" (a sequence number, with \"paths\")",
            ));
        }
    };
    run(state, None, operation, body).await
}

/// `POST /v1/redo`: undo the latest time rollback.
pub async fn redo_in_time(state: State<Arc<AppState>>, JsonBody(body): JsonBody<Rollback>) -> Answer {
    run(state, None, Operation::Redo, body).await
}

fn parse_time(text: &str) -> Result<i64, ApiError> {
    crate::model::parse_time(text).map_err(|e| ApiError::bad_request(ErrorCode::BadTime, e))
}

/// `POST /v1/sessions/{s}/turns/{n}/revert`: one file of a turn back to the turn's start, or
/// one hunk of the turn's diff of it taken back; a rollback of the session.
pub async fn revert(
    state: State<Arc<AppState>>,
    Path((session, turn)): Path<(String, String)>,
    JsonBody(body): JsonBody<Revert>,
) -> Answer {
    let Some(path) = body.path else {
        return Err(ApiError::bad_request(
            ErrorCode::BadPath,
            "give the file to revert as \"path\"",
        ));
    };
    let operation = Operation::Revert {
        turn: TurnSelector::parse(&turn),
        hunk: body.hunk,
    };
    let body = Rollback {
        on_conflict: body.on_conflict,
        dry_run: body.dry_run,
        paths: vec![path],
        op_id: body.op_id,
        diff: body.diff,
        ..Rollback::default()
    };
    run(state, Some(session), operation, body).await
}

pub async fn undo(
    state: State<Arc<AppState>>,
    Path(session): Path<String>,
    JsonBody(body): JsonBody<Rollback>,
) -> Answer {
    run(state, Some(session), Operation::Undo, body).await
}

pub async fn redo(
    state: State<Arc<AppState>>,
    Path(session): Path<String>,
    JsonBody(body): JsonBody<Rollback>,
) -> Answer {
    run(state, Some(session), Operation::Redo, body).await
}

async fn run(
    State(state): State<Arc<AppState>>,
    session: Option<String>,
    operation: Operation,
    body: Rollback,
) -> Answer {
    if let Some(session) = &session {
        valid_session(session)?;
    }
    if body.pin.is_some() && !matches!(operation, Operation::Pin { .. }) {
        return Err(ApiError::bad_request(
            ErrorCode::BadRequest,
            "\"pin\" goes to POST /v1/rollback: a rollback to a pin is one of the whole workspace",
        ));
    }
    let paths = body
        .paths
        .iter()
        .map(|p| {
            RelPath::parse(p).map_err(|e| ApiError::bad_request(ErrorCode::BadPath, format!("{p:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if body
        .op_id
        .as_ref()
        .is_some_and(|id| id.is_empty() || id.len() > 200)
    {
        return Err(ApiError::bad_request(
            ErrorCode::BadRequest,
            "op_id is 1 to 200 characters",
        ));
    }
    let request = Request {
        session,
        operation,
        on_conflict: body.on_conflict,
        dry_run: body.dry_run,
        paths,
        op_id: body.op_id,
        diff: body.diff,
        actor: body.actor,
    };
    let (reply, answer) = oneshot::channel();
    state
        .worker
        .send(Command::Rollback { request, reply })
        .map_err(ApiError::from)?;
    let outcome = match answer.await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(RollbackError::NeverRecorded(text))) => return Err(never_recorded(&state, text).await),
        Ok(Err(err)) => return Err(err.into()),
        Err(_) => return Err(ApiError::unavailable("the daemon is shutting down")),
    };
    let answer = RollbackAnswer::of(outcome);
    let status = if answer.refused() {
        StatusCode::CONFLICT
    } else {
        StatusCode::OK
    };
    Ok((status, Json(answer)))
}

/// A requested path nothing was recorded at or beneath: `ignored` when a rule hides it.
async fn never_recorded(state: &AppState, text: String) -> ApiError {
    let unrecorded = ApiError::from(RollbackError::NeverRecorded(text.clone()));
    match RelPath::parse(&text) {
        Ok(path) => super::ignored::or_ignored(state, path, unrecorded).await,
        Err(_) => unrecorded,
    }
}

impl From<RollbackError> for ApiError {
    fn from(err: RollbackError) -> Self {
        let message = err.to_string();
        match err {
            RollbackError::Lookup(lookup) => Self::from(lookup),
            RollbackError::NeverRecorded(_) => {
                Self::new(StatusCode::NOT_FOUND, ErrorCode::NotRecorded, message)
            }
            RollbackError::TurnOpen { .. } => Self::new(StatusCode::CONFLICT, ErrorCode::TurnOpen, message),
            RollbackError::NothingToUndo(_) => {
                Self::new(StatusCode::CONFLICT, ErrorCode::NothingToUndo, message)
            }
            RollbackError::NothingToRedo(_) | RollbackError::NothingToRedoInTime => {
                Self::new(StatusCode::CONFLICT, ErrorCode::NothingToRedo, message)
            }
            RollbackError::UnknownPin(_) => Self::not_found(message),
            RollbackError::Revert(RevertError::NotText(_)) => {
                Self::new(StatusCode::CONFLICT, ErrorCode::NotText, message)
            }
            RollbackError::Revert(_) => Self::not_found(message),
            RollbackError::OpIdReused { .. } => {
                Self::new(StatusCode::CONFLICT, ErrorCode::OpIdReused, message)
            }
            RollbackError::FutureTime(_) => Self::bad_request(ErrorCode::BadTime, message),
            RollbackError::NeedsSession | RollbackError::BadSeq(_) => {
                Self::bad_request(ErrorCode::BadRequest, message)
            }
            RollbackError::Expired { .. } => Self::new(StatusCode::GONE, ErrorCode::Expired, message),
            RollbackError::BeforeHistory(_) => {
                Self::new(StatusCode::CONFLICT, ErrorCode::BeforeHistory, message)
            }
            RollbackError::Store(e) => Self::from(e),
            RollbackError::AppliedNotRecorded(_) => Self::storage(message),
            RollbackError::Failed(failure) => {
                tracing::warn!(error = %message, "rollback failed");
                // The root moved away mid-rollback: what it had changed was put back there.
                let code = if failure.cause == Cause::WorkspaceLost {
                    ErrorCode::WorkspaceLost
                } else {
                    ErrorCode::RollbackFailed
                };
                Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
                    .with_details(Details::Rollback(failure))
            }
            RollbackError::Refused(why) => Self::from(why),
            RollbackError::Git(_) => Self::new(StatusCode::CONFLICT, ErrorCode::GitMoved, message),
        }
    }
}
