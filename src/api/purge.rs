//! `POST /v1/purge`: a path's contents deleted from the store (`crate::store::purge`), behind
//! the barrier, so its latest write is purged too.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use tokio::sync::oneshot;

use super::AppState;
use super::access::JsonBody;
use super::error::{ApiError, ErrorCode};
use crate::engine::Command;
use crate::paths::RelPath;
use crate::wire::request::Purge;
use crate::wire::upkeep::Purged;

pub async fn purge(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<Purge>,
) -> Result<Json<Purged>, ApiError> {
    let path = RelPath::parse(&body.path)
        .map_err(|e| ApiError::bad_request(ErrorCode::BadPath, format!("{}: {e}", body.path)))?;
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Purge {
        path: path.clone(),
        reply,
    })?;
    let purged = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))??;
    match purged {
        Some(purged) => Ok(Json(purged)),
        None => {
            let message = format!("nothing at or beneath '{}' was ever recorded", body.path);
            let unrecorded = ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotRecorded, message);
            Err(super::ignored::or_ignored(&state, path, unrecorded).await)
        }
    }
}
