//! The pin routes: `GET /v1/pins`, `POST /v1/pins`, `DELETE /v1/pins/{name}`. A rollback to a
//! pin is `POST /v1/rollback` with `"pin"` (`rollback`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use tokio::sync::oneshot;

use super::AppState;
use super::access::JsonBody;
use super::error::{ApiError, ErrorCode};
use super::handlers::valid_session;
use crate::engine::Command;
use crate::model::format_time;
use crate::pins::{self, PinError, Point};
use crate::store::pins::PinRow;
use crate::wire::pin::{Pin, Pins};
use crate::wire::request::NewPin;

/// A pin as the API shows it.
fn view(pin: PinRow) -> Pin {
    Pin {
        name: pin.name,
        seq: pin.seq,
        session: pin.session,
        turn: pin.turn,
        at: pin.at.map(format_time),
        created_at: format_time(pin.created_at),
    }
}

/// `GET /v1/pins`: every pin, oldest point first.
pub async fn list(State(state): State<Arc<AppState>>) -> Result<Json<Pins>, ApiError> {
    let pins = state.read(|conn, _| Ok(pins::list(conn)?)).await?;
    Ok(Json(Pins {
        pins: pins.into_iter().map(view).collect(),
    }))
}

/// `POST /v1/pins`: a pin at the end of a turn, at a time, or now; 201 with the pin.
pub async fn create(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<NewPin>,
) -> Result<(StatusCode, Json<Pin>), ApiError> {
    let Some(name) = body.name.clone() else {
        return Err(ApiError::bad_request(
            ErrorCode::BadRequest,
            "give the pin's \"name\"",
        ));
    };
    if !pins::is_valid_name(&name) {
        return Err(ApiError::bad_request(ErrorCode::BadPin, pins::NAME_RULE));
    }
    let point = point(body)?;
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Pin { name, point, reply })?;
    let pin = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))??;
    Ok((StatusCode::CREATED, Json(view(pin))))
}

/// The point a pin request names: `turn` (with `session`), `at`, or neither (now).
fn point(body: NewPin) -> Result<Point, ApiError> {
    let bad = |message: &str| Err(ApiError::bad_request(ErrorCode::BadRequest, message));
    match (body.turn, body.session, body.at) {
        (Some(_), _, Some(_)) => bad("give \"turn\" (with \"session\") or \"at\", not both"),
        (Some(turn), Some(session), None) => {
            valid_session(&session)?;
            let turn = ApiError::turn_of(turn)?;
            Ok(Point::TurnEnd { session, turn })
        }
        (Some(_), None, None) => bad("a pin at a turn's end needs its \"session\""),
        (None, Some(_), _) => bad("\"session\" goes with \"turn\": the pin is at that turn's end"),
        (None, None, Some(at)) => {
            let at_ms =
                crate::model::parse_time(&at).map_err(|e| ApiError::bad_request(ErrorCode::BadTime, e))?;
            Ok(Point::Time { at_ms })
        }
        (None, None, None) => Ok(Point::Now),
    }
}

/// `DELETE /v1/pins/{name}`: 200 with the pin removed; 404 when there is none.
pub async fn remove(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Pin>, ApiError> {
    let (reply, answer) = oneshot::channel();
    state.worker.send(Command::Unpin { name, reply })?;
    let pin = answer
        .await
        .map_err(|_| ApiError::unavailable("the daemon is shutting down"))??;
    Ok(Json(view(pin)))
}

impl From<PinError> for ApiError {
    fn from(err: PinError) -> Self {
        let message = err.to_string();
        match err {
            PinError::BadName(_) => Self::bad_request(ErrorCode::BadPin, message),
            PinError::Future(_) => Self::bad_request(ErrorCode::BadTime, message),
            PinError::Exists(_) => Self::new(StatusCode::CONFLICT, ErrorCode::PinExists, message),
            PinError::Unknown(_) => Self::not_found(message),
            PinError::Lookup(lookup) => Self::from(lookup),
            PinError::TurnOpen { .. } => Self::new(StatusCode::CONFLICT, ErrorCode::TurnOpen, message),
            PinError::BeforeHistory(_) => Self::new(StatusCode::CONFLICT, ErrorCode::BeforeHistory, message),
            PinError::Expired { .. } => Self::new(StatusCode::GONE, ErrorCode::Expired, message),
            PinError::Store(e) => Self::from(e),
            PinError::Refused(why) => Self::from(why),
        }
    }
}
