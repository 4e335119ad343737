//! API errors: every one is `{"error":{"code","message"}}` with a fitting status.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::sessions::turns::{LookupError, TurnError};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// More fields of the error object (a failed rollback's `cause`, `path`, `paths`).
    pub details: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        tracing::error!(error = %message, "request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message.to_string())
    }

    /// G12: the store cannot take what the request needs recorded (disk full, I/O error).
    pub fn storage(message: impl Into<String>) -> Self {
        let message = message.into();
        tracing::warn!(error = %message, "request refused: storage error");
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "storage_error", message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// The workspace root was moved away, removed or replaced: nothing can be recorded or
    /// rolled back until the daemon is restarted.
    pub fn workspace_lost(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "workspace_lost", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = serde_json::json!({"code": self.code, "message": self.message});
        if let (Some(serde_json::Value::Object(more)), Some(fields)) = (self.details, error.as_object_mut()) {
            fields.extend(more);
        }
        let body = serde_json::json!({ "error": error });
        (self.status, Json(body)).into_response()
    }
}

impl From<TurnError> for ApiError {
    fn from(err: TurnError) -> Self {
        let message = err.to_string();
        match err {
            TurnError::Lookup(lookup) => Self::from(lookup),
            TurnError::NotOpen { .. } => Self::new(StatusCode::CONFLICT, "turn_not_open", message),
            TurnError::StillOpen { .. } => Self::new(StatusCode::CONFLICT, "turn_open", message),
            TurnError::SessionExists(_) => Self::new(StatusCode::CONFLICT, "session_exists", message),
            TurnError::Store(e) => Self::from(e),
            TurnError::Unrecorded(_) => Self::storage(message),
            TurnError::Unavailable => Self::unavailable(message),
            TurnError::WorkspaceLost(_) => Self::workspace_lost(message),
        }
    }
}

impl From<LookupError> for ApiError {
    fn from(err: LookupError) -> Self {
        match err {
            LookupError::Store(e) => Self::from(e),
            other => Self::not_found(other.to_string()),
        }
    }
}

impl From<rusqlite::Error> for ApiError {
    /// The store's own failure (full, I/O error) is a storage fault (503), anything else a
    /// defect (500).
    fn from(err: rusqlite::Error) -> Self {
        match crate::store::fault::StorageFault::from_sqlite(&err) {
            Some(fault) => Self::storage(format!("{fault}; nothing was half-written")),
            None => Self::internal(err),
        }
    }
}
