//! The review page's door (docs/api.md "The review page"): one-time login codes, the
//! cookie session, the CSRF token and Origin a change from the page needs, and the headers of
//! every `/ui` answer. Real daemon, raw HTTP over loopback.

use std::time::Duration;

use crate::common::*;
use serde_json::json;

/// A login code from `POST /v1/ui/login`, and the link it came in.
fn login_code(daemon: &Daemon) -> (String, String) {
    let body = expect(200, daemon.post("/v1/ui/login", json!({})));
    let code = body["code"].as_str().expect("code").to_string();
    let url = body["url"].as_str().expect("url").to_string();
    (code, url)
}

fn raw(daemon: &Daemon, method: &str, path: &str, headers: &[(&str, String)], body: Option<&str>) -> Raw {
    let host = daemon.host();
    let mut all: Vec<(&str, &str)> = vec![("Host", &host)];
    all.extend(headers.iter().map(|(n, v)| (*n, v.as_str())));
    daemon.raw(method, path, &all, body.map(str::as_bytes))
}

/// Exchanges a fresh code: the cookie's value and the page's CSRF token.
fn log_in(daemon: &Daemon) -> (String, String) {
    let (code, _) = login_code(daemon);
    let reply = raw(daemon, "GET", &format!("/ui/login?code={code}"), &[], None);
    assert_eq!(reply.status, 303, "login: {:?}", reply.body);
    let set = reply.header("Set-Cookie").expect("a cookie");
    let cookie = set.split(';').next().expect("name=value").to_string();
    let location = reply.header("Location").expect("a redirect");
    let csrf = location
        .strip_prefix("/ui/#t=")
        .unwrap_or_else(|| panic!("the token is not in the fragment: {location}"))
        .to_string();
    assert_eq!(csrf.len(), 64, "{location}");
    let page = raw(daemon, "GET", "/ui/", &[("Cookie", cookie.clone())], None);
    assert_eq!(page.status, 200);
    let html = page.body.as_str().expect("html").to_string();
    assert!(!html.contains(&csrf), "the page itself holds the token: {html}");
    (cookie, csrf)
}

fn assert_no_cors(reply: &Raw) {
    for (name, _) in &reply.headers {
        assert!(!name.starts_with("access-control-"), "CORS header {name}");
    }
}

#[test]
fn a_code_logs_in_once_with_an_exact_cookie() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let (code, url) = login_code(&daemon);
    assert_eq!(code.len(), 64);
    assert!(code.bytes().all(|b| b.is_ascii_hexdigit()), "{code}");
    assert_eq!(
        url,
        format!("http://127.0.0.1:{}/ui/login?code={code}", daemon.port)
    );

    let first = raw(&daemon, "GET", &format!("/ui/login?code={code}"), &[], None);
    assert_eq!(first.status, 303);
    let location = first.header("Location").unwrap_or_default();
    assert!(
        location.starts_with("/ui/#t="),
        "the CSRF token in the fragment: {location}"
    );
    let cookie = first.header("Set-Cookie").expect("cookie");
    let (pair, attributes) = cookie.split_once("; ").expect("attributes");
    let value = pair.strip_prefix("filewatchd_ui=").expect("cookie name");
    assert_eq!(value.len(), 64);
    assert_ne!(value, daemon.token);
    assert_eq!(attributes, "HttpOnly; SameSite=Strict; Path=/; Max-Age=43200");

    let again = raw(&daemon, "GET", &format!("/ui/login?code={code}"), &[], None);
    assert_eq!(again.status, 403);
    assert!(again.header("Set-Cookie").is_none());
    let wrong = raw(
        &daemon,
        "GET",
        &format!("/ui/login?code={}", "0".repeat(64)),
        &[],
        None,
    );
    assert_eq!(wrong.status, 403);
    assert_eq!(raw(&daemon, "GET", "/ui/login", &[], None).status, 403);
}

