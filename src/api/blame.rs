//! `GET /v1/blame?path=P[&seq=S|&at=TIME]`: each line of a text version with the version that
//! introduced it: its origin, and for a turn's, the session, the turn and its prompt.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use super::render::first_line;
use crate::history;
use crate::history::blame::{self, Blame, BlameError};
use crate::model::format_time;
use crate::paths::RelPath;
use crate::wire::blame as wire;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlameQuery {
    path: Option<String>,
    seq: Option<i64>,
    at: Option<String>,
}

pub async fn blame(
    State(state): State<Arc<AppState>>,
    Query(query): Query<BlameQuery>,
) -> Result<Json<wire::Blame>, ApiError> {
    let path = super::handlers::query_path(query.path.as_deref())?;
    let at_ms = match (query.seq, query.at.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                ErrorCode::BadRequest,
                "give seq or at, not both",
            ));
        }
        (_, Some(at)) => {
            Some(crate::model::parse_time(at).map_err(|e| ApiError::bad_request(ErrorCode::BadTime, e))?)
        }
        _ => None,
    };
    if query.seq.is_none() {
        super::handlers::synced(&state).await?;
    }
    let asked = path.clone();
    let found = state
        .read(move |conn, state| {
            let seq = match at_ms {
                Some(ms) => Some(history::seq_at_time(conn, ms)?.map_err(|before| {
                    ApiError::new(StatusCode::CONFLICT, ErrorCode::BeforeHistory, before.to_string())
                })?),
                None => query.seq,
            };
            Ok(blame::blame(conn, &state.blobs, &asked, seq))
        })
        .await?;
    match found {
        Ok(found) => Ok(Json(render(&path, &found))),
        Err(err @ BlameError::NeverRecorded(_)) => {
            let unrecorded = ApiError::not_found(err.to_string());
            Err(super::ignored::or_ignored(&state, path, unrecorded).await)
        }
        Err(err @ (BlameError::NotYet(..) | BlameError::NotAFile { .. })) => {
            Err(ApiError::not_found(err.to_string()))
        }
        Err(BlameError::Blob(e)) => Err(ApiError::internal(e)),
        Err(BlameError::Store(e)) => Err(ApiError::from(e)),
    }
}

fn render(path: &RelPath, found: &Blame) -> wire::Blame {
    let line = |(i, line): (usize, &blame::BlameLine)| {
        let by = &found.versions[line.by];
        let turn = by.turn.as_ref();
        wire::Line {
            seq: by.version.seq,
            time: format_time(by.version.recorded_at),
            origin: by.version.origin,
            session: turn.map(|t| t.session.clone()),
            turn: turn.map(|t| t.number),
            prompt: turn
                .and_then(|t| t.label.as_deref())
                .map(|l| first_line(l).to_string()),
            line: i + 1,
            text: line.text.clone(),
        }
    };
    wire::Blame {
        path: path.to_text(),
        seq: found.versions[found.target].version.seq,
        binary: found.binary,
        too_large: found.too_large,
        lines: found.lines.iter().enumerate().map(line).collect(),
    }
}
