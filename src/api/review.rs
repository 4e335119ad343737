//! `PUT /v1/sessions/{s}/turns/{n}/review`: marks a turn, or one file it changed, reviewed
//! (or not); the engine writes the mark, in order with everything else.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use tokio::sync::oneshot;

use super::AppState;
use super::access::JsonBody;
use super::error::{ApiError, ErrorCode};
use super::handlers::valid_session;
use crate::engine::Command;
use crate::history;
use crate::paths::RelPath;
use crate::sessions::turns::{self, TurnSelector};
use crate::wire::request;
use crate::wire::turn::Review;

pub async fn review(
    State(state): State<Arc<AppState>>,
    Path((session, turn)): Path<(String, String)>,
    JsonBody(body): JsonBody<request::Review>,
) -> Result<Json<Review>, ApiError> {
    valid_session(&session)?;
    let reviewed = body
        .reviewed
        .ok_or_else(|| ApiError::bad_request(ErrorCode::BadRequest, "give \"reviewed\": true or false"))?;
    let path = body
        .path
        .map(|p| {
            RelPath::parse(&p).map_err(|e| ApiError::bad_request(ErrorCode::BadPath, format!("{p:?}: {e}")))
        })
        .transpose()?;
    let selector = TurnSelector::parse(&turn);
    if let Some(path) = path.clone() {
        let (name, selector) = (session.clone(), selector.clone());
        state
            .read(move |conn, _| {
                let found = turns::find(conn, &name, &selector)?;
                let changed = history::turn_changes(conn, &found)?;
                if changed.iter().any(|c| c.path == path) {
                    return Ok(());
                }
                Err(ApiError::not_found(format!(
                    "turn {n} of session {name:?} did not change {path}: `filewatchd show {n} --session {name}` lists what it changed",
                    n = found.number
                )))
            })
            .await?;
    }
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Review {
        session,
        turn: selector,
        path,
        reviewed,
        reply,
    })?;
    let marks = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))??;
    let paths: Vec<String> = marks.paths.iter().map(RelPath::to_text).collect();
    Ok(Json(Review {
        session: marks.session,
        turn: marks.turn,
        reviewed: marks.reviewed,
        reviewed_paths: paths,
    }))
}
