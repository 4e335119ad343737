//! The binary run to completion: CLI commands in the workspace and `serve` runs expected to
//! exit on their own, each killed (and the test failed) if it outlives its deadline.

use std::io::{Read, Seek};
use std::path::Path;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{HTTP_TIMEOUT, START_DEADLINE, Workspace, poll_until};

impl Workspace {
    /// Runs a CLI command in `cwd` (relative to the root) and returns its output as text
    /// (invalid UTF-8 replaced).
    pub fn cli(&self, cwd: impl AsRef<Path>, args: &[&str]) -> Output {
        let mut cmd = self.command();
        cmd.current_dir(self.path(cwd)).args(args).stdin(Stdio::null());
        lossy(run_with_deadline(cmd, HTTP_TIMEOUT))
    }

    /// `serve --root ROOT --state-dir STATE ARGS...` that is expected to exit on its own
    /// (a refused start); returns its exit status and stderr.
    pub fn serve_expecting_exit(&self, args: &[&str]) -> (ExitStatus, String) {
        let mut cmd = self.command();
        cmd.args(self.serve_args()).args(args).stdin(Stdio::null());
        let out = run_with_deadline(cmd, START_DEADLINE);
        (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// As `serve_expecting_exit`, with extra environment variables (the test knobs).
    pub fn serve_expecting_exit_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String) {
        let mut cmd = self.command();
        cmd.args(self.serve_args())
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null());
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
}

/// A CLI command run in the root with `--state-dir` of this workspace's daemon. Unlike
/// `Workspace::cli`, stdout and stderr are the raw bytes (`show --at` prints file content).
pub fn cli_state(ws: &Workspace, args: &[&str]) -> Output {
    let mut cmd = ws.command();
    cmd.args(args)
        .arg("--state-dir")
        .arg(ws.state_dir())
        .stdin(Stdio::null());
    run_with_deadline(cmd, HTTP_TIMEOUT)
}

/// As `cli_state`, with extra environment variables (`FILEWATCHD_SESSION`, `PAGER`).
pub fn cli_state_with_env(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = ws.command();
    cmd.args(args)
        .arg("--state-dir")
        .arg(ws.state_dir())
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    run_with_deadline(cmd, HTTP_TIMEOUT)
}

/// Runs `command` to completion with the harness's deadline (killed and failed past it).
pub fn run_to_completion(cmd: Command) -> Output {
    run_with_deadline(cmd, HTTP_TIMEOUT)
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

/// Runs `cmd` (stdin, arguments and environment as the caller set them) to completion within
/// the CLI's deadline; its stdout and stderr as raw bytes.
pub fn run_to_end(cmd: Command) -> Output {
    run_with_deadline(cmd, HTTP_TIMEOUT)
}

/// Runs a command to completion (its stdout and stderr as raw bytes); kills it and panics if
/// it outlives the deadline.
fn run_with_deadline(mut cmd: Command, deadline: Duration) -> Output {
    let out_file = tempfile::tempfile().unwrap();
    let err_file = tempfile::tempfile().unwrap();
    cmd.stdout(out_file.try_clone().unwrap())
        .stderr(err_file.try_clone().unwrap());
    let mut child = cmd.spawn().unwrap();
    let Some(status) = poll_until(deadline, || child.try_wait().unwrap()) else {
        child.kill().ok();
        child.wait().ok();
        panic!(
            "{cmd:?} still running after {deadline:?}; stderr: {}",
            read_all(&err_file)
        );
    };
    Output {
        status,
        stdout: read_bytes(&out_file),
        stderr: read_bytes(&err_file),
    }
}

/// The output with stdout and stderr as text, invalid UTF-8 replaced.
fn lossy(out: Output) -> Output {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned().into_bytes();
    Output {
        status: out.status,
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

/// Everything written to a captured output file so far.
fn read_bytes(file: &std::fs::File) -> Vec<u8> {
    let mut file = file.try_clone().unwrap();
    file.rewind().unwrap();
    let mut buf = Vec::new();
    file.read_to_end(&mut buf).unwrap();
    buf
}

/// As `read_bytes`, as text (invalid UTF-8 replaced).
pub(super) fn read_all(file: &std::fs::File) -> String {
    String::from_utf8_lossy(&read_bytes(file)).into_owned()
}
