//! Test harness: a workspace in a temp dir, the real daemon binary, and its HTTP API.
//!
//! Tests talk only to the binary (`CARGO_BIN_EXE_filewatchd`) over real HTTP. They never
//! sleep to synchronise: a turn marker is the barrier, and anything else is polled with a
//! deadline.
#![allow(dead_code)]

pub mod install;

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

    /// Runs `serve --root root` with the state directory in the home, expecting it to exit.
    pub fn serve_in_home_expecting_exit(&self, root: &Path) -> (ExitStatus, String) {
        let mut cmd = self.command();
        cmd.arg("serve").arg("--root").arg(root).stdin(Stdio::null());
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
            // The FILEWATCHD_TEST_* variables some tests set are honoured only with it.
            OsStr::new("--test-knobs"),
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
    /// This directory as the daemon's own mount namespace shows it (`/proc/PID/root/...`).
    Namespaced(PathBuf),
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
        Daemon::start_in_home_at(ws, ws.root())
    }

    /// As `start_in_home`, watching `root` (the workspace or a directory inside it).
    pub fn start_in_home_at(ws: &Workspace, root: &Path) -> Daemon {
        let mut cmd = ws.command();
        cmd.arg("serve").arg("--root").arg(root);
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
        let info_of = |dir: &Path| -> Option<Value> {
            let info: Value = serde_json::from_slice(&std::fs::read(dir.join("daemon.json")).ok()?).ok()?;
            // Not a stale file from an earlier daemon.
            (info["pid"].as_u64() == Some(pid as u64)).then_some(info)
        };
        let (state_dir, info) = match location {
            StateLocation::Dir(dir) => (dir.clone(), info_of(dir)?),
            StateLocation::Namespaced(dir) => {
                let seen = Path::new("/proc")
                    .join(pid.to_string())
                    .join("root")
                    .join(dir.strip_prefix("/").ok()?);
                let info = info_of(&seen)?;
                (seen, info)
            }
            StateLocation::Home(projects) => std::fs::read_dir(projects)
                .ok()?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .find_map(|dir| info_of(&dir).map(|info| (dir, info)))?,
        };
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

    /// `kill -TERM` (a clean stop), and waits until the process has exited.
    pub fn stop(mut self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM {} failed", self.pid);
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "daemon exited with {status}; stderr:\n{}",
            self.stderr()
        );
    }

    /// `kill -9`, and waits until the process is gone.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Waits until the process exits on its own; `None` if it still runs after `deadline`.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + deadline;
        while Instant::now() < until {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
        }
        None
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

// ---------------------------------------------------------------------------------------------
// Rollback: tree snapshots, stat marks, and the rollback vocabulary

/// One entry of a tree snapshot: what a rollback must restore exactly (G3).
#[derive(Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File { bytes: Vec<u8>, exec: bool },
    Symlink(Vec<u8>),
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Dir => write!(f, "dir"),
            Entry::File { bytes, exec } => {
                let head = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).into_owned();
                let x = if *exec { " +x" } else { "" };
                write!(f, "file {} bytes{x} {head:?}", bytes.len())
            }
            Entry::Symlink(target) => write!(f, "symlink -> {:?}", String::from_utf8_lossy(target)),
        }
    }
}

/// Every entry beneath a root (the root itself excluded), symlinks not followed, keyed by the
/// API form of its relative path.
pub type Tree = std::collections::BTreeMap<String, Entry>;

/// Snapshots the tree beneath `root`: kind, bytes, executable bit, symlink target.
pub fn snapshot(root: &Path) -> Tree {
    let mut tree = Tree::new();
    walk_tree(root, root, &mut |rel, path, meta| {
        use std::os::unix::ffi::OsStringExt;
        use std::os::unix::fs::PermissionsExt;
        let kind = meta.file_type();
        let entry = if kind.is_symlink() {
            Entry::Symlink(std::fs::read_link(path).unwrap().into_os_string().into_vec())
        } else if kind.is_dir() {
            Entry::Dir
        } else {
            Entry::File {
                bytes: std::fs::read(path).unwrap(),
                exec: meta.permissions().mode() & 0o111 != 0,
            }
        };
        tree.insert(rel, entry);
    });
    tree
}

/// What identifies one on-disk file or symlink object and its last write: a rewrite (new inode,
/// new mtime) or a chmod (new ctime) changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

/// The marks of every file and symlink beneath `root` (directories change whenever an entry
/// is added to them, so they are left out).
pub fn marks(root: &Path) -> std::collections::BTreeMap<String, Mark> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    walk_tree(root, root, &mut |rel, _, meta| {
        if meta.is_dir() {
            return;
        }
        let mark = Mark {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
            ctime_ns: meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128,
        };
        out.insert(rel, mark);
    });
    out
}

