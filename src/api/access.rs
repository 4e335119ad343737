//! Who may talk to the daemon (docs/api.md, "Access"): the bearer token, a loopback
//! `Host` for our port, no browser `Origin`, and JSON bodies only; or the review page's cookie
//! session (`ui`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde::de::DeserializeOwned;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use super::ui::{self, Caller};

/// Refuses requests a web page could have made, then requests without the token. The review
/// page's own requests (`ui`) are the one exception: its assets under `/ui`, and `/v1/*` with
/// its cookie (reads; changes with its Origin and CSRF token). A request with a token is
/// always judged as one.
pub async fn check_access(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let headers = request.headers();
    if !host_allowed(headers, state.port) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "Host must be a loopback address of this daemon",
        ));
    }
    let path = request.uri().path();
    if path == "/ui" || path.starts_with("/ui/") {
        return Ok(ui::secured(next.run(request).await));
    }
    let cookies = ui::cookies_of(headers);
    if !cookies.is_empty() && !headers.contains_key(header::AUTHORIZATION) {
        ui::check_cookie(&state, request.method(), headers, &cookies)?;
        request.extensions_mut().insert(Caller::Browser);
        // What the page reads (file contents an agent wrote, prompts, diffs) is never sniffed
        // into HTML, framed or kept in the browser's cache.
        return Ok(ui::secured(next.run(request).await));
    }
    if from_browser(headers) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "requests from web pages are refused",
        ));
    }
    if !token_matches(headers, &state.token) {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "missing or wrong bearer token; it is in the `token` file of the state directory",
        ));
    }
    request.extensions_mut().insert(Caller::Bearer);
    Ok(next.run(request).await)
}

/// Exact match against literal loopback names only (CVE-2021-22884: no other names).
fn host_allowed(headers: &HeaderMap, port: u16) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
    .iter()
    .any(|allowed| allowed.eq_ignore_ascii_case(host))
}

fn from_browser(headers: &HeaderMap) -> bool {
    let cross_site = headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() != b"none");
    headers.contains_key(header::ORIGIN) || cross_site
}

fn token_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    ui::door::constant_time_eq(given.trim().as_bytes(), token.as_bytes())
}

/// How long a client may take to send a body (headers: `serve::HEADER_TIMEOUT`).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// A JSON body: optional (an empty body is `T::default()`), `application/json` when present,
/// errors as JSON.
pub struct JsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        let announced = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if announced.is_some_and(|length| length > super::BODY_LIMIT as u64) {
            // Said up front: no need to wait for a body that would be refused anyway.
            return Err(too_large());
        }
        let limit = super::serve::test_timeout().unwrap_or(BODY_TIMEOUT);
        let read = tokio::time::timeout(limit, Bytes::from_request(request, state));
        let bytes = read.await.map_err(|_| {
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                ErrorCode::RequestTimeout,
                format!("the body did not arrive within {} ms", limit.as_millis()),
            )
        })?;
        let bytes = bytes.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                ApiError::bad_request(ErrorCode::BadRequest, rejection.body_text())
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType,
                "send the body with Content-Type: application/json",
            ));
        }
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::bad_request(
                ErrorCode::BadJson,
                "the body must be a JSON object, such as {}",
            ));
        }
        serde_json::from_slice(&bytes).map(Self).map_err(|e| {
            ApiError::bad_request(
                ErrorCode::BadJson,
                format!("the body is not valid JSON for this request: {e}"),
            )
        })
    }
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::PayloadTooLarge,
        "the body is over 1 MiB",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().expect("header value"));
        }
        map
    }

    #[test]
    fn only_loopback_hosts_for_our_port_pass() {
        assert!(host_allowed(&headers(&[("host", "127.0.0.1:4000")]), 4000));
        assert!(host_allowed(&headers(&[("host", "localhost:4000")]), 4000));
        assert!(!host_allowed(&headers(&[("host", "localhost6:4000")]), 4000));
        assert!(!host_allowed(&headers(&[("host", "127.0.0.1:4001")]), 4000));
        assert!(!host_allowed(&headers(&[]), 4000));
    }

    #[test]
    fn browser_requests_are_recognised() {
        assert!(from_browser(&headers(&[("origin", "http://evil.example")])));
        assert!(from_browser(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!from_browser(&headers(&[
            ("sec-fetch-site", "none"),
            ("sec-fetch-mode", "cors")
        ])));
    }

    #[test]
    fn token_comparison() {
        assert!(token_matches(&headers(&[("authorization", "Bearer abc")]), "abc"));
        assert!(!token_matches(
            &headers(&[("authorization", "Bearer abd")]),
            "abc"
        ));
        assert!(!token_matches(&headers(&[("authorization", "abc")]), "abc"));
    }
}
