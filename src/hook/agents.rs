//! The hooks' record of the agent processes they ran for: which sessions an agent process
//! reported, so that `filewatchd mcp`, started by the same agent process, can tell which
//! session it serves when the agent tells it nothing. One file per process in the state
//! directory, `agents/<pid>-<start time>.json`: the start time (field 22 of
//! `/proc/PID/stat`, in clock ticks since boot) makes a reused pid a different name, so a
//! record never matches a later process. Writers take `agents/.lock` in turn: hooks of one
//! agent process may run at once.
//!
//! The agent is the hook's nearest ancestor that is not a shell or a wrapper (`sh -c` runs
//! most hooks); the MCP server reads the record of its own nearest such ancestor, the agent
//! that started it, and no other: a record further up is an outer agent's (an agent run by
//! an agent), whose session is not this one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The directory of the records, in the state directory.
pub const AGENTS_DIR: &str = "agents";
/// Sessions kept per record, the latest first.
const SESSIONS_KEPT: usize = 16;
/// How long a hook waits for another one writing the records.
const LOCK_WAIT: Duration = Duration::from_secs(2);
/// How far up the process tree anyone looks.
const DEPTH_MAX: usize = 32;
/// Processes between an agent and its hook or MCP server, never the agent itself.
const WRAPPERS: [&str; 13] = [
    "sh",
    "bash",
    "dash",
    "zsh",
    "fish",
    "ksh",
    "env",
    "timeout",
    "nice",
    "nohup",
    "stdbuf",
    "setsid",
    "filewatchd",
];

/// One process, as `/proc/PID/stat` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    /// Clock ticks after boot at which it started.
    pub start_time: u64,
    /// Its command name (at most 15 bytes).
    pub comm: String,
}

impl Process {
    pub fn of(pid: u32) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &stat)
    }

    fn record_name(&self) -> String {
        format!("{}-{}.json", self.pid, self.start_time)
    }
}

/// `pid (comm) state ppid ...`: the name may hold spaces and parentheses, so the fields are
/// counted from the last `)`.
fn parse_stat(pid: u32, stat: &str) -> Option<Process> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the name: field 3 (state) is fields[0], so field N is fields[N - 3].
    let ppid = fields.get(1)?.parse().ok()?;
    let start_time = fields.get(19)?.parse().ok()?;
    Some(Process {
        pid,
        ppid,
        start_time,
        comm,
    })
}

/// The ancestors of this process, its parent first, up to (not including) pid 1.
pub fn ancestors() -> Vec<Process> {
    let mut chain = Vec::new();
    let mut pid = crate::platform::ext::parent_id();
    while pid > 1 && chain.len() < DEPTH_MAX {
        let Some(process) = Process::of(pid) else {
            break;
        };
        pid = process.ppid;
        chain.push(process);
    }
    chain
}

/// What a record says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentRecord {
    pub pid: u32,
    pub start_time: u64,
    pub comm: String,
    /// The agent's name as its hook knows it (`claude-code`, `codex`, ...).
    pub agent: String,
    /// The sessions it reported, the latest first.
    pub sessions: Vec<SeenSession>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeenSession {
    pub session: String,
    /// When a hook last reported it, in ms since the epoch.
    pub seen_ms: i64,
}

/// The agent process this one runs for: its nearest ancestor that is not a wrapper.
fn agent_process() -> Option<Process> {
    ancestors()
        .into_iter()
        .find(|p| !WRAPPERS.contains(&p.comm.as_str()))
}

/// Notes that the agent process running this hook reported `session`. Best effort: a hook
/// never fails because of it (an error is only logged).
pub fn record(state_dir: &Path, agent: &str, session: &str, now_ms: i64) {
    let Some(process) = agent_process() else {
        return;
    };
    if let Err(err) = write_record(state_dir, &process, agent, session, now_ms) {
        tracing::debug!(error = %err, dir = %state_dir.display(), "cannot record the agent's session");
    }
}