#[test]
fn a_code_expires() {
    let ws = Workspace::new();
    let daemon = Daemon::start_with_env(&ws, &[], &[("FILEWATCHD_TEST_UI_CODE_TTL_MS", "300")]);
    let minted = std::time::Instant::now();
    let (late, _) = login_code(&daemon);
    let (prompt, _) = login_code(&daemon);
    let used = raw(&daemon, "GET", &format!("/ui/login?code={prompt}"), &[], None);
    assert_eq!(used.status, 303, "a code used at once works");
    // Expiry is about time: wait for the clock (polled, not slept) to pass the code's life.
    poll_until(Duration::from_secs(5), || {
        (minted.elapsed() > Duration::from_millis(600)).then_some(())
    });
    let expired = raw(&daemon, "GET", &format!("/ui/login?code={late}"), &[], None);
    assert_eq!(expired.status, 403, "a code used after its time");
}

#[test]
fn only_a_token_holder_gets_a_code() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let no_token = raw(&daemon, "POST", "/v1/ui/login", &[], None);
    assert_eq!(no_token.status, 401);
    let (cookie, csrf) = log_in(&daemon);
    let from_page = [
        ("Cookie", cookie),
        ("Origin", format!("http://{}", daemon.host())),
        ("X-CSRF-Token", csrf),
    ];
    let reply = raw(&daemon, "POST", "/v1/ui/login", &from_page, None);
    assert_eq!(reply.status, 403, "{:?}", reply.body);
}

#[test]
fn the_page_needs_a_session_and_never_shows_the_token() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let anonymous = raw(&daemon, "GET", "/ui/", &[], None);
    assert_eq!(anonymous.status, 403);
    assert!(anonymous.body.as_str().unwrap_or("").contains("filewatchd ui"));
    let stale = raw(
        &daemon,
        "GET",
        "/ui/",
        &[("Cookie", format!("filewatchd_ui={}", "1".repeat(64)))],
        None,
    );
    assert_eq!(stale.status, 403);

    let (cookie, _) = log_in(&daemon);
    for path in [
        "/ui/",
        "/ui/app.js",
        "/ui/words.js",
        "/ui/diff.js",
        "/ui/view.js",
        "/ui/app.css",
        "/ui/nothing",
        "/ui/login?code=x",
    ] {
        let reply = raw(&daemon, "GET", path, &[("Cookie", cookie.clone())], None);
        assert_eq!(
            reply.header("Content-Security-Policy"),
            Some("default-src 'self'; frame-ancestors 'none'"),
            "{path}"
        );
        assert_eq!(reply.header("X-Frame-Options"), Some("DENY"), "{path}");
        assert_eq!(reply.header("Cache-Control"), Some("no-store"), "{path}");
        let text = reply.body.to_string();
        assert!(!text.contains(&daemon.token), "{path} shows the token");
        assert!(
            reply.headers.iter().all(|(_, v)| !v.contains(&daemon.token)),
            "{path}"
        );
        assert_no_cors(&reply);
    }
    assert_eq!(
        raw(&daemon, "GET", "/ui/nothing", &[("Cookie", cookie)], None).status,
        404
    );
}

/// The page's session, with everything a change of it needs, cannot stop the daemon
/// (`POST /v1/stop` is a token holder's): 403 as JSON, and the daemon runs on.
#[test]
fn the_page_cannot_stop_the_daemon() {
    let ws = Workspace::new();
    let mut daemon = Daemon::start(&ws);
    let (cookie, csrf) = log_in(&daemon);
    let from_page = [
        ("Cookie", cookie),
        ("Origin", format!("http://{}", daemon.host())),
        ("X-CSRF-Token", csrf),
    ];
    let reply = raw(&daemon, "POST", "/v1/stop", &from_page, None);
    assert_error(403, "forbidden", reply.pair());
    daemon.assert_alive();
    expect(200, daemon.get("/v1/status"));
}

