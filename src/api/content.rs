//! `GET /v1/content`: what a path held at a boundary, a time or a sequence number.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use crate::history::content::{self, ContentError, Point};
use crate::sessions::turns::TurnSelector;

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
    let path = super::handlers::query_path(query.path.as_deref())?;
    // A sequence number or a turn's start names a state that is already recorded; the latest,
    // a time or a turn's end may still be catching up with writes just made.
    if query.seq.is_none() && query.before.is_none() {
        super::handlers::synced(&state).await?;
    }
    let point = point(query)?;
    let asked = path.clone();
    let read = state
        .read(move |conn, state| Ok(content::at(conn, &state.blobs, &asked, &point)))
        .await?;
    let (seq, found) = match read {
        Ok(found) => found,
        Err(err @ ContentError::NeverRecorded(_)) => {
            return Err(super::ignored::or_ignored(&state, path, err.into()).await);
        }
        Err(err) => return Err(err.into()),
    };
    let headers = [
        (header::CONTENT_TYPE, "application/octet-stream".to_string()),
        (
            header::HeaderName::from_static("x-filewatchd-kind"),
            found.kind().name().to_string(),
        ),
        (
            header::HeaderName::from_static("x-filewatchd-seq"),
            seq.to_string(),
        ),
    ];
    Ok((headers, found.into_bytes()).into_response())
}

/// The point a content query names: a sequence number first, then a time, then a turn's
/// boundary; none is the latest.
fn point(query: ContentQuery) -> Result<Point, ApiError> {
    if let Some(seq) = query.seq {
        return Ok(Point::Seq(seq));
    }
    if let Some(at) = &query.at {
        let ms = crate::model::parse_time(at).map_err(|e| ApiError::bad_request(ErrorCode::BadTime, e))?;
        return Ok(Point::Time(ms));
    }
    let boundary = match (query.before, query.after) {
        (Some(n), _) => Some((n, true)),
        (None, Some(n)) => Some((n, false)),
        _ => None,
    };
    let Some((turn, before)) = boundary else {
        return Ok(Point::Latest);
    };
    let session = query
        .session
        .ok_or_else(|| ApiError::bad_request(ErrorCode::BadRequest, "before/after need a session"))?;
    let turn = TurnSelector::parse(&turn);
    Ok(if before {
        Point::Before { session, turn }
    } else {
        Point::After { session, turn }
    })
}

impl From<ContentError> for ApiError {
    fn from(err: ContentError) -> Self {
        let message = err.to_string();
        match err {
            ContentError::Lookup(lookup) => Self::from(lookup),
            ContentError::BeforeHistory(_) => {
                Self::new(StatusCode::CONFLICT, ErrorCode::BeforeHistory, message)
            }
            ContentError::Expired(_) => Self::new(StatusCode::GONE, ErrorCode::Expired, message),
            ContentError::NeverRecorded(_) | ContentError::Absent(_) | ContentError::Untracked(_) => {
                Self::not_found(message)
            }
            ContentError::TooLarge(_) => Self::new(StatusCode::CONFLICT, ErrorCode::TooLarge, message),
            ContentError::Unreadable(_) => Self::new(StatusCode::CONFLICT, ErrorCode::Unreadable, message),
            ContentError::NotAFile(_) => Self::new(StatusCode::CONFLICT, ErrorCode::NotAFile, message),
            ContentError::Blob(e) => Self::internal(e),
            ContentError::Store(e) => Self::from(e),
        }
    }
}
