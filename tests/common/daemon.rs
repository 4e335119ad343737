//! The daemon: `filewatchd serve` started in a workspace, waited for until it answers,
//! stopped cleanly or killed; killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::cli::read_all;
use super::{HTTP_TIMEOUT, START_DEADLINE, Workspace, poll_until};

/// A running `filewatchd serve`; killed when dropped.
pub struct Daemon {
    pub(super) child: Child,
    stderr: std::fs::File,
    pub url: String,
    pub token: String,
    pub port: u16,
    pub pid: u32,
    pub state_dir: PathBuf,
    pub(super) agent: ureq::Agent,
}

/// Where a starting daemon's `daemon.json` will appear.
pub(super) enum StateLocation {
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

    /// As `start_with_env`, but without `--test-knobs`: the daemon a user runs, which must
    /// ignore every `FILEWATCHD_TEST_*` variable.
    pub fn start_without_test_knobs(ws: &Workspace, env: &[(&str, &str)]) -> Daemon {
        let mut cmd = ws.command();
        cmd.args(["serve", "--root"])
            .arg(ws.root())
            .arg("--state-dir")
            .arg(ws.state_dir());
        cmd.envs(env.iter().copied());
        Daemon::spawn(cmd, StateLocation::Dir(ws.state_dir().to_path_buf()))
    }

    /// `serve --root ROOT` with no `--state-dir`: the state goes under `$FILEWATCHD_HOME`.
    pub fn start_in_home(ws: &Workspace) -> Daemon {
        Daemon::start_in_home_at(ws, ws.root())
    }

    /// As `start_in_home`, with extra environment variables.
    pub fn start_in_home_with_env(ws: &Workspace, env: &[(&str, &str)]) -> Daemon {
        let mut cmd = ws.command();
        cmd.arg("serve").arg("--root").arg(ws.root());
        cmd.envs(env.iter().copied());
        Daemon::spawn(cmd, StateLocation::Home(ws.home().join("projects")))
    }

    /// As `start_in_home`, watching `root` (the workspace or a directory inside it).
    pub fn start_in_home_at(ws: &Workspace, root: &Path) -> Daemon {
        let mut cmd = ws.command();
        cmd.arg("serve").arg("--root").arg(root);
        Daemon::spawn(cmd, StateLocation::Home(ws.home().join("projects")))
    }

    /// Starts `cmd` and polls until the daemon it runs answers; panics if it exits first or
    /// is not ready by `START_DEADLINE`.
    pub(super) fn spawn(mut cmd: Command, location: StateLocation) -> Daemon {
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
        let ready = poll_until(START_DEADLINE, || {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "daemon exited during start-up ({status}); stderr:\n{}",
                    read_all(&stderr)
                );
            }
            Daemon::try_connect(&location, pid, &agent)
        });
        let Some((url, token, state_dir)) = ready else {
            child.kill().ok();
            child.wait().ok();
            panic!(
                "daemon not ready after {START_DEADLINE:?}; stderr:\n{}",
                read_all(&stderr)
            );
        };
        let port = url
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .parse()
            .unwrap();
        Daemon {
            child,
            stderr,
            url,
            token,
            port,
            pid,
            state_dir,
            agent,
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
            (info["pid"].as_u64() == Some(u64::from(pid))).then_some(info)
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
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