#[test]
fn the_cookie_reads_with_its_token_and_a_change_needs_origin_and_csrf() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let (cookie, csrf) = log_in(&daemon);
    let own = format!("http://{}", daemon.host());
    // The cookie alone (which browsers also send to other servers on 127.0.0.1) reads nothing.
    let stolen = raw(
        &daemon,
        "GET",
        "/v1/timeline",
        &[("Cookie", cookie.clone())],
        None,
    );
    assert_eq!(stolen.status, 403, "{:?}", stolen.body);
    let read = raw(
        &daemon,
        "GET",
        "/v1/timeline",
        &[("Cookie", cookie.clone()), ("X-CSRF-Token", csrf.clone())],
        None,
    );
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_no_cors(&read);

    let json = ("Content-Type", "application/json".to_string());
    let body = Some(r#"{"label":"from the page"}"#);
    let path = "/v1/sessions/s1/turns";
    let other_port = format!("http://127.0.0.1:{}", daemon.port.wrapping_add(1));
    let refused: Vec<Vec<(&str, String)>> = vec![
        vec![("Cookie", cookie.clone()), ("Origin", own.clone())],
        vec![
            ("Cookie", cookie.clone()),
            ("Origin", own.clone()),
            ("X-CSRF-Token", "0".repeat(64)),
        ],
        vec![("Cookie", cookie.clone()), ("X-CSRF-Token", csrf.clone())],
        vec![
            ("Cookie", cookie.clone()),
            ("Origin", other_port),
            ("X-CSRF-Token", csrf.clone()),
        ],
        vec![
            ("Cookie", cookie.clone()),
            ("Origin", "http://evil.example".into()),
            ("X-CSRF-Token", csrf.clone()),
        ],
        vec![
            ("Cookie", cookie.clone()),
            ("Origin", own.clone()),
            ("X-CSRF-Token", csrf.clone()),
            ("Sec-Fetch-Site", "same-site".into()),
        ],
    ];
    for mut headers in refused {
        headers.push(json.clone());
        let reply = raw(&daemon, "POST", path, &headers, body);
        assert_error(403, "forbidden", reply.pair());
        assert_no_cors(&reply);
    }
    assert_eq!(
        daemon.get("/v1/sessions/s1/turns").0,
        404,
        "a refused request acted"
    );

    let evil_read = [
        ("Cookie", cookie.clone()),
        ("Origin", "http://evil.example".to_string()),
    ];
    assert_error(
        403,
        "forbidden",
        raw(&daemon, "GET", "/v1/timeline", &evil_read, None).pair(),
    );

    let good = [("Cookie", cookie), ("Origin", own), ("X-CSRF-Token", csrf), json];
    let reply = raw(&daemon, "POST", path, &good, body);
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_no_cors(&reply);
    assert_eq!(daemon.turn_list("s1").len(), 1);
}

#[test]
fn bearer_rules_are_unchanged_beside_a_cookie() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let (cookie, csrf) = log_in(&daemon);
    // A token with a browser Origin is refused even with a good cookie and CSRF token.
    let headers = [
        ("Authorization", daemon.bearer()),
        ("Origin", format!("http://{}", daemon.host())),
        ("Cookie", cookie.clone()),
        ("X-CSRF-Token", csrf),
    ];
    assert_error(
        403,
        "forbidden",
        raw(&daemon, "GET", "/v1/status", &headers, None).pair(),
    );
    // A cookie on a foreign Host is refused before anything else.
    let foreign = [("Host", "evil.example".to_string()), ("Cookie", cookie)];
    let all: Vec<(&str, &str)> = foreign.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert_error(
        403,
        "forbidden",
        daemon.raw("GET", "/v1/timeline", &all, None).pair(),
    );
}

