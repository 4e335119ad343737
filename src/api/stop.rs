//! `POST /v1/stop`: the daemon asked to shut down over its API, the same way `SIGTERM` stops
//! it (`daemon`): it stops accepting connections, lets the requests in flight finish, the
//! capture worker records what it was given and closes the index, and the process exits.
//! The answer (202 with the pid) goes out before it does. This is how `filewatchd stop`
//! stops a daemon on every platform; a signal is only its fallback where the OS can prove
//! whose pid it is (docs/platforms.md).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use tokio::sync::Notify;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use super::ui::Caller;
use crate::wire::status::Stopping;

/// Word from the API to the daemon's shutdown that it was asked to stop. The permit is kept
/// when nobody waits yet, so a request is never lost.
#[derive(Debug, Default)]
pub struct StopRequest(Notify);

impl StopRequest {
    /// Completes once a client has asked the daemon to stop.
    pub async fn asked(&self) {
        self.0.notified().await;
    }

    fn ask(&self) {
        self.0.notify_one();
    }
}

/// Only a client with the token stops the daemon: the token file is the daemon's own user's
/// (0600), and the review page, whose cookie grants reads and reviews, is refused (403).
pub async fn stop(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
) -> Result<(StatusCode, Json<Stopping>), ApiError> {
    if caller != Caller::Bearer {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "only a client with the token can stop the daemon",
        ));
    }
    if state.offline {
        return Err(ApiError::unavailable("no daemon runs: there is nothing to stop"));
    }
    tracing::info!("asked to stop over the API: shutting down");
    state.stop.ask();
    let pid = std::process::id();
    Ok((StatusCode::ACCEPTED, Json(Stopping { pid })))
}
