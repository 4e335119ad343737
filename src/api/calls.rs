//! `POST /v1/sessions/{s}/tool-calls`: the agent's hook reports a tool call's start or end
//! (docs/api.md), answered once every write made before it is recorded.

use std::path::Path as FsPath;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use tokio::sync::oneshot;

use super::AppState;
use super::access::JsonBody;
use super::error::{ApiError, ErrorCode};
use super::handlers::valid_session;
use crate::capture::owners::Call;
use crate::engine::Command;
use crate::paths::RelPath;
use crate::wire::request::ToolCall;
use crate::wire::turn::ToolCallMarked;

/// A tool's id or name is the agent's, kept short.
const NAME_MAX: usize = 200;
/// An edit tool names a few files; a patch a few hundred at most.
const PATHS_MAX: usize = 1000;
/// A process's ancestry is a few dozen deep at most.
const PIDS_MAX: usize = 64;

pub async fn tool_call(
    State(state): State<Arc<AppState>>,
    Path(session): Path<String>,
    JsonBody(body): JsonBody<ToolCall>,
) -> Result<Json<ToolCallMarked>, ApiError> {
    valid_session(&session)?;
    let phase = body.phase.ok_or_else(|| {
        ApiError::bad_request(
            ErrorCode::BadRequest,
            "the body needs \"phase\": \"start\" or \"end\"",
        )
    })?;
    let short = |text: Option<String>| text.map(|t| t.chars().take(NAME_MAX).collect::<String>());
    let call = Call {
        id: short(body.id),
        tool: short(body.tool),
        paths: body
            .paths
            .iter()
            .take(PATHS_MAX)
            .filter_map(|p| in_workspace(&state.root, p))
            .collect(),
        pids: body.pids.iter().copied().take(PIDS_MAX).collect(),
        started: None,
    };
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::ToolCall {
        session,
        phase,
        call: Box::new(call),
        reply,
    })?;
    let marked = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))?;
    Ok(Json(marked.map_err(ApiError::from)?))
}

/// A path an edit tool names, as a path in the workspace: absolute beneath the root, or
/// relative to it. Anything else (outside the workspace, `..`) names nothing here.
fn in_workspace(root: &FsPath, text: &str) -> Option<RelPath> {
    let path = FsPath::new(text);
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    RelPath::parse(relative.to_str()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_in_the_workspace_are_kept() {
        let root = FsPath::new("/w/proj");
        let rel = |p: &str| in_workspace(root, p).map(|r| r.to_text());
        assert_eq!(rel("/w/proj/src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(rel("src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(rel("/w/other/a.rs"), None);
        assert_eq!(rel("/w/proj/../other/a.rs"), None);
        assert_eq!(rel("/w/proj"), None);
    }
}
