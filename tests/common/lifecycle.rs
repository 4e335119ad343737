//! Daemons in the background (`filewatchd start`, a hook's autostart): the commands that start
//! them, the state they keep under the workspace's `FILEWATCHD_HOME`, their HTTP API, agent
//! hook runs with the hooks' deadline, and the guard that kills every one of them when a test
//! ends (they are not the test's children: `start` detaches them).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{HTTP_TIMEOUT, START_DEADLINE, Workspace, poll_until};

/// What filewatchd promises an agent: a hook is done (exit 0) within this, whatever happens.
pub const HOOK_DEADLINE: Duration = Duration::from_secs(2);

/// Kills, when dropped, every filewatchd whose `FILEWATCHD_HOME` is the workspace's.
pub struct Reaper {
    home: PathBuf,
}

impl Drop for Reaper {
    fn drop(&mut self) {
        let pids = daemons_of(&self.home);
        for pid in &pids {
            kill_if_ours(*pid, &self.home);
        }
        poll_until(START_DEADLINE, || {
            pids.iter().all(|pid| exited(*pid)).then_some(())
        });
    }
}

/// `SIGKILL` to `pid` through a pidfd, checked again once the pidfd holds the process: a pid
/// that exited and was reused by another test's process meanwhile is left alone.
fn kill_if_ours(pid: u32, home: &Path) {
    sigkill_if(pid, || daemons_of(home).contains(&pid));
}

/// `SIGKILL` to `pid` through a pidfd, if `still_it` says so once the pidfd holds the process
/// (a pid reused meanwhile is another process, which the check then sees).
pub fn sigkill_if(pid: u32, still_it: impl FnOnce() -> bool) {
    // SAFETY: plain system calls on a pid and the descriptor they return, closed here.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) as libc::c_int;
        if fd < 0 {
            return;
        }
        if still_it() {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                libc::SIGKILL,
                std::ptr::null::<u8>(),
                0,
            );
        }
        libc::close(fd);
    }
}

/// One hook run's result.
pub struct HookRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// A daemon found by its state directory, and its HTTP API.
pub struct Background {
    pub pid: u32,
    pub url: String,
    token: String,
    agent: ureq::Agent,
}

impl Background {
    pub fn get(&self, path: &str) -> (u16, Value) {
        let mut resp = self
            .agent
            .get(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {}", self.token))
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }
}

impl Workspace {
    /// Kills the workspace's background daemons when dropped.
    pub fn reaper(&self) -> Reaper {
        Reaper {
            home: self.home().to_path_buf(),
        }
    }

    /// `command()` with autostart as a user has it (on unless told otherwise), in a project of
    /// the user's as hooks need for it (`.claude/`, where `hook install` puts the hooks).
    pub fn command_autostart(&self) -> Command {
        std::fs::create_dir_all(self.root().join(".claude")).expect("mkdir .claude");
        let mut cmd = self.command();
        cmd.env_remove("FILEWATCHD_AUTOSTART");
        cmd
    }

    /// The state directory under `FILEWATCHD_HOME` of the workspace at `root`.
    pub fn home_state_of(&self, root: &Path) -> Option<PathBuf> {
        let projects = std::fs::read_dir(self.home().join("projects")).ok()?;
        projects.flatten().map(|e| e.path()).find(|dir| {
            std::fs::read(dir.join("root")).ok().as_deref() == Some(root.as_os_str().as_encoded_bytes())
        })
    }

    /// The daemon answering for `root` from its state under `FILEWATCHD_HOME`, if one does.
    pub fn answering(&self, root: &Path) -> Option<Background> {
        let dir = self.home_state_of(root)?;
        let info: Value = serde_json::from_slice(&std::fs::read(dir.join("daemon.json")).ok()?).ok()?;
        let token = std::fs::read_to_string(dir.join("token"))
            .ok()?
            .trim()
            .to_string();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(HTTP_TIMEOUT))
            .build()
            .into();
        let daemon = Background {
            pid: info["pid"].as_u64()? as u32,
            url: info["url"].as_str()?.trim_end_matches('/').to_string(),
            token,
            agent,
        };
        let (status, _) = daemon.get("/v1/status");
        (status == 200).then_some(daemon)
    }

    /// Polls until the daemon for `root` answers; panics after the start deadline.
    #[track_caller]
    pub fn wait_answering(&self, root: &Path) -> Background {
        poll_until(START_DEADLINE, || self.answering(root))
            .unwrap_or_else(|| panic!("no daemon answers for {}", root.display()))
    }

