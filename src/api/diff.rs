//! `GET /v1/diff`: what changed between two points of the record, as `git diff A B` or
//! `jj diff --from A --to B` show it: each path's state at `to` against its state at `from`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use crate::history::content::{self, Point};
use crate::paths::RelPath;
use crate::sessions::turns::TurnSelector;
use crate::store::sql;
use crate::wire::turn::Difference;

#[derive(Debug, Deserialize)]
pub struct DiffQuery {
    from: Option<String>,
    /// Default: now (the latest recorded state).
    to: Option<String>,
    /// Whose turns `before:N` and `after:N` name.
    session: Option<String>,
    /// Only the changes at or beneath this path.
    path: Option<String>,
    #[serde(default)]
    diff: bool,
}

/// `GET /v1/diff?from=WHEN[&to=WHEN][&session=S][&path=P][&diff=true]`, each WHEN one of
/// `before:N`, `after:N` (a turn of `session`), `seq:S`, an RFC 3339 time or `now`.
pub async fn diff(
    State(state): State<Arc<AppState>>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<Difference>, ApiError> {
    let from = query
        .from
        .as_deref()
        .ok_or_else(|| ApiError::bad_request(ErrorCode::BadRequest, "give the first point as ?from="))?;
    let from = point(from, query.session.as_deref())?;
    let to = point(query.to.as_deref().unwrap_or("now"), query.session.as_deref())?;
    let under = match &query.path {
        Some(text) => Some(
            RelPath::parse(text)
                .map_err(|e| ApiError::bad_request(ErrorCode::BadPath, format!("{text:?}: {e}")))?,
        ),
        None => None,
    };
    // The latest state may still be catching up with writes just made.
    super::handlers::synced(&state).await?;
    state
        .read(move |conn, state| {
            let latest = sql::latest_seq(conn)?;
            let from_seq = content::seq_of(conn, &from)?.min(latest);
            let to_seq = content::seq_of(conn, &to)?.min(latest);
            if from_seq > to_seq {
                return Err(ApiError::bad_request(
                    ErrorCode::BadRequest,
                    format!(
                        "from (seq {from_seq}) is after to (seq {to_seq}): give the earlier point as from"
                    ),
                ));
            }
            let range = (from_seq, to_seq);
            Ok(Json(super::render::difference(
                conn,
                &state.blobs,
                range,
                under.as_ref(),
                query.diff,
            )?))
        })
        .await
}

/// One point of the record, as `show --at` names it.
fn point(text: &str, session: Option<&str>) -> Result<Point, ApiError> {
    let bad = |why: String| ApiError::bad_request(ErrorCode::BadRequest, why);
    let turn_of = |n: &str| -> Result<(String, TurnSelector), ApiError> {
        let session =
            session.ok_or_else(|| bad(format!("{text} names a turn: give its session as ?session=")))?;
        Ok((session.to_string(), TurnSelector::parse(n)))
    };
    Ok(match text.split_once(':') {
        _ if text == "now" => Point::Latest,
        Some(("before", n)) => {
            let (session, turn) = turn_of(n)?;
            Point::Before { session, turn }
        }
        Some(("after", n)) => {
            let (session, turn) = turn_of(n)?;
            Point::After { session, turn }
        }
        Some(("seq", n)) => Point::Seq(
            n.parse()
                .map_err(|_| bad(format!("{text:?}: seq:S takes a number")))?,
        ),
        _ => Point::Time(
            crate::model::parse_time(text)
                .map_err(|e| ApiError::bad_request(ErrorCode::BadTime, format!("{text:?}: {e}")))?,
        ),
    })
}
