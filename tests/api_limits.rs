//! The HTTP server's limits: stalled or oversized requests and too many connections
//! never tie the daemon up. The timeouts are shortened with `FILEWATCHD_TEST_HTTP_TIMEOUT_MS`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::*;

/// The server's connection cap (src/api/serve.rs).
const MAX_CONNECTIONS: usize = 64;
/// How long a test waits for the server to act before failing.
const DEADLINE: Duration = Duration::from_secs(30);

fn connect(daemon: &Daemon) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect to the daemon");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("set a read timeout");
    stream
}

/// Everything the server sends until it closes the connection; fails if it keeps it open.
fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut reply = Vec::new();
    match stream.read_to_end(&mut reply) {
        Ok(_) => String::from_utf8_lossy(&reply).into_owned(),
        // A reset is a close too.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            String::from_utf8_lossy(&reply).into_owned()
        }
        Err(e) => panic!("the server kept the connection open ({e}); got so far: {reply:?}"),
    }
}

fn start_with_short_timeouts(ws: &Workspace) -> Daemon {
    Daemon::start_with_env(ws, &[], &[("FILEWATCHD_TEST_HTTP_TIMEOUT_MS", "500")])
}

#[test]
fn stalled_headers_are_disconnected() {
    let ws = Workspace::new();
    let daemon = start_with_short_timeouts(&ws);
    let mut stream = connect(&daemon);
    let partial = format!(
        "GET /v1/status HTTP/1.1\r\nHost: {}\r\nAuthorization: ",
        daemon.host()
    );
    stream
        .write_all(partial.as_bytes())
        .expect("send part of the headers");

    let reply = read_until_closed(&mut stream);
    assert!(!reply.contains("200 OK"), "a stalled request was served: {reply}");
    // The daemon still serves everyone else.
    assert_eq!(daemon.get("/v1/status").0, 200);
}

#[test]
fn stalled_body_gets_408_as_json() {
    let ws = Workspace::new();
    let daemon = start_with_short_timeouts(&ws);
    let mut stream = connect(&daemon);
    let head = format!(
        "POST /v1/sessions/s/turns HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"label\":",
        daemon.host(),
        daemon.bearer()
    );
    stream
        .write_all(head.as_bytes())
        .expect("send the head and part of the body");

    let mut reply = vec![0u8; 4096];
    let n = stream.read(&mut reply).expect("an answer before the deadline");
    let reply = String::from_utf8_lossy(&reply[..n]);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains("\"code\":\"request_timeout\""), "{reply}");
    // Nothing was started.
    let (status, sessions) = daemon.get("/v1/sessions");
    assert_eq!(status, 200);
    assert_eq!(
        sessions["sessions"].as_array().map(Vec::len),
        Some(0),
        "{sessions}"
    );
}

#[test]
fn oversized_headers_are_refused() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let mut stream = connect(&daemon);
    let request = format!(
        "GET /v1/status HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nX-Padding: {}\r\n\r\n",
        daemon.host(),
        daemon.bearer(),
        "a".repeat(2 << 20)
    );
    // The server may close before it has read everything: a failed write is fine.
    let _ = stream.write_all(request.as_bytes());

    let reply = read_until_closed(&mut stream);
    assert!(reply.is_empty() || reply.starts_with("HTTP/1.1 431"), "{reply}");
    assert!(!reply.contains("200 OK"), "{reply}");
    assert_eq!(daemon.get("/v1/status").0, 200);
}

#[test]
fn connections_over_the_cap_are_closed_and_slots_come_back() {
    let ws = Workspace::new();
    // Idle connections must not time out while the test holds them, however slow the machine.
    let daemon = Daemon::start_with_env(&ws, &[], &[("FILEWATCHD_TEST_HTTP_TIMEOUT_MS", "600000")]);
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS).map(|_| connect(&daemon)).collect();

    // Accepted, then closed at once: the cap is reached.
    let mut extra = connect(&daemon);
    let request = format!(
        "GET /v1/status HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\r\n",
        daemon.host(),
        daemon.bearer()
    );
    let _ = extra.write_all(request.as_bytes());
    let reply = read_until_closed(&mut extra);
    assert!(
        !reply.contains("200 OK"),
        "a connection over the cap was served: {reply}"
    );

    drop(idle);
    let start = Instant::now();
    loop {
        let mut stream = connect(&daemon);
        let _ = stream.write_all(request.as_bytes());
        let mut first = [0u8; 12];
        if stream.read_exact(&mut first).is_ok() && first.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "the freed slots never came back");
        std::thread::yield_now();
    }
}

#[test]
fn deeply_nested_json_is_400() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let body = format!(r#"{{"label":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
    let headers = [
        ("Host", daemon.host()),
        ("Authorization", daemon.bearer()),
        ("Content-Type", "application/json".to_string()),
    ];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let reply = daemon.raw("POST", "/v1/sessions/s/turns", &headers, Some(body.as_bytes()));
    assert_error(400, "bad_json", reply.pair());
    assert_eq!(daemon.get("/v1/status").0, 200);
}

#[test]
fn a_body_announced_over_the_limit_is_413_at_once() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let headers = [
        ("Host", daemon.host()),
        ("Authorization", daemon.bearer()),
        ("Content-Type", "application/json".to_string()),
        ("Content-Length", "99999999999".to_string()),
    ];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    // No body follows: the answer cannot wait for it (that would be 408 after the timeout).
    let reply = daemon.raw("POST", "/v1/sessions/s/turns", &headers, None);
    assert_error(413, "payload_too_large", reply.pair());
    assert_eq!(daemon.get("/v1/status").0, 200);
}
