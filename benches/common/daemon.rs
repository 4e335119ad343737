//! Running `filewatchd serve` as a child process and talking to its HTTP API (docs/api.md).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The session name every marker of the benchmark uses.
pub const SESSION: &str = "bench";
/// The session of `Daemon::sync`'s empty turns (a barrier that leaves `SESSION` alone).
pub const SYNC_SESSION: &str = "bench-sync";

pub struct Daemon {
    child: Option<Child>,
    pub pid: u32,
    pub url: String,
    token: String,
    agent: ureq::Agent,
    pub log: PathBuf,
}

/// CPU time (utime + stime, in clock ticks) and scheduler wake-ups of a process.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcSample {
    pub ticks: u64,
    /// Sum of voluntary + involuntary context switches over all threads.
    pub switches: u64,
}

fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(timeout))
        .build()
        .into()
}

impl Daemon {
    /// Spawn `bin serve --root root --state-dir state` and wait until it is ready
    /// (`daemon.json` exists and `GET /v1/status` answers 200). Returns the daemon and the time
    /// from spawning to ready.
    pub fn spawn(
        bin: &Path,
        root: &Path,
        state: &Path,
        log: &Path,
        limit: Duration,
    ) -> Result<(Daemon, Duration), String> {
        Daemon::spawn_via(&[], bin, root, state, log, limit)
    }

