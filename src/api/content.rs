//! `GET /v1/content`: what a path held at a boundary, a time or a sequence number.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::AppState;
use super::error::ApiError;
use crate::model::State as Recorded;
use crate::paths::RelPath;
use crate::sessions::turns::{self, TurnSelector};
use crate::store::{read_blob, sql};

#[derive(Debug, Deserialize)]
pub struct ContentQuery {
    path: Option<String>,
    seq: Option<i64>,
    at: Option<String>,
    session: Option<String>,
    before: Option<String>,
    after: Option<String>,
}

/// `GET /v1/content?path=P[&seq=S | &at=TIME | &session=S&before=N | &session=S&after=N]`:
/// the raw content a path had then (the latest when no point is given).
pub async fn content(
    State(state): State<Arc<AppState>>,
    Query(query): Query<ContentQuery>,
) -> Result<Response, ApiError> {
    let text = query
        .path
        .clone()
        .ok_or_else(|| ApiError::bad_request("bad_path", "give the path as ?path="))?;
    let path =
        RelPath::parse(&text).map_err(|e| ApiError::bad_request("bad_path", format!("{text:?}: {e}")))?;
    // A sequence number or a turn's start names a state that is already recorded; the latest,
    // a time or a turn's end may still be catching up with writes just made.
    if query.seq.is_none() && query.before.is_none() {
        super::handlers::synced(&state).await?;
    }
    let (bytes, kind, seq) = state
        .read(move |conn, state| {
            let seq = point(conn, &query)?;
            let horizon = crate::store::gc::horizon(conn)?;
            if seq < horizon {
                let message =
                    format!("that state (seq {seq}) was removed by retention; the oldest is seq {horizon}");
                return Err(ApiError::new(StatusCode::GONE, "expired", message));
            }
            let path_id = sql::path_id(conn, &path)?
                .ok_or_else(|| ApiError::not_found(format!("{path} has no recorded version")))?;
            let found = crate::store::journal::version_at(conn, path_id, seq)?;
            let (seq, version) =
                found.ok_or_else(|| ApiError::not_found(format!("{path} did not exist then")))?;
            match version {
                Recorded::File(f) if f.too_large => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "too_large",
                    format!("{path} was over max_file_size: only its size and hash were recorded"),
                )),
                Recorded::File(f) if f.unreadable => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "unreadable",
                    format!("filewatchd could not read {path} then: its content was never recorded"),
                )),
                Recorded::File(f) => Ok((
                    read_blob(conn, &state.blobs, f.hash).map_err(ApiError::internal)?,
                    "file",
                    seq,
                )),
                Recorded::Symlink { target } => Ok((target, "symlink", seq)),
                Recorded::Dir => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "not_a_file",
                    format!("{path} was a directory then"),
                )),
                Recorded::Absent => Err(ApiError::not_found(format!("{path} did not exist then"))),
                Recorded::Untracked => Err(ApiError::not_found(format!(
                    "{path} was not tracked then (an ignore rule hid it): its content was not recorded"
                ))),
            }
        })
        .await?;
    let headers = [
        (header::CONTENT_TYPE, "application/octet-stream".to_string()),
        (
            header::HeaderName::from_static("x-filewatchd-kind"),
            kind.to_string(),
        ),
        (
            header::HeaderName::from_static("x-filewatchd-seq"),
            seq.to_string(),
        ),
    ];
    Ok((headers, bytes).into_response())
}

/// The sequence number a content query names.
fn point(conn: &rusqlite::Connection, query: &ContentQuery) -> Result<i64, ApiError> {
    if let Some(seq) = query.seq {
        return Ok(seq);
    }
    if let Some(at) = &query.at {
        let ms = crate::model::parse_time(at).map_err(|e| ApiError::bad_request("bad_time", e))?;
        crate::restore::chain::refuse_before_history(conn, ms)?;
        return Ok(crate::store::journal::seq_at_time(conn, ms)?);
    }
    let boundary = match (&query.before, &query.after) {
        (Some(n), _) => Some((n, true)),
        (None, Some(n)) => Some((n, false)),
        _ => None,
    };
    let Some((turn, before)) = boundary else {
        return Ok(i64::MAX);
    };
    let session = query
        .session
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("bad_request", "before/after need a session"))?;
    let turn = turns::find(conn, session, &TurnSelector::parse(turn))?;
    Ok(if before {
        turn.start_seq
    } else {
        turn.end_seq.unwrap_or(i64::MAX)
    })
}
