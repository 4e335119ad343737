//! A real MCP client for `filewatchd mcp`: the official Python SDK in tests/mcp/driver.py,
//! from the virtualenv `.ci/run` makes (`target/mcp-venv`, pinned by
//! tests/mcp/requirements.txt). Without python3 or the `mcp` package a test skips with a
//! message saying how to install them; under CI (`CI` set) it fails instead.

use super::skip::skip;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use super::workspace::FOREIGN_ENV;
use super::{BIN, Workspace};

/// How long one request to the driver may take (a tool call that starts a daemon included).
const ANSWER_DEADLINE: Duration = Duration::from_secs(90);

/// The driver process and its line-by-line answers.
pub struct Mcp {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

/// A tool's answer: its text parsed as JSON (the server always answers JSON).
#[derive(Debug)]
pub struct ToolAnswer {
    pub is_error: bool,
    pub json: Value,
}

fn python() -> Option<PathBuf> {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-venv/bin/python");
    let candidates = [venv, PathBuf::from("python3")];
    candidates.into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import mcp.client.stdio"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

impl Mcp {
    /// `filewatchd mcp ARGS...` in the workspace's root, driven by the Python client, with the
    /// workspace's environment plus `env`. `None` (said on stderr) when no Python with the
    /// `mcp` package is there.
    pub fn start(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Option<Mcp> {
        let Some(python) = python() else {
            let how = "python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install -r tests/mcp/requirements.txt (.ci/run does this)";
            assert!(
                std::env::var_os("CI").is_none(),
                "no Python with the mcp package under CI: {how}"
            );
            skip(&format!(
                "no python3 with the `mcp` package; install it with {how}"
            ));
            return None;
        };
        let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/driver.py");
        let mut cmd = Command::new(python);
        cmd.arg(driver).arg(BIN).args(args);
        for var in FOREIGN_ENV {
            cmd.env_remove(var);
        }
        // Set when the tests themselves run inside Claude Code: it names that agent's session.
        cmd.env_remove("CLAUDE_CODE_SESSION_ID");
        cmd.env("FILEWATCHD_HOME", ws.home())
            .env("FILEWATCHD_AUTOSTART", "0")
            .envs(env.iter().copied())
            .current_dir(ws.root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn the MCP driver");
        let stdin = child.stdin.take().expect("driver stdin");
        let stdout = child.stdout.take().expect("driver stdout");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let mut mcp = Mcp { child, stdin, lines };
        let ready = mcp.next_line();
        assert_eq!(ready["ready"], true, "the driver did not initialize: {ready}");
        assert_eq!(ready["server"], "filewatchd", "{ready}");
        Some(mcp)
    }

    fn next_line(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_DEADLINE)
            .unwrap_or_else(|e| panic!("no answer from the MCP driver within {ANSWER_DEADLINE:?}: {e}"));
        let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(
            answer.get("driver_error").is_none(),
            "the MCP driver failed: {answer}"
        );
        answer
    }

    fn ask(&mut self, request: Value) -> Value {
        writeln!(self.stdin, "{request}").expect("write to the driver");
        self.stdin.flush().expect("flush");
        self.next_line()
    }

    /// The driver's pid: the "agent process" of the server and of the hooks it runs.
    pub fn agent_pid(&self) -> u32 {
        self.child.id()
    }

    /// `tools/list`: each tool's name, description and input schema.
    pub fn tools(&mut self) -> Vec<Value> {
        let answer = self.ask(json!({"list": true}));
        answer["tools"].as_array().cloned().unwrap_or_default()
    }

    pub fn tool_names(&mut self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tools()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> ToolAnswer {
        self.call_with_meta(tool, arguments, Value::Null)
    }

    /// A call whose request carries `_meta` (as Codex sends its session in it).
    pub fn call_with_meta(&mut self, tool: &str, arguments: Value, meta: Value) -> ToolAnswer {
        let answer = self.ask(json!({"call": tool, "arguments": arguments, "meta": meta}));
        let text = answer["text"].as_str().unwrap_or_default();
        let json = serde_json::from_str(text).unwrap_or_else(|e| panic!("{tool}: not JSON ({e}): {text}"));
        ToolAnswer {
            is_error: answer["is_error"] == true,
            json,
        }
    }

    /// A call that must succeed: its answer.
    #[track_caller]
    pub fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments.clone());
        assert!(!answer.is_error, "{tool} {arguments} failed: {:#}", answer.json);
        answer.json
    }

    /// A call that must fail: its `error` (`code`, `message`, ...).
    #[track_caller]
    pub fn fails(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments.clone());
        assert!(
            answer.is_error,
            "{tool} {arguments} should have failed: {:#}",
            answer.json
        );
        answer.json
    }

    /// Runs `argv` as a child of the driver (the "agent"), with `stdin`; its status, stdout
    /// and stderr.
    pub fn run(&mut self, argv: &[&str], stdin: &str) -> Value {
        self.ask(json!({"run": argv, "stdin": stdin}))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
