//! Test harness: a workspace in a temp dir, the real daemon binary, and its HTTP API.
//!
//! Tests talk only to the binary (`CARGO_BIN_EXE_filewatchd`) over real HTTP. They never
//! sleep to synchronise: a turn marker is the barrier, and anything else is polled with a
//! deadline.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_filewatchd");
const START_DEADLINE: Duration = Duration::from_secs(30);
const HTTP_TIMEOUT: Duration = Duration::from_secs(120);

/// Environment variables of the user that would point the binary somewhere else.
const FOREIGN_ENV: &[&str] = &[
    "FILEWATCHD_URL",
    "FILEWATCHD_TOKEN",
    "FILEWATCHD_SESSION",
    "XDG_STATE_HOME",
];

// ---------------------------------------------------------------------------------------------
// Workspace

/// A workspace root, its state dir and a `FILEWATCHD_HOME`, each in its own temp dir.
pub struct Workspace {
    root_dir: tempfile::TempDir,
    state_dir: tempfile::TempDir,
    home_dir: tempfile::TempDir,
    root: PathBuf,
}

impl Workspace {
    pub fn new() -> Workspace {
        let root_dir = tempfile::Builder::new().prefix("fwd-root-").tempdir().unwrap();
        let state_dir = tempfile::Builder::new().prefix("fwd-state-").tempdir().unwrap();
        let home_dir = tempfile::Builder::new().prefix("fwd-home-").tempdir().unwrap();
        let root = root_dir.path().canonicalize().unwrap();
        Workspace {
            root_dir,
            state_dir,
            home_dir,
            root,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn state_dir(&self) -> &Path {
        self.state_dir.path()
    }

    /// The `FILEWATCHD_HOME` every process of this workspace gets.
    pub fn home(&self) -> &Path {
        self.home_dir.path()
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file (creating its parent directories); the write has completed on return.
    pub fn write(&self, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    pub fn remove(&self, rel: impl AsRef<Path>) {
        std::fs::remove_file(self.path(rel)).unwrap();
    }

    /// Runs `bash -c script` in the root and asserts that it succeeded.
    pub fn sh(&self, script: &str) {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("set -euo pipefail\n{script}"))
            .current_dir(&self.root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "script failed ({}):\n{script}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A `filewatchd` command with this workspace's environment (and none of the user's).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(BIN);
        for var in FOREIGN_ENV {
            cmd.env_remove(var);
        }
        cmd.env("FILEWATCHD_HOME", self.home());
        cmd.current_dir(&self.root);
        cmd
    }

    /// Runs a CLI command in `cwd` (relative to the root) and returns its output.
    pub fn cli(&self, cwd: impl AsRef<Path>, args: &[&str]) -> Output {
        let mut cmd = self.command();
        cmd.current_dir(self.path(cwd)).args(args).stdin(Stdio::null());
        run_with_deadline(cmd, HTTP_TIMEOUT)
    }

    /// `serve --root ROOT --state-dir STATE ARGS...` that is expected to exit on its own
    /// (a refused start); returns its exit status and stderr.
    pub fn serve_expecting_exit(&self, args: &[&str]) -> (ExitStatus, String) {
        let mut cmd = self.command();
        cmd.args(self.serve_args()).args(args).stdin(Stdio::null());
        let out = run_with_deadline(cmd, START_DEADLINE);
        (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
    }

    fn serve_args(&self) -> Vec<&OsStr> {
        vec![
            OsStr::new("serve"),
            OsStr::new("--root"),
            self.root.as_os_str(),
            OsStr::new("--state-dir"),
            self.state_dir().as_os_str(),
        ]
    }
}

/// Runs a command to completion; kills it and panics if it outlives the deadline.
fn run_with_deadline(mut cmd: Command, deadline: Duration) -> Output {
    let out_file = tempfile::tempfile().unwrap();
    let err_file = tempfile::tempfile().unwrap();
    cmd.stdout(out_file.try_clone().unwrap())
        .stderr(err_file.try_clone().unwrap());
    let mut child = cmd.spawn().unwrap();
    let until = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            child.kill().ok();
            child.wait().ok();
            panic!(
                "{cmd:?} still running after {deadline:?}; stderr: {}",
                read_all(&err_file)
            );
        }
        std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
    };
    Output {
        status,
        stdout: read_all(&out_file).into_bytes(),
        stderr: read_all(&err_file).into_bytes(),
    }
}

fn read_all(file: &std::fs::File) -> String {
    use std::io::Seek;
    let mut file = file.try_clone().unwrap();
    file.rewind().unwrap();
    let mut buf = Vec::new();
    file.read_to_end(&mut buf).unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Daemon

/// A running `filewatchd serve`; killed when dropped.
pub struct Daemon {
    child: Child,
    stderr: std::fs::File,
    pub url: String,
    pub token: String,
    pub port: u16,
    pub pid: u32,
    pub state_dir: PathBuf,
    agent: ureq::Agent,
}

/// Where a starting daemon's `daemon.json` will appear.
enum StateLocation {
    Dir(PathBuf),
    /// Somewhere under `$FILEWATCHD_HOME/projects/`.
    Home(PathBuf),
}

impl Daemon {
    /// `serve --root ROOT --state-dir STATE`, waits until it answers.
    pub fn start(ws: &Workspace) -> Daemon {
        Daemon::start_with(ws, &[])
    }

    /// `serve --root ROOT --state-dir STATE ARGS...`, waits until it answers.
    pub fn start_with(ws: &Workspace, args: &[&str]) -> Daemon {
        let mut cmd = ws.command();
        cmd.args(ws.serve_args()).args(args);
        Daemon::spawn(cmd, StateLocation::Dir(ws.state_dir().to_path_buf()))
    }

    /// `serve --root ROOT` with no `--state-dir`: the state goes under `$FILEWATCHD_HOME`.
    pub fn start_in_home(ws: &Workspace) -> Daemon {
        let mut cmd = ws.command();
        cmd.arg("serve").arg("--root").arg(ws.root());
        Daemon::spawn(cmd, StateLocation::Home(ws.home().join("projects")))
    }

    fn spawn(mut cmd: Command, location: StateLocation) -> Daemon {
        let stderr = tempfile::tempfile().unwrap();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr.try_clone().unwrap());
        let mut child = cmd.spawn().unwrap();
        let pid = child.id();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(HTTP_TIMEOUT))
            .build()
            .into();
        let until = Instant::now() + START_DEADLINE;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "daemon exited during start-up ({status}); stderr:\n{}",
                    read_all(&stderr)
                );
            }
            if let Some(daemon) = Daemon::try_connect(&location, pid, &agent) {
                let (url, token, state_dir) = daemon;
                let port = url
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .trim_end_matches('/')
                    .parse()
                    .unwrap();
                return Daemon {
                    child,
                    stderr,
                    url,
                    token,
                    port,
                    pid,
                    state_dir,
                    agent,
                };
            }
            if Instant::now() > until {
                child.kill().ok();
                child.wait().ok();
                panic!(
                    "daemon not ready after {START_DEADLINE:?}; stderr:\n{}",
                    read_all(&stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
        }
    }

    /// Ready = `daemon.json` names this process and `GET /v1/status` with the token is 200.
    fn try_connect(
        location: &StateLocation,
        pid: u32,
        agent: &ureq::Agent,
    ) -> Option<(String, String, PathBuf)> {
        let state_dir = match location {
            StateLocation::Dir(dir) => dir.clone(),
            StateLocation::Home(projects) => std::fs::read_dir(projects)
                .ok()?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .find(|p| p.join("daemon.json").exists())?,
        };
        let info: Value = serde_json::from_slice(&std::fs::read(state_dir.join("daemon.json")).ok()?).ok()?;
        if info["pid"].as_u64() != Some(pid as u64) {
            return None; // a stale file from an earlier daemon
        }
        let url = info["url"].as_str()?.trim_end_matches('/').to_string();
        let token = std::fs::read_to_string(state_dir.join("token"))
            .ok()?
            .trim()
            .to_string();
        let resp = agent
            .get(format!("{url}/v1/status"))
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .ok()?;
        (resp.status().as_u16() == 200).then_some((url, token, state_dir))
    }

    /// What the daemon wrote to stderr so far.
    pub fn stderr(&self) -> String {
        read_all(&self.stderr)
    }

    /// `kill -9`, and waits until the process is gone.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Asserts the process is still running.
    pub fn assert_alive(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("daemon died ({status}); stderr:\n{}", self.stderr());
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    // -- HTTP through ureq (the well-behaved client) --

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

    pub fn post_empty(&self, path: &str) -> (u16, Value) {
        let resp = self
            .agent
            .post(format!("{}{path}", self.url))
            .header("Authorization", self.bearer())
            .send_empty();
        reply(resp, "POST", path)
    }

    // -- The vocabulary of the tests --

    pub fn status(&self) -> Value {
        expect(200, self.get("/v1/status"))
    }

    /// Starts a turn of `session` (201) and returns the answer.
    pub fn turn_start(&self, session: &str, label: &str) -> Value {
        let path = format!("/v1/sessions/{session}/turns");
        expect(201, self.post(&path, json!({ "label": label })))
    }

    /// Ends the `current` turn of `session` (200) and returns the turn with its changes.
    pub fn turn_end(&self, session: &str) -> Value {
        let path = format!("/v1/sessions/{session}/turns/current/end");
        expect(200, self.post_empty(&path))
    }

    /// `GET` one turn (200), with unified diffs if `diff`.
    pub fn turn(&self, session: &str, turn: u64, diff: bool) -> Value {
        let query = if diff { "?diff=true" } else { "" };
        expect(
            200,
            self.get(&format!("/v1/sessions/{session}/turns/{turn}{query}")),
        )
    }

    /// `GET /v1/history?path=P` (200).
    pub fn history(&self, path: &str) -> Value {
        expect(200, self.history_reply(path))
    }

    pub fn history_reply(&self, path: &str) -> (u16, Value) {
        self.get(&format!("/v1/history?path={}", percent_encode(path)))
    }

    // -- Raw HTTP: the test chooses every header --

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

impl Drop for Daemon {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
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

// ---------------------------------------------------------------------------------------------
// Reading turns and histories

/// The `changes` of a turn.
#[track_caller]
pub fn changes(turn: &Value) -> &Vec<Value> {
    turn["changes"]
        .as_array()
        .unwrap_or_else(|| panic!("turn without changes: {turn:#}"))
}

/// The change of `path` in a turn; panics (listing what is there) if it is absent.
#[track_caller]
pub fn change<'a>(turn: &'a Value, path: &str) -> &'a Value {
    changes(turn)
        .iter()
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("{path} not among the changes {:?}", changed_paths(turn)))
}

/// Every changed path of a turn.
pub fn changed_paths(turn: &Value) -> BTreeSet<String> {
    changes(turn)
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

/// The changed paths of a turn that are not directories.
pub fn changed_files(turn: &Value) -> BTreeSet<String> {
    changes(turn)
        .iter()
        .filter(|c| c["kind"] != "dir")
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

/// The recorded versions of a history answer.
#[track_caller]
pub fn versions(history: &Value) -> &Vec<Value> {
    history["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("history without versions: {history:#}"))
}

/// The latest recorded version of a history answer.
#[track_caller]
pub fn latest(history: &Value) -> &Value {
    versions(history)
        .iter()
        .max_by_key(|v| v["seq"].as_u64())
        .unwrap_or_else(|| panic!("history with no versions: {history:#}"))
}

/// A set of strings, for comparing path sets.
pub fn set<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> BTreeSet<String> {
    items.into_iter().map(Into::into).collect()
}

/// The API form of a file name that may not be valid UTF-8: each invalid byte as `\xNN`.
pub fn api_name(name: &OsStr) -> String {
    let mut out = String::new();
    for chunk in name.as_bytes().utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}
