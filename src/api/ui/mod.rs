//! Review in the browser: the login door (`door`), the cookie check of `/v1/*`
//! requests from the page, and the page itself, compiled into the binary.

pub mod door;

use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use crate::wire::session::LoginCode;
use door::{COOKIE, SESSION_TTL, constant_time_eq};

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const WORDS_JS: &str = include_str!("assets/words.js");
const DIFF_JS: &str = include_str!("assets/diff.js");
const VIEW_JS: &str = include_str!("assets/view.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// Who made an authenticated `/v1/*` request: a client with the token, or the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Bearer,
    Browser,
}

/// Checks a `/v1/*` request that carries the page's cookie: a live session and its
/// `X-CSRF-Token` (reads too: the cookie alone, which browsers also send to other servers on
/// 127.0.0.1, grants nothing); reads from the daemon's own pages only; a change also with the
/// daemon's own `Origin`.
pub fn check_cookie(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    cookies: &[&str],
) -> Result<(), ApiError> {
    let Some(csrf) = live_session(state, cookies) else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "the browser session is unknown or expired; run `filewatchd ui` to log in again",
        ));
    };
    let site = headers.get("sec-fetch-site").map(HeaderValue::as_bytes);
    if site.is_some_and(|s| s != b"same-origin" && s != b"none") {
        return Err(forbidden("requests from other web pages are refused"));
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    if origin.is_some_and(|o| !own_origin(o, state.port)) {
        return Err(forbidden("requests from other web pages are refused"));
    }
    let given = headers
        .get("x-csrf-token")
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if !constant_time_eq(given, csrf.as_bytes()) {
        return Err(forbidden("a request from the page needs its X-CSRF-Token"));
    }
    if matches!(*method, Method::GET | Method::HEAD) || origin.is_some() {
        return Ok(());
    }
    Err(forbidden("a change from the page needs the daemon's own Origin"))
}

/// Every value of the page's cookie in the `Cookie` headers, in order. A page on another
/// 127.0.0.1 port can set a cookie of the same name (for a longer path, so it is sent first):
/// all are looked at, and any live one is the session (`live_session`).
pub fn cookies_of(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .collect()
}

/// The CSRF token of the first of `cookies` that opens a live session.
fn live_session(state: &AppState, cookies: &[&str]) -> Option<String> {
    cookies.iter().find_map(|cookie| state.ui.csrf_of(cookie))
}

fn own_origin(origin: &str, port: u16) -> bool {
    [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ]
    .iter()
    .any(|own| own.eq_ignore_ascii_case(origin))
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
}

/// `POST /v1/ui/login`: a one-time login code for a client with the token (not the page).
pub async fn login_code(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<LoginCode>, ApiError> {
    if caller != Caller::Bearer {
        return Err(forbidden("only a client with the token can ask for a login code"));
    }
    let code = state.ui.mint_code().map_err(ApiError::internal)?;
    let url = format!("http://127.0.0.1:{}/ui/login?code={code}", state.port);
    Ok(Json(LoginCode { code, url }))
}

#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    code: Option<String>,
}

/// `GET /ui/login?code=C`: a waiting code opens a session (303 to the page with its cookie);
/// any other is refused with a page that says what to do.
pub async fn login(State(state): State<Arc<AppState>>, Query(query): Query<LoginQuery>) -> Response {
    let code = query.code.unwrap_or_default();
    let opened = match state.ui.exchange(&code) {
        Ok(Some(opened)) => opened,
        Ok(None) => return refused("This login link was used already, has expired or is wrong."),
        Err(err) => return ApiError::internal(err).into_response(),
    };
    let cookie = format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        opened.cookie,
        SESSION_TTL.as_secs()
    );
    // The CSRF token rides in the fragment, which the browser never sends to any server: the
    // page keeps it in its own origin's localStorage. A server on another localhost port
    // that receives the cookie (browsers scope cookies by host, not port) cannot learn it.
    let location = format!("/ui/#t={}", opened.csrf);
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    secured(response)
}

/// `GET /ui/`: the page (it holds no secret: its CSRF token came in the login redirect's
/// fragment); without a session, how to get one.
pub async fn index(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if live_session(&state, &cookies_of(&headers)).is_none() {
        return refused("You are not logged in.");
    }
    let page = INDEX;
    secured(
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            page,
        )
            .into_response(),
    )
}

pub async fn app_js() -> Response {
    script(APP_JS)
}

pub async fn words_js() -> Response {
    script(WORDS_JS)
}

pub async fn diff_js() -> Response {
    script(DIFF_JS)
}

pub async fn view_js() -> Response {
    script(VIEW_JS)
}

fn script(body: &'static str) -> Response {
    asset("text/javascript; charset=utf-8", body)
}

pub async fn app_css() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

/// The page's icon, named by its `<link rel="icon">`: without one, every load asked for
/// `/favicon.ico` and logged the 403 it got.
const ICON: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\"><path d=\"M3 8a5 5 0 1 0 1.5-3.5M3 2v3h3\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\"/></svg>";

pub async fn icon() -> Response {
    asset("image/svg+xml", ICON)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    secured((StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// The 403 page of `/ui`: what happened and the command that opens the page.
fn refused(what: &str) -> Response {
    let page = format!(
        "<!doctype html><meta charset=utf-8><title>filewatchd</title>\
         <p>{what}</p><p>Open the review page with <code>filewatchd ui</code> \
         (or <code>filewatchd ui --print-url</code>).</p>"
    );
    let response = (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    );
    secured(response.into_response())
}

/// Every `/ui` answer: no framing, nothing from elsewhere, nothing cached.
pub fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let fixed = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; frame-ancestors 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_origins_are_our_own() {
        assert!(own_origin("http://127.0.0.1:4000", 4000));
        assert!(own_origin("http://localhost:4000", 4000));
        assert!(!own_origin("http://127.0.0.1:4001", 4000));
        assert!(!own_origin("https://127.0.0.1:4000", 4000));
        assert!(!own_origin("http://evil.example", 4000));
        assert!(!own_origin("null", 4000));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; filewatchd_ui=xyz; b=2; filewatchd_ui=abc"),
        );
        assert_eq!(cookies_of(&headers), ["xyz", "abc"]);
        assert!(cookies_of(&HeaderMap::new()).is_empty());
    }
}
