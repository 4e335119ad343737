//! API errors: every one is `{"error":{"code","message"}}` with a fitting status, its code one
//! of `ErrorCode` (docs/api.md's table).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::refusal::Refusal;
use crate::sessions::turns::{LookupError, TurnError};

/// The `code` of an API error: what a client branches on (the CLI, the hooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    // 400: malformed input.
    BadRequest,
    BadJson,
    BadSession,
    BadPath,
    BadTime,
    BadPin,
    // 401, 403: access.
    Unauthorized,
    Forbidden,
    // 404: unknown route, session, turn, pin or path; a rollback's path never recorded.
    NotFound,
    NotRecorded,
    /// A path an ignore rule hides: the message names the rule and where it is written.
    Ignored,
    MethodNotAllowed,
    RequestTimeout,
    // 409: a turn-state clash, a refusal, or content that cannot be given.
    TurnNotOpen,
    TurnOpen,
    SessionExists,
    PinExists,
    NothingToUndo,
    NothingToRedo,
    OpIdReused,
    BeforeHistory,
    /// A rollback refused because of conflicts; the body is the full plan.
    Conflicts,
    TooLarge,
    Unreadable,
    NotAFile,
    /// A hunk asked of a change that is not text (binary, too large, a deletion).
    NotText,
    // 410: a state retention has collapsed.
    Expired,
    PayloadTooLarge,
    UnsupportedMediaType,
    // 500: a defect.
    Internal,
    // 503: the daemon cannot serve this now.
    StorageError,
    RollbackFailed,
    Unavailable,
    WorkspaceLost,
    CaptureStopped,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    /// More fields of the error object (a failed rollback's `cause`, `path`, `paths`).
    pub details: Option<serde_json::Value>,
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

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// A request's `"turn"` (`TurnSelector::from_json`), or why it is not one.
    pub fn turn_of(value: &serde_json::Value) -> Result<crate::sessions::turns::TurnSelector, Self> {
        crate::sessions::turns::TurnSelector::from_json(value).ok_or_else(|| {
            Self::bad_request(
                ErrorCode::BadRequest,
                "\"turn\" is a number, a ref or \"current\"",
            )
        })
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

#[cfg(test)]
mod tests {
    use super::ErrorCode::{self, *};

    /// The codes as docs/api.md spells them: a rename here changes the wire.
    const SPELLED: &[(ErrorCode, &str)] = &[
        (BadRequest, "bad_request"),
        (BadJson, "bad_json"),
        (BadSession, "bad_session"),
        (BadPath, "bad_path"),
        (BadTime, "bad_time"),
        (BadPin, "bad_pin"),
        (Unauthorized, "unauthorized"),
        (Forbidden, "forbidden"),
        (NotFound, "not_found"),
        (NotRecorded, "not_recorded"),
        (Ignored, "ignored"),
        (MethodNotAllowed, "method_not_allowed"),
        (RequestTimeout, "request_timeout"),
        (TurnNotOpen, "turn_not_open"),
        (TurnOpen, "turn_open"),
        (SessionExists, "session_exists"),
        (PinExists, "pin_exists"),
        (NothingToUndo, "nothing_to_undo"),
        (NothingToRedo, "nothing_to_redo"),
        (OpIdReused, "op_id_reused"),
        (BeforeHistory, "before_history"),
        (Conflicts, "conflicts"),
        (TooLarge, "too_large"),
        (Unreadable, "unreadable"),
        (NotAFile, "not_a_file"),
        (NotText, "not_text"),
        (Expired, "expired"),
        (PayloadTooLarge, "payload_too_large"),
        (UnsupportedMediaType, "unsupported_media_type"),
        (Internal, "internal"),
        (StorageError, "storage_error"),
        (RollbackFailed, "rollback_failed"),
        (Unavailable, "unavailable"),
        (WorkspaceLost, "workspace_lost"),
        (CaptureStopped, "capture_stopped"),
    ];

    #[test]
    fn codes_are_spelled_as_the_docs_say() {
        for &(code, spelled) in SPELLED {
            let json = serde_json::to_value(code).expect("serialize");
            assert_eq!(json, serde_json::json!(spelled));
            assert_eq!(serde_json::from_value::<ErrorCode>(json).ok(), Some(code));
        }
    }
}
