//! API errors: every one is `{"error":{"code","message"}}` with a fitting status, its code one
//! of `ErrorCode` (docs/api.md's table).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::refusal::Refusal;
use crate::sessions::turns::{LookupError, TurnError, TurnSelector};
pub use crate::wire::error::ErrorCode;
use crate::wire::error::{Code, Details, ErrorAnswer, ErrorBody};
use crate::wire::request::Turn;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    /// More fields of the error object (a failed rollback's `cause`, `path`, `paths`).
    pub details: Option<Details>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Details) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// A request's `"turn"`, or why it is not one.
    pub fn turn_of(turn: Turn) -> Result<TurnSelector, Self> {
        match turn {
            Turn::Selector(selector) => Ok(selector),
            Turn::NotOne(_) => Err(Self::bad_request(
                ErrorCode::BadRequest,
                "\"turn\" is a number, a ref or \"current\"",
            )),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        tracing::error!(error = %message, "request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            message.to_string(),
        )
    }

    /// G12: the store cannot take what the request needs recorded (disk full, I/O error).
    pub fn storage(message: impl Into<String>) -> Self {
        let message = message.into();
        tracing::warn!(error = %message, "request refused: storage error");
        Self::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::StorageError, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Unavailable, message)
    }

    /// The workspace root was moved away, removed or replaced: nothing can be recorded or
    /// rolled back until the daemon is restarted.
    pub fn workspace_lost(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::WorkspaceLost, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = ErrorBody {
            code: Code::Known(self.code),
            message: self.message,
            details: self.details,
        };
        (self.status, Json(ErrorAnswer { error })).into_response()
    }
}

impl From<TurnError> for ApiError {
    fn from(err: TurnError) -> Self {
        let message = err.to_string();
        match err {
            TurnError::Lookup(lookup) => Self::from(lookup),
            TurnError::NotOpen { .. } => Self::new(StatusCode::CONFLICT, ErrorCode::TurnNotOpen, message),
            TurnError::StillOpen { .. } => Self::new(StatusCode::CONFLICT, ErrorCode::TurnOpen, message),
            TurnError::SessionExists(_) => Self::new(StatusCode::CONFLICT, ErrorCode::SessionExists, message),
            TurnError::Store(e) => Self::from(e),
            TurnError::Refused(why) => Self::from(why),
        }
    }
}

/// A refusal is answered alike whichever operation it refused.
impl From<Refusal> for ApiError {
    fn from(why: Refusal) -> Self {
        let message = why.to_string();
        match why {
            Refusal::Unrecorded(_) => Self::storage(message),
            Refusal::Unavailable => Self::unavailable(message),
            Refusal::WorkspaceLost(_) => Self::workspace_lost(message),
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