    /// Every background daemon's log under `FILEWATCHD_HOME`, for a failure's message.
    pub fn daemon_logs(&self) -> String {
        let Ok(projects) = std::fs::read_dir(self.home().join("projects")) else {
            return "(no state directory)".into();
        };
        let mut logs = String::new();
        for dir in projects.flatten() {
            let log = dir.path().join("daemon.log");
            let text = std::fs::read_to_string(&log).unwrap_or_else(|e| format!("({e})"));
            logs.push_str(&format!("--- {}\n{text}", log.display()));
        }
        logs
    }

    /// Polls until a daemon for `root` has read every file of its start-up walk, as its
    /// `indexing.json` says (rewritten every 250 ms until it listens); its state directory.
    /// A daemon held by `spawn_held` stays there: it watches the workspace and its marker
    /// queue, and every change from now on is one its index has not seen.
    #[track_caller]
    pub fn wait_index_read(&self, root: &Path) -> PathBuf {
        let found = poll_until(START_DEADLINE, || {
            let dir = self.home_state_of(root)?;
            let progress: Value =
                serde_json::from_slice(&std::fs::read(dir.join("indexing.json")).ok()?).ok()?;
            (progress["read"].is_u64() && progress["read"] == progress["total"]).then_some(dir)
        });
        found.unwrap_or_else(|| {
            let held = std::fs::read_to_string(self.state_dir().join("daemon.log")).unwrap_or_default();
            panic!("no daemon has indexed {}:\n{held}", root.display())
        })
    }

    /// `serve --test-knobs --root ROOT` with its state under `FILEWATCHD_HOME`, holding once
    /// its index is ready until the file `release` exists (`FILEWATCHD_TEST_HOLD_INDEX`); the
    /// reaper kills it.
    pub fn spawn_held(&self, release: &Path) -> u32 {
        let mut cmd = self.command();
        cmd.args(["serve", "--test-knobs", "--root"])
            .arg(self.root())
            .env("FILEWATCHD_TEST_HOLD_INDEX", release)
            .arg("--log-file")
            .arg(self.state_dir().join("daemon.log"))
            .stdin(Stdio::null());
        let child = cmd.spawn().expect("spawn the daemon");
        // Reaped by whoever waits for it; the reaper kills it by pid.
        let pid = child.id();
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
        pid
    }

    /// `filewatchd hook AGENT` with `payload` on stdin through `cmd`, in the root, which must
    /// end within `HOOK_DEADLINE` (else the test fails).
    pub fn hook_with(&self, mut cmd: Command, agent: &str, payload: &str) -> HookRun {
        cmd.current_dir(self.root());
        run_hook(cmd, agent, &[], payload)
    }
}

/// A hook payload from tests/fixtures/hooks/, working in `root`.
/// `filewatchd hook AGENT ARGS…` with `payload` on stdin through `cmd`; fails the test if it
/// outlives `HOOK_DEADLINE` (the agents' patience, and our promise).
pub fn run_hook(mut cmd: Command, agent: &str, args: &[&str], payload: &str) -> HookRun {
    cmd.args(["hook", agent]).args(args);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn the hook");
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(payload.as_bytes());
    }
    let until = Instant::now() + HOOK_DEADLINE;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("`filewatchd hook {agent}` was still running after {HOOK_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10)); // polling a deadline, not synchronising
    }
    let out = child.wait_with_output().expect("output");
    HookRun {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn hook_fixture(agent: &str, event: &str, root: &Path) -> String {
    let path = format!(
        "{}/tests/fixtures/hooks/{agent}/{event}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.replace("/tmp/FIXTURE_CWD", &root.to_string_lossy())
}

/// Every live filewatchd process whose environment sets `FILEWATCHD_HOME` to `home`.
pub fn daemons_of(home: &Path) -> Vec<u32> {
    let mut wanted = b"FILEWATCHD_HOME=".to_vec();
    wanted.extend_from_slice(home.as_os_str().as_encoded_bytes());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            let ours = exe
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("filewatchd"));
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            ours && env.split(|&b| b == 0).any(|var| var == wanted.as_slice()) && !exited(*pid)
        })
        .collect()
}

/// Whether `pid` has exited: gone, or a zombie nobody reaped yet whose threads have all ended
/// (a killed daemon's main thread is a zombie before its other threads let go of its files,
/// and with them its locks).
pub fn exited(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return true;
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let zombie = field("State:").starts_with('Z') || field("State:").starts_with('X');
    zombie && field("Threads:").parse::<u32>().is_ok_and(|n| n <= 1)
}