    /// `spawn` through a wrapper that ends by running the rest of its arguments in its own
    /// process (`unshare -Ur sh -c '...; exec "$@"' sh`): the daemon's pid is the child's.
    pub fn spawn_via(
        wrapper: &[&str],
        bin: &Path,
        root: &Path,
        state: &Path,
        log: &Path,
        limit: Duration,
    ) -> Result<(Daemon, Duration), String> {
        fs::create_dir_all(state).map_err(|e| format!("create {}: {e}", state.display()))?;
        let logf = fs::File::create(log).map_err(|e| format!("create {}: {e}", log.display()))?;
        let logf2 = logf.try_clone().map_err(|e| e.to_string())?;
        let info = state.join("daemon.json");
        let token_path = state.join("token");
        let poll = agent(Duration::from_secs(5));

        let t0 = Instant::now();
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(bin);
                command
            }
            None => Command::new(bin),
        };
        let child = command
            .arg("serve")
            .arg("--root")
            .arg(root)
            .arg("--state-dir")
            .arg(state)
            .stdin(Stdio::null())
            .stdout(logf)
            .stderr(logf2)
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", bin.display()))?;
        let pid = child.id();
        let mut d = Daemon {
            child: Some(child),
            pid,
            url: String::new(),
            token: String::new(),
            agent: agent(Duration::from_secs(600)),
            log: log.to_path_buf(),
        };
        loop {
            if let Some(st) = d.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                d.child = None;
                return Err(format!(
                    "filewatchd exited before it was ready ({st}){}",
                    d.log_tail()
                ));
            }
            if t0.elapsed() > limit {
                return Err(format!("filewatchd not ready after {limit:?}{}", d.log_tail()));
            }
            if d.url.is_empty()
                && let Ok(text) = fs::read_to_string(&info)
                && let Ok(v) = serde_json::from_str::<Value>(&text)
                && let Some(u) = v.get("url").and_then(Value::as_str)
            {
                d.url = u.trim_end_matches('/').to_string();
            }
            if !d.url.is_empty()
                && d.token.is_empty()
                && let Ok(t) = fs::read_to_string(&token_path)
            {
                d.token = t.trim().to_string();
            }
            if !d.url.is_empty() && !d.token.is_empty() {
                let r = poll
                    .get(format!("{}/v1/status", d.url))
                    .header("Authorization", format!("Bearer {}", d.token))
                    .call();
                if let Ok(resp) = r
                    && resp.status().as_u16() == 200
                {
                    return Ok((d, t0.elapsed()));
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(30)..];
        if tail.is_empty() {
            String::new()
        } else {
            format!(
                "\n--- last lines of {} ---\n{}",
                self.log.display(),
                tail.join("\n")
            )
        }
    }

    fn request(&self, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String), String> {
        let url = format!("{}{}", self.url, path);
        let auth = format!("Bearer {}", self.token);
        let res = match method {
            "GET" => self.agent.get(&url).header("Authorization", &auth).call(),
            _ => match body {
                Some(b) => self
                    .agent
                    .post(&url)
                    .header("Authorization", &auth)
                    .header("Content-Type", "application/json")
                    .send(b),
                None => self.agent.post(&url).header("Authorization", &auth).send_empty(),
            },
        };
        let mut resp = res.map_err(|e| format!("{method} {path}: {e}"))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| format!("{method} {path}: reading body: {e}"))?;
        Ok((status, text))
    }

    fn json(&self, method: &str, path: &str, body: Option<&str>, ok: u16) -> Result<Value, String> {
        let (status, text) = self.request(method, path, body).map_err(|e| self.with_log(e))?;
        if status != ok {
            return Err(self.with_log(format!("{method} {path}: HTTP {status}: {}", text.trim())));
        }
        serde_json::from_str(&text)
            .map_err(|e| self.with_log(format!("{method} {path}: bad JSON ({e}): {text}")))
    }

    /// An error message followed by the last lines of the daemon's log.
    fn with_log(&self, msg: String) -> String {
        format!("{msg}{}", self.log_tail())
    }

    pub fn status(&self) -> Result<Value, String> {
        self.json("GET", "/v1/status", None, 200)
    }

    /// Turn start marker (`POST /v1/sessions/bench/turns` with `{}`).
    pub fn turn_start(&self) -> Result<Value, String> {
        self.json("POST", &format!("/v1/sessions/{SESSION}/turns"), Some("{}"), 201)
    }

    /// Turn end marker; the whole HTTP exchange (request, barrier, full body) is timed.
    pub fn turn_end(&self) -> Result<(Duration, Value), String> {
        let path = format!("/v1/sessions/{SESSION}/turns/current/end");
        let t0 = Instant::now();
        let (status, text) = self.request("POST", &path, None).map_err(|e| self.with_log(e))?;
        let dt = t0.elapsed();
        if status != 200 {
            return Err(self.with_log(format!("POST {path}: HTTP {status}: {}", text.trim())));
        }
        let v =
            serde_json::from_str(&text).map_err(|e| self.with_log(format!("POST {path}: bad JSON ({e})")))?;
        Ok((dt, v))
    }

    /// `GET path` answered 200, as JSON.
    pub fn get_json(&self, path: &str) -> Result<Value, String> {
        self.json("GET", path, None, 200)
    }

    /// `POST path` with a JSON body; the whole exchange (request, work, full body) is timed.
    /// Any HTTP status is returned to the caller, with the body parsed as JSON.
    pub fn post_timed(&self, path: &str, body: &str) -> Result<(Duration, u16, Value), String> {
        let t0 = Instant::now();
        let (status, text) = self
            .request("POST", path, Some(body))
            .map_err(|e| self.with_log(e))?;
        let dt = t0.elapsed();
        let v = serde_json::from_str(&text).map_err(|e| {
            self.with_log(format!(
                "POST {path}: HTTP {status}, bad JSON ({e}): {}",
                text.trim()
            ))
        })?;
        Ok((dt, status, v))
    }

    /// `POST /v1/sessions/bench/undo` with `{}`, timed until the full answer.
    pub fn undo(&self) -> Result<(Duration, u16, Value), String> {
        self.post_timed(&format!("/v1/sessions/{SESSION}/undo"), "{}")
    }

    /// `POST /v1/sessions/bench/redo` with `{}`, timed until the full answer.
    pub fn redo(&self) -> Result<(Duration, u16, Value), String> {
        self.post_timed(&format!("/v1/sessions/{SESSION}/redo"), "{}")
    }

    /// A barrier: an empty turn (start + end) in `SYNC_SESSION`. When it returns, the daemon
    /// has recorded every write made before the call.
    pub fn sync(&self) -> Result<(), String> {
        self.json(
            "POST",
            &format!("/v1/sessions/{SYNC_SESSION}/turns"),
            Some("{}"),
            201,
        )?;
        self.json(
            "POST",
            &format!("/v1/sessions/{SYNC_SESSION}/turns/current/end"),
            None,
            200,
        )?;
        Ok(())
    }

    /// `GET path` as text, with its HTTP status (for `/v1/content`).
    pub fn get_text(&self, path: &str) -> Result<(u16, String), String> {
        self.request("GET", path, None).map_err(|e| self.with_log(e))
    }

    /// Sends `sig` (e.g. `STOP`, `CONT`) to the daemon with `kill -SIG pid`.
    pub fn signal(&self, sig: &str) -> Result<(), String> {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid.to_string())
            .status()
            .map_err(|e| format!("kill -{sig}: {e}"))?;
        if !st.success() {
            return Err(format!("kill -{sig} {}: {st}", self.pid));
        }
        Ok(())
    }

    /// Bytes the daemon has read through read(2) and friends so far (`rchar` of
    /// /proc/<pid>/io; page-cache hits included), 0 if unreadable.
    pub fn read_chars(&self) -> u64 {
        let text = fs::read_to_string(format!("/proc/{}/io", self.pid)).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("rchar:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn sample(&self) -> ProcSample {
        proc_sample(self.pid)
    }

    /// (VmRSS, VmHWM) in bytes.
    pub fn rss(&self) -> (u64, u64) {
        let text = fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        (
            status_kb(&text, "VmRSS:") * 1024,
            status_kb(&text, "VmHWM:") * 1024,
        )
    }

    /// SIGTERM (via `kill`), wait up to 30 s, then SIGKILL. Returns how it ended.
    pub fn stop(&mut self) -> String {
        let Some(mut child) = self.child.take() else {
            return "already exited".into();
        };
        if let Ok(Some(st)) = child.try_wait() {
            return format!("had exited on its own ({st})");
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(st)) = child.try_wait() {
                return format!(
                    "stopped by SIGTERM in {} ({st})",
                    super::stats::fmt_dur(t0.elapsed())
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        "did not stop within 30 s of SIGTERM; killed".into()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop();
        }
    }
}

fn status_kb(text: &str, key: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l[key.len()..].split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Fields after the `(comm)` of /proc/<pid>/stat; index 0 is field 3 (state).
fn stat_fields(path: &str) -> Vec<u64> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let rest = text.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace().map(|f| f.parse().unwrap_or(0)).collect()
}

pub fn proc_sample(pid: u32) -> ProcSample {
    let f = stat_fields(&format!("/proc/{pid}/stat"));
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    let mut switches = 0;
    if let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) {
        for e in rd.flatten() {
            let text = fs::read_to_string(e.path().join("status")).unwrap_or_default();
            switches += status_kb(&text, "voluntary_ctxt_switches:")
                + status_kb(&text, "nonvoluntary_ctxt_switches:");
        }
    }
    ProcSample { ticks, switches }
}

/// CPU ticks (user + system) of the waited-for children of this process (cutime + cstime).
pub fn children_ticks() -> u64 {
    let f = stat_fields("/proc/self/stat");
    f.get(13).copied().unwrap_or(0) + f.get(14).copied().unwrap_or(0)
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 if that fails).
pub fn clk_tck() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}
