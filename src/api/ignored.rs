//! A path nothing was recorded at, named as ignored when an ignore rule hides it:
//! 404 `ignored`, the message naming the rule and where it is written.

use tokio::sync::oneshot;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use crate::engine::Command;
use crate::paths::RelPath;
use crate::watch::filter::{Ignored, IgnoredBy};
use crate::wire::error::{Details, IgnoredPath};

/// `ignored` when an ignore rule hides `path` (or one of its directories), else `unrecorded`
/// (the 404 the request had already).
pub async fn or_ignored(state: &AppState, path: RelPath, unrecorded: ApiError) -> ApiError {
    let (reply, answer) = oneshot::channel();
    if state.worker.send(Command::WhyIgnored { path, reply }).is_err() {
        return unrecorded;
    }
    match answer.await {
        Ok(Some(ignored)) => error(&ignored),
        _ => unrecorded,
    }
}

fn error(ignored: &Ignored) -> ApiError {
    let (rule, source, line) = match &ignored.by {
        IgnoredBy::Rule { glob, source, line } => (Some(glob.clone()), source.clone(), *line),
        IgnoredBy::Git => (None, Some(".git/".to_string()), None),
        IgnoredBy::Own => (None, Some("state directory".to_string()), None),
        IgnoredBy::FuseHidden => (None, Some(".fuse_hidden*".to_string()), None),
    };
    let details = Details::Ignored(Box::new(IgnoredPath {
        path: ignored.path.to_text(),
        ignored_path: ignored.through.as_ref().unwrap_or(&ignored.path).to_text(),
        rule,
        source,
        line,
    }));
    let message = format!("{ignored}: ignored paths are never recorded");
    ApiError::new(axum::http::StatusCode::NOT_FOUND, ErrorCode::Ignored, message).with_details(details)
}