fn write_record(
    state_dir: &Path,
    process: &Process,
    agent: &str,
    session: &str,
    now_ms: i64,
) -> std::io::Result<()> {
    // Only beside a daemon's state: a hook the daemon refused (run from the home directory,
    // autostart off) makes no state directory for a workspace that has none.
    if !state_dir.is_dir() {
        return Ok(());
    }
    let dir = state_dir.join(AGENTS_DIR);
    std::fs::create_dir_all(&dir)?;
    // Hooks of one agent process can run at once (opencode's): one writer at a time, or one
    // would write back a record without the other's session.
    let held = locked(&dir)?;
    let path = dir.join(process.record_name());
    let mut record = read(&path).unwrap_or_else(|| AgentRecord {
        pid: process.pid,
        start_time: process.start_time,
        comm: process.comm.clone(),
        agent: agent.to_string(),
        sessions: Vec::new(),
    });
    record.sessions.retain(|s| s.session != session);
    let seen = SeenSession {
        session: session.to_string(),
        seen_ms: now_ms,
    };
    record.sessions.insert(0, seen);
    record.sessions.truncate(SESSIONS_KEPT);
    let temp = dir.join(format!(".{}.{}.tmp", process.record_name(), std::process::id()));
    std::fs::write(&temp, serde_json::to_vec(&record)?)?;
    std::fs::rename(&temp, &path)?;
    // The others wait for the lock: what touches no live process's record comes after it.
    drop(held);
    prune(&dir);
    Ok(())
}

/// Waits (up to `LOCK_WAIT`) for the records' lock, `agents/.lock`, held until the file is
/// dropped. A hook never hangs on it: past the wait, the record is not written.
fn locked(dir: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".lock"))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn read(path: &Path) -> Option<AgentRecord> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Removes the records of processes that are gone (or whose pid another process now has).
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(pid_and_start) else {
            continue;
        };
        let alive = Process::of(pid).is_some_and(|p| p.start_time == start);
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn pid_and_start(name: &str) -> Option<(u32, u64)> {
    let (pid, start) = name.strip_suffix(".json")?.split_once('-')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// The record of the agent process this one runs for (its nearest ancestor that is not a
/// wrapper), with where it is; none when that process has none.
pub fn find(state_dir: &Path) -> Option<(AgentRecord, PathBuf)> {
    let process = agent_process()?;
    let path = state_dir.join(AGENTS_DIR).join(process.record_name());
    read(&path).map(|record| (record, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_from_the_last_parenthesis() {
        let stat = "4242 (my (odd) agent) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 0 0";
        let process = parse_stat(4242, stat).expect("parsed");
        assert_eq!(process.comm, "my (odd) agent");
        assert_eq!(process.ppid, 17);
        assert_eq!(process.start_time, 987654);
    }

    #[test]
    fn this_process_has_a_parent_and_a_start_time() {
        let own = Process::of(std::process::id()).expect("own stat");
        assert_eq!(own.ppid, std::os::unix::process::parent_id());
        assert_eq!(ancestors().first().map(|p| p.pid), Some(own.ppid));
    }

    /// Writers racing on one record (threads, so closer together than hooks): every session
    /// is kept.
    #[test]
    fn parallel_writers_lose_no_session() {
        let state = tempfile::tempdir().expect("temp dir");
        let own = Process::of(std::process::id()).expect("own stat");
        for round in 0..20 {
            let writers: Vec<_> = (0..SESSIONS_KEPT)
                .map(|i| {
                    let (dir, process) = (state.path().to_path_buf(), own.clone());
                    std::thread::spawn(move || {
                        let session = format!("s{round}-{i}");
                        write_record(&dir, &process, "opencode", &session, 0)
                    })
                })
                .collect();
            for writer in writers {
                writer.join().expect("a writer").expect("written");
            }
            let record = read(&state.path().join(AGENTS_DIR).join(own.record_name())).expect("a record");
            assert_eq!(record.sessions.len(), SESSIONS_KEPT, "round {round}: {record:?}");
            for i in 0..SESSIONS_KEPT {
                let session = format!("s{round}-{i}");
                assert!(
                    record.sessions.iter().any(|s| s.session == session),
                    "round {round}: {session} lost"
                );
            }
        }
    }

    #[test]
    fn record_names_carry_pid_and_start_time() {
        assert_eq!(pid_and_start("12-34.json"), Some((12, 34)));
        assert_eq!(pid_and_start(".12-34.json.9.tmp"), None);
        assert_eq!(pid_and_start("12.json"), None);
    }
}
