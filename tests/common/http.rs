//! HTTP to the daemon: requests through ureq (the well-behaved client), raw requests over TCP
//! where the test chooses every header, and the checks of a `(status, body)` answer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use super::{Daemon, HTTP_TIMEOUT};

impl Daemon {
    pub fn get(&self, path: &str) -> (u16, Value) {
        let resp = self
            .agent
            .get(format!("{}{path}", self.url))
            .header("Authorization", self.bearer())
            .call();
        reply(resp, "GET", path)
    }

    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let resp = self
            .agent
            .post(format!("{}{path}", self.url))
            .header("Authorization", self.bearer())
            .send_json(body);
        reply(resp, "POST", path)
    }

    pub fn put(&self, path: &str, body: Value) -> (u16, Value) {
        let resp = self
            .agent
            .put(format!("{}{path}", self.url))
            .header("Authorization", self.bearer())
            .send_json(body);
        reply(resp, "PUT", path)
    }

    pub fn delete(&self, path: &str) -> (u16, Value) {
        let resp = self
            .agent
            .delete(format!("{}{path}", self.url))
            .header("Authorization", self.bearer())
            .call();
        reply(resp, "DELETE", path)
    }

    pub fn post_empty(&self, path: &str) -> (u16, Value) {
        let resp = self
            .agent
            .post(format!("{}{path}", self.url))
            .header("Authorization", self.bearer())
            .send_empty();
        reply(resp, "POST", path)
    }

    /// `GET` whose answer is raw bytes (`/v1/content`): the status and the body exactly as sent.
    pub fn get_bytes(&self, path: &str) -> (u16, Vec<u8>) {
        let resp = self
            .agent
            .get(format!("{}{path}", self.url))
            .header("Authorization", self.bearer())
            .call();
        let mut resp = resp.unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = resp.status().as_u16();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_vec()
            .unwrap_or_else(|e| panic!("GET {path}: reading the body: {e}"));
        (status, bytes)
    }

    /// Sends a POST from another thread and returns at once; the receiver gets the answer, or
    /// `None` if the connection failed (the daemon was killed while the request was pending).
    pub fn post_detached(&self, path: &str, body: Value) -> std::sync::mpsc::Receiver<Option<(u16, Value)>> {
        let (tx, rx) = std::sync::mpsc::channel();
        let url = format!("{}{path}", self.url);
        let bearer = self.bearer();
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(600)))
                .build()
                .into();
            let answer = agent
                .post(&url)
                .header("Authorization", bearer)
                .send_json(body)
                .ok()
                .and_then(|mut resp| {
                    let status = resp.status().as_u16();
                    let text = resp.body_mut().read_to_string().ok()?;
                    Some((status, parse_body(&text)))
                });
            let _ = tx.send(answer);
        });
        rx
    }

    /// Sends exactly the given request line and headers (plus `Connection: close` and, with a
    /// body, `Content-Length`) over a plain TCP stream.
    pub fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Raw {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(HTTP_TIMEOUT)).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\n");
        for (name, value) in headers {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        req.push_str("Connection: close\r\n");
        if let Some(body) = body {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        stream.write_all(&bytes).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        Raw::parse(&answer)
    }
}

fn reply(
    resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    method: &str,
    path: &str,
) -> (u16, Value) {
    let mut resp = resp.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(1 << 30)
        .read_to_string()
        .unwrap_or_else(|e| panic!("{method} {path}: reading the body: {e}"));
    (status, parse_body(&text))
}

/// JSON if the body is JSON; the text as a JSON string otherwise (so assertions show it).
fn parse_body(text: &str) -> Value {
    if text.is_empty() {
        return Value::Null;
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Asserts the status and returns the body.
#[track_caller]
pub fn expect(status: u16, (got, body): (u16, Value)) -> Value {
    assert_eq!(got, status, "unexpected status; body: {body:#}");
    body
}

/// Asserts an error answer: the status and `{"error":{"code","message"}}` with that code.
#[track_caller]
pub fn assert_error(status: u16, code: &str, (got, body): (u16, Value)) {
    assert_eq!(got, status, "unexpected status; body: {body:#}");
    assert_eq!(body["error"]["code"], code, "error code; body: {body:#}");
    let message = body["error"]["message"].as_str();
    assert!(
        message.is_some_and(|m| !m.is_empty()),
        "error message; body: {body:#}"
    );
}

/// A response read off a raw TCP stream.
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Raw {
    fn parse(answer: &[u8]) -> Raw {
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(answer)));
        let head = String::from_utf8_lossy(&answer[..split]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut body = answer[split + 4..].to_vec();
        if headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
        {
            body = dechunk(&body);
        }
        Raw {
            status,
            headers,
            body: parse_body(&String::from_utf8_lossy(&body)),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// As `(status, body)`, for `expect` and `assert_error`.
    pub fn pair(&self) -> (u16, Value) {
        (self.status, self.body.clone())
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}

/// Percent-encodes everything but unreserved characters (for query values).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