fn walk_tree(root: &Path, dir: &Path, visit: &mut dyn FnMut(String, &Path, &std::fs::Metadata)) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let rel = api_name(path.strip_prefix(root).unwrap().as_os_str());
        visit(rel, &path, &meta);
        if meta.is_dir() {
            walk_tree(root, &path, visit);
        }
    }
}

/// Asserts two snapshots are equal, listing only the entries that differ.
#[track_caller]
pub fn assert_tree_eq(expected: &Tree, actual: &Tree, what: &str) {
    let mut diffs = Vec::new();
    for (path, want) in expected {
        match actual.get(path) {
            None => diffs.push(format!("  missing  {path}: want {want:?}")),
            Some(got) if got != want => diffs.push(format!("  differs  {path}: want {want:?}, got {got:?}")),
            Some(_) => {}
        }
    }
    for (path, got) in actual {
        if !expected.contains_key(path) {
            diffs.push(format!("  extra    {path}: {got:?}"));
        }
    }
    if diffs.is_empty() {
        return;
    }
    let shown = diffs.len().min(40);
    panic!(
        "{what}: {} entries differ (first {shown}):\n{}",
        diffs.len(),
        diffs[..shown].join("\n")
    );
}

impl Daemon {
    /// `serve --root ROOT --state-dir STATE ARGS...` with extra environment variables (e.g. the
    /// test-only `FILEWATCHD_TEST_PAUSE_AFTER`), waits until it answers.
    pub fn start_with_env(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut cmd = ws.command();
        cmd.args(ws.serve_args()).args(args);
        for (name, value) in env {
            cmd.env(name, value);
        }
        Daemon::spawn(cmd, StateLocation::Dir(ws.state_dir().to_path_buf()))
    }

    /// The daemon run in a mount namespace of its own: `unshare -m --propagation private sh -c
    /// SETUP`, where SETUP (run as root in the namespace, with `$ROOT` and `$STATE` set) mounts
    /// what the test needs, then `exec`s the daemon. `state_dir` then names the state as the
    /// namespace shows it (through `/proc/PID/root`). `None` when namespaces are not available.
    pub fn start_in_mount_namespace(ws: &Workspace, setup: &str, env: &[(&str, &str)]) -> Option<Daemon> {
        if !can_unshare_mounts() {
            return None;
        }
        let mut cmd = Command::new("unshare");
        for var in FOREIGN_ENV {
            cmd.env_remove(var);
        }
        let script = format!("set -e\n{setup}\nexec \"$0\" \"$@\"");
        cmd.args(["-m", "--propagation", "private", "sh", "-c", &script, BIN])
            .args(ws.serve_args())
            .env("FILEWATCHD_HOME", ws.home())
            .env("ROOT", ws.root())
            .env("STATE", ws.state_dir())
            .current_dir(ws.root());
        for (name, value) in env {
            cmd.env(name, value);
        }
        Some(Daemon::spawn(
            cmd,
            StateLocation::Namespaced(ws.state_dir().to_path_buf()),
        ))
    }

    /// Runs `sh -c script` as root inside the daemon's mount namespace (`nsenter`).
    pub fn in_namespace(&self, script: &str) {
        let out = Command::new("nsenter")
            .args(["-t", &self.pid.to_string(), "-m", "sh", "-c", script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nsenter script failed: {script}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `POST /v1/sessions/{session}/rollback`.
    pub fn rollback(&self, session: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/v1/sessions/{session}/rollback"), body)
    }

    /// `POST /v1/sessions/{session}/undo`.
    pub fn undo(&self, session: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/v1/sessions/{session}/undo"), body)
    }

    /// `POST /v1/sessions/{session}/redo`.
    pub fn redo(&self, session: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/v1/sessions/{session}/redo"), body)
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

    /// Polls the daemon's stderr until it contains `needle`; false after `deadline`.
    pub fn wait_for_stderr(&self, needle: &str, deadline: Duration) -> bool {
        let until = Instant::now() + deadline;
        while Instant::now() < until {
            if self.stderr().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
        }
        false
    }
}

/// True when this process may make mount namespaces and mount a tmpfs in one (root, with
/// `unshare` and `nsenter` present). Tests that need one print why they skip otherwise.
pub fn can_unshare_mounts() -> bool {
    let ok = Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount -t tmpfs none /mnt",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("nsenter").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipped: needs root, unshare -m and nsenter (mount namespaces)");
    }
    ok
}

/// `prlimit --pid PID --fsize=LIMIT` (soft limit only, so it can be raised again).
pub fn set_file_size_limit(pid: u32, limit: &str) -> bool {
    Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--fsize={limit}:unlimited")])
        .status()
        .is_ok_and(|s| s.success())
}

/// The `actions` of a rollback answer.
#[track_caller]
pub fn actions(answer: &Value) -> &Vec<Value> {
    answer["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("answer without actions: {answer:#}"))
}

/// The action on `path` in a rollback answer; panics (listing what is there) if absent.
#[track_caller]
pub fn action<'a>(answer: &'a Value, path: &str) -> &'a Value {
    actions(answer)
        .iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("{path} not among the actions {:?}", action_paths(answer)))
}

/// Every path of a rollback answer's actions.
pub fn action_paths(answer: &Value) -> BTreeSet<String> {
    listed_paths(answer, "actions")
}

/// The paths of one list of a rollback answer (`conflicts`, `skipped`, `not_restorable`,
/// `kept`, `actions`).
#[track_caller]
pub fn listed_paths(answer: &Value, list: &str) -> BTreeSet<String> {
    answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("answer without {list}: {answer:#}"))
        .iter()
        .map(|n| n["path"].as_str().unwrap().to_string())
        .collect()
}