#[test]
fn an_unknown_or_old_cookie_is_401_with_what_to_do() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let stale = [("Cookie", format!("filewatchd_ui={}", "1".repeat(64)))];
    let reply = raw(&daemon, "GET", "/v1/timeline", &stale, None);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("filewatchd ui")
    );
    assert_error(401, "unauthorized", reply.pair());
    // A restart forgets every session: the cookie of the old daemon no longer opens anything.
    let (cookie, _) = log_in(&daemon);
    daemon.stop();
    let daemon = Daemon::start(&ws);
    assert_error(
        401,
        "unauthorized",
        raw(
            &daemon,
            "GET",
            "/v1/timeline",
            &[("Cookie", cookie.clone())],
            None,
        )
        .pair(),
    );
    assert_eq!(
        raw(&daemon, "GET", "/ui/", &[("Cookie", cookie)], None).status,
        403
    );
}

/// Cookie tossing: a page on another 127.0.0.1 port can set `filewatchd_ui=000...; path=/v1`,
/// which the browser sends first, before the real one. The daemon read only the first cookie
/// of that name, so the owner was locked out (401) even after a fresh login; any live one
/// among several now opens the session, and tossed ones alone still open nothing.
#[test]
fn a_tossed_cookie_beside_the_real_one_does_not_lock_the_owner_out() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let (cookie, csrf) = log_in(&daemon);
    let tossed = format!("filewatchd_ui={}", "0".repeat(64));
    let both = format!("{tossed}; {cookie}");
    let reply = raw(
        &daemon,
        "GET",
        "/v1/timeline",
        &[("Cookie", both.clone()), ("X-CSRF-Token", csrf.clone())],
        None,
    );
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let page = raw(&daemon, "GET", "/ui/", &[("Cookie", both)], None);
    assert_eq!(page.status, 200, "{:?}", page.body);
    // Two `Cookie` headers (as HTTP/2 clients send them) count the same.
    let split = raw(
        &daemon,
        "GET",
        "/v1/timeline",
        &[
            ("Cookie", tossed.clone()),
            ("Cookie", cookie),
            ("X-CSRF-Token", csrf.clone()),
        ],
        None,
    );
    assert_eq!(split.status, 200, "{:?}", split.body);

    let only_tossed = format!("{tossed}; filewatchd_ui={}", "1".repeat(64));
    let refused = raw(
        &daemon,
        "GET",
        "/v1/timeline",
        &[("Cookie", only_tossed), ("X-CSRF-Token", csrf)],
        None,
    );
    assert_error(401, "unauthorized", refused.pair());
}

/// A cookie bomb: a page on another 127.0.0.1 port sets many large cookies, which the browser
/// then sends to every port. A fresh login, the page and its reads all still answer, as with
/// a whole browser's jar for the host (180 cookies of 4 KiB).
#[test]
fn a_cookie_bomb_from_another_port_locks_nobody_out() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let bomb: Vec<String> = (0..180)
        .map(|i| format!("bomb{i}={}", "x".repeat(4090)))
        .collect();
    let bomb = bomb.join("; ");
    let (code, _) = login_code(&daemon);
    let login = raw(
        &daemon,
        "GET",
        &format!("/ui/login?code={code}"),
        &[("Cookie", bomb.clone())],
        None,
    );
    assert_eq!(login.status, 303, "{:?}", login.body);
    let set = login.header("Set-Cookie").expect("cookie");
    let cookie = set.split_once("; ").expect("attributes").0.to_string();
    let location = login.header("Location").unwrap_or_default();
    let csrf = location.split_once("#t=").expect("the token").1.to_string();
    let with_bomb = format!("{bomb}; {cookie}");
    let page = raw(&daemon, "GET", "/ui/", &[("Cookie", with_bomb.clone())], None);
    assert_eq!(page.status, 200, "{:?}", page.body);
    let read = raw(
        &daemon,
        "GET",
        "/v1/timeline",
        &[("Cookie", with_bomb), ("X-CSRF-Token", csrf)],
        None,
    );
    assert_eq!(read.status, 200, "{:?}", read.body);
}
