//! Access control and error answers of the HTTP API (docs/api.md, "Access" and "Errors").

use crate::common::*;

/// Headers of a well-formed request from a local client.
fn good(daemon: &Daemon) -> Vec<(&'static str, String)> {
    vec![("Host", daemon.host()), ("Authorization", daemon.bearer())]
}

fn get(daemon: &Daemon, headers: &[(&str, String)]) -> Raw {
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    daemon.raw("GET", "/v1/status", &headers, None)
}

#[test]
fn well_formed_raw_request_is_served() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    expect(200, get(&daemon, &good(&daemon)).pair());
    let localhost = [
        ("Host", format!("localhost:{}", daemon.port)),
        ("Authorization", daemon.bearer()),
    ];
    expect(200, get(&daemon, &localhost).pair());
}

#[test]
fn missing_or_wrong_token_is_401() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    assert_error(
        401,
        "unauthorized",
        get(&daemon, &[("Host", daemon.host())]).pair(),
    );
    let wrong = [
        ("Host", daemon.host()),
        ("Authorization", format!("Bearer {}", "0".repeat(64))),
    ];
    assert_error(401, "unauthorized", get(&daemon, &wrong).pair());
    let not_bearer = [("Host", daemon.host()), ("Authorization", daemon.token.clone())];
    assert_error(401, "unauthorized", get(&daemon, &not_bearer).pair());
}

#[test]
fn browser_origin_is_403_without_cors_headers() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    let mut headers = good(&daemon);
    headers.push(("Origin", "http://evil.example".into()));
    let reply = get(&daemon, &headers);
    assert_error(403, "forbidden", reply.pair());
    assert_eq!(reply.header("Access-Control-Allow-Origin"), None);

    let mut headers = good(&daemon);
    headers.push(("Sec-Fetch-Site", "cross-site".into()));
    assert_error(403, "forbidden", get(&daemon, &headers).pair());
}

#[test]
fn foreign_host_is_403() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    for host in [format!("evil.example:{}", daemon.port), "127.0.0.1:1".to_string()] {
        let headers = [("Host", host), ("Authorization", daemon.bearer())];
        assert_error(403, "forbidden", get(&daemon, &headers).pair());
    }
}

#[test]
fn bad_input_is_400() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let (host, bearer) = (daemon.host(), daemon.bearer());
    let json = [
        ("Host", host.as_str()),
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];

    let reply = daemon.raw("POST", "/v1/sessions/s1/turns", &json, Some(b"{not json"));
    assert_error(400, "bad_json", reply.pair());
    // JSON that is not an object is named as such, not by the server's own types.
    for body in [&b"[]"[..], b" null", b"\"label\""] {
        let reply = daemon.raw("POST", "/v1/sessions/s1/turns", &json, Some(body));
        assert_eq!(
            reply.body["error"]["message"],
            "the body must be a JSON object, such as {}",
            "{}",
            String::from_utf8_lossy(body)
        );
        assert_error(400, "bad_json", reply.pair());
    }
    let reply = daemon.raw("POST", "/v1/sessions/bad!name/turns", &json, Some(b"{}"));
    assert_error(400, "bad_session", reply.pair());
    let too_long = "s".repeat(129);
    assert_error(
        400,
        "bad_session",
        daemon.post(&format!("/v1/sessions/{too_long}/turns"), serde_json::json!({})),
    );
}

#[test]
fn body_without_json_content_type_is_415() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let (host, bearer) = (daemon.host(), daemon.bearer());
    let headers = [("Host", host.as_str()), ("Authorization", bearer.as_str())];

    let reply = daemon.raw(
        "POST",
        "/v1/sessions/s1/turns",
        &headers,
        Some(b"{\"label\":\"x\"}"),
    );
    assert_error(415, "unsupported_media_type", reply.pair());
}

#[test]
fn unknown_session_turn_or_route_is_404() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "the only turn");

    assert_error(404, "not_found", daemon.get("/v1/sessions/nobody/turns"));
    assert_error(404, "not_found", daemon.get("/v1/sessions/nobody/turns/1"));
    assert_error(404, "not_found", daemon.get("/v1/sessions/s1/turns/99"));
    assert_error(404, "not_found", daemon.get("/v1/sessions/s1/turns/no-such-ref"));
    assert_error(
        404,
        "not_found",
        daemon.post_empty("/v1/sessions/s1/turns/99/end"),
    );
    assert_error(
        404,
        "not_found",
        daemon.post_empty("/v1/sessions/nobody/turns/current/end"),
    );
    assert_error(404, "not_found", daemon.get("/v1/no-such-route"));
    assert_error(404, "not_found", daemon.history_reply("never-existed.txt"));
}

#[test]
fn ending_a_closed_turn_is_409() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let turn = daemon.turn_start("s1", "one")["turn"].as_u64().unwrap();
    daemon.turn_end("s1");

    assert_error(
        409,
        "turn_not_open",
        daemon.post_empty(&format!("/v1/sessions/s1/turns/{turn}/end")),
    );
}

#[test]
fn turn_start_answers_as_documented() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    let body = serde_json::json!({"ref": "r-1", "label": "add login form"});
    let first = expect(201, daemon.post("/v1/sessions/s1/turns", body));
    assert_eq!(
        (&first["session"], &first["turn"]),
        (&"s1".into(), &1.into()),
        "{first}"
    );
    assert_eq!(
        (&first["ref"], &first["label"]),
        (&"r-1".into(), &"add login form".into())
    );
    assert!(first["start_seq"].is_u64() && first["ended"].is_null(), "{first}");

    // A start while a turn is open ends the open one and says so.
    let second = daemon.turn_start("s1", "next");
    assert_eq!(second["turn"], 2);
    assert_eq!(second["ended"]["turn"], 1, "{second}");
    assert_eq!(daemon.turn("s1", 1, false)["ref"], "r-1");
    assert_eq!(daemon.get("/v1/sessions/s1/turns/r-1").0, 200);
}

/// Session names made only of dots (`.`, `..`) were accepted (201), but a browser normalises
/// them out of the URL, so their turns could never be reviewed: refused with 400
/// `bad_session` saying why. Dots beside anything else stay fine.
#[test]
fn session_names_of_dots_only_are_refused() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let (host, bearer) = (daemon.host(), daemon.bearer());
    let json = [
        ("Host", host.as_str()),
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    for name in [".", "..", "..."] {
        let path = format!("/v1/sessions/{name}/turns");
        let reply = daemon.raw("POST", &path, &json, Some(b"{}"));
        let message = reply.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains("dots"), "{name}: {message}");
        assert_error(400, "bad_session", reply.pair());
    }
    assert_error(400, "bad_session", daemon.fork("s", "..", serde_json::json!(1)));
    for fine in [".hidden", "a.b", "v1.2..3"] {
        let path = format!("/v1/sessions/{fine}/turns");
        assert_eq!(
            daemon.raw("POST", &path, &json, Some(b"{}")).status,
            201,
            "{fine}"
        );
    }
}