/// The entry for `path` in one list of a rollback answer.
#[track_caller]
pub fn listed<'a>(answer: &'a Value, list: &str, path: &str) -> &'a Value {
    answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("answer without {list}: {answer:#}"))
        .iter()
        .find(|n| n["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in {list}: {answer:#}"))
}

// ---------------------------------------------------------------------------------------------
// Sessions, forks, per-path history and content, time rollback, retention

impl Daemon {
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

    /// `POST /v1/sessions/{parent}/fork` with `{"new_session", "turn"}`.
    pub fn fork(&self, parent: &str, new_session: &str, turn: Value) -> (u16, Value) {
        self.post(
            &format!("/v1/sessions/{parent}/fork"),
            json!({"new_session": new_session, "turn": turn}),
        )
    }

    /// `POST /v1/rollback` (a time rollback; the body names `at`).
    pub fn rollback_in_time(&self, body: Value) -> (u16, Value) {
        self.post("/v1/rollback", body)
    }

    /// `POST /v1/redo`: redo of the latest time rollback.
    pub fn redo_in_time(&self, body: Value) -> (u16, Value) {
        self.post("/v1/redo", body)
    }

    /// `POST /v1/gc` (200) and its report.
    pub fn gc(&self, dry_run: bool) -> Value {
        expect(200, self.post("/v1/gc", json!({ "dry_run": dry_run })))
    }

    /// The `turns` of `GET /v1/sessions/{session}/turns` (200).
    pub fn turn_list(&self, session: &str) -> Vec<Value> {
        let listing = expect(200, self.get(&format!("/v1/sessions/{session}/turns")));
        listing["turns"]
            .as_array()
            .unwrap_or_else(|| panic!("turn listing without turns: {listing:#}"))
            .clone()
    }
}

/// A CLI command run in the root with `--state-dir` of this workspace's daemon. Unlike
/// `Workspace::cli`, stdout and stderr are the raw bytes (`show --at` prints file content).
pub fn cli_state(ws: &Workspace, args: &[&str]) -> Output {
    use std::io::Seek;
    let mut cmd = ws.command();
    cmd.args(args)
        .arg("--state-dir")
        .arg(ws.state_dir())
        .stdin(Stdio::null());
    let mut out_file = tempfile::tempfile().unwrap();
    let mut err_file = tempfile::tempfile().unwrap();
    cmd.stdout(out_file.try_clone().unwrap())
        .stderr(err_file.try_clone().unwrap());
    let mut child = cmd.spawn().unwrap();
    let until = Instant::now() + HTTP_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            child.kill().ok();
            child.wait().ok();
            panic!("filewatchd {args:?} still running after {HTTP_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
    };
    let raw = |file: &mut std::fs::File| {
        file.rewind().unwrap();
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).unwrap();
        buf
    };
    Output {
        status,
        stdout: raw(&mut out_file),
        stderr: raw(&mut err_file),
    }
}

