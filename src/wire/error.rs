//! Every API error as the daemon writes it and its clients read it: `{"error":{"code","message"}}`
//! and what some errors add, its `code` one of docs/api.md's table.

use serde::{Deserialize, Serialize};

use crate::restore::finish::Failure;

/// The body of every error answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct ErrorAnswer {
    pub error: ErrorBody,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: Code,
    pub message: String,
    #[serde(flatten)]
    pub details: Option<Details>,
}

/// An error's code as a client reads it: one it knows, or the word of a daemon that knows more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Code {
    Known(ErrorCode),
    Unknown(String),
}

/// What an error adds to its code and message, beside them in the same object.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Details {
    /// A failed rollback (`rollback_failed`, `workspace_lost`): its first failure, and where
    /// each path is when not everything could be put back.
    Rollback(Box<Failure>),
    /// `ignored`: the rule that hides the path, and where it is written.
    Ignored(Box<IgnoredPath>),
}

#[derive(Debug, Serialize, Deserialize)]
pub struct IgnoredPath {
    pub path: String,
    /// The path the rule names: `path` itself or a directory above it.
    pub ignored_path: String,
    pub rule: Option<String>,
    pub source: Option<String>,
    pub line: Option<usize>,
}

/// The `code` of an API error: what a client branches on (the CLI, the hooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// A rollback's git part could not move (a git command meanwhile): nothing changed.
    GitMoved,
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
        (GitMoved, "git_moved"),
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