/// As `cli_state`, asserting exit 0; the raw stdout.
#[track_caller]
pub fn cli_state_ok(ws: &Workspace, args: &[&str]) -> Vec<u8> {
    let out = cli_state(ws, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "filewatchd {args:?}: stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// As `cli_state_ok`, the stdout as text.
#[track_caller]
pub fn cli_state_text(ws: &Workspace, args: &[&str]) -> String {
    String::from_utf8_lossy(&cli_state_ok(ws, args)).into_owned()
}

/// As `cli_state_ok`, the stdout parsed as JSON.
#[track_caller]
pub fn cli_state_json(ws: &Workspace, args: &[&str]) -> Value {
    let text = cli_state_text(ws, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("filewatchd {args:?}: not JSON ({e}):\n{text}"))
}

/// An RFC 3339 time (milliseconds) that lies after every version recorded so far and before
/// every version recorded after this returns. Call it right after a barrier (a turn marker):
/// everything written before the marker is recorded at or before the current millisecond;
/// this waits (polling the clock, under a millisecond) until that millisecond is over, so
/// anything recorded later has a later recording time.
pub fn time_mark() -> String {
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    let mark = now_ms();
    while now_ms() <= mark {
        std::hint::spin_loop();
    }
    let at = std::time::UNIX_EPOCH + Duration::from_millis(mark as u64);
    humantime::format_rfc3339_millis(at).to_string()
}

/// The hash the store names content by: blake3 of the raw bytes, in hex.
pub fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Asserts a 200 rollback answer that was applied with no conflict and nothing skipped.
#[track_caller]
pub fn rollback_applied(reply: (u16, Value)) -> Value {
    let answer = expect(200, reply);
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(answer["conflicts"], json!([]), "{answer:#}");
    assert_eq!(answer["skipped"], json!([]), "{answer:#}");
    answer
}

/// Deterministic bytes that do not compress (so every version costs store space), unique to
/// `seed`.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// `strace` attached to a running daemon (all its threads), injecting faults; detached when
/// dropped. `None` (the test skips) where strace cannot attach.
pub struct Strace {
    child: Child,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Strace {
    /// `strace -f -p PID ARGS...` (e.g. `-e inject=pwrite64:error=EIO`), once every thread
    /// is attached.
    pub fn attach(pid: u32, args: &[&str]) -> Option<Strace> {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("trace");
        let stderr = dir.path().join("stderr");
        let child = Command::new("strace")
            .args(["-f", "-y", "-p", &pid.to_string(), "-o"])
            .arg(&log)
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("skipped: strace is not installed");
            return None;
        };
        let until = Instant::now() + START_DEADLINE;
        loop {
            let said = std::fs::read_to_string(&stderr).unwrap_or_default();
            if said.contains("attached") {
                return Some(Strace {
                    child,
                    log,
                    _dir: dir,
                });
            }
            if child.try_wait().unwrap().is_some() || Instant::now() > until {
                eprintln!("skipped: strace cannot attach: {said}");
                child.kill().ok();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
        }
    }

    /// What was traced so far.
    pub fn trace(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Detaches (SIGTERM: strace detaches from every thread before it exits).
    pub fn detach(mut self) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .ok();
        self.child.wait().ok();
    }
}

impl Drop for Strace {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

// ---------------------------------------------------------------------------------------------
// Daemons run through a wrapper (a user namespace, a resource limit)

impl Workspace {
    /// `PROGRAM ARGS... filewatchd serve --root ROOT --state-dir STATE`: the daemon started by
    /// a wrapper (`unshare`, `prlimit`) that ends by running the rest of its arguments, with
    /// this workspace's environment.
    pub fn wrapped_serve(&self, program: &str, args: &[&str]) -> Command {
        let env = self.command();
        let mut wrapped = Command::new(program);
        wrapped.args(args).arg(BIN).args(self.serve_args());
        for (name, value) in env.get_envs() {
            match value {
                Some(value) => wrapped.env(name, value),
                None => wrapped.env_remove(name),
            };
        }
        wrapped.current_dir(&self.root);
        wrapped
    }
}

impl Daemon {
    /// Starts `cmd` (from `Workspace::wrapped_serve`), which must exec the daemon in its own
    /// process (the pid in `daemon.json` is the child's), and waits until it answers.
    pub fn start_command(ws: &Workspace, cmd: Command) -> Daemon {
        Daemon::spawn(cmd, StateLocation::Dir(ws.state_dir().to_path_buf()))
    }
}

/// Whether `unshare -Ur` works here and lets a shell inside set its own inotify watch limit
/// (`user.max_inotify_watches` is per user namespace); prints why not when it does not.
pub fn user_namespace_watch_limit_works() -> bool {
    let probe = Command::new("unshare")
        .args(["-Ur", "sh", "-c", "echo 50 > /proc/sys/user/max_inotify_watches"])
        .stdin(Stdio::null())
        .output();
    match probe {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            eprintln!(
                "skipped: cannot set an inotify watch limit in a user namespace: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            false
        }
        Err(err) => {
            eprintln!("skipped: cannot run unshare: {err}");
            false
        }
    }
}
