//! Starting the daemon in the background: `filewatchd serve` of this very binary, detached
//! (its own session, stdin from `/dev/null`, no descriptor of its starter's kept open, so an
//! agent waiting for its hook's output is never kept waiting by the daemon), logging to
//! `daemon.log` in the state directory (`crate::log_file`: rotated at 4 MiB). Starters take
//! `start.lock` in the state directory first, so two hooks firing at once start one daemon.

use crate::platform::ext::OpenExt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::{Located, Running, probe};

/// The log file in the state directory.
pub const LOG_FILE: &str = "daemon.log";
/// The lock starters take while they look and spawn.
const START_LOCK: &str = "start.lock";
/// How often a starter looks again.
const POLL: Duration = Duration::from_millis(20);

/// What the daemon is started with besides its root.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    pub config: Option<PathBuf>,
    pub port: Option<u16>,
}

/// Held while a starter looks for a daemon and spawns one.
pub struct StartLock {
    _file: File,
}

impl StartLock {
    /// Takes the lock of `loc` (creating its state directory), waiting at most until `until`.
    pub fn take(loc: &Located, until: Instant) -> anyhow::Result<Self> {
        crate::queue::prepare(&loc.state_dir)
            .with_context(|| format!("cannot create state directory {}", loc.state_dir.display()))?;
        let path = loc.state_dir.join(START_LOCK);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .permission_bits(0o600)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Self { _file: file }),
                Err(_) if Instant::now() < until => std::thread::sleep(POLL), // waiting for the other starter
                Err(err) => anyhow::bail!("another filewatchd start for this workspace is under way ({err})"),
            }
        }
    }
}

/// A daemon just spawned, and where its log is.
pub struct Spawned {
    child: Child,
    pub log: PathBuf,
    /// Where this daemon's lines begin in the log.
    log_from: u64,
}

/// How waiting for a spawned daemon ended.
pub enum Waited {
    /// `ready` said so.
    Ready(Running),
    /// It exited; the last lines of its log say why.
    Exited {
        status: ExitStatus,
        log_tail: Vec<String>,
    },
    /// Still running at the deadline.
    Pending,
}

/// Spawns `filewatchd serve` for `loc`, detached. The caller holds the `StartLock`.
pub fn spawn(loc: &Located, launch: &Launch) -> anyhow::Result<Spawned> {
    // Found by its record only: nothing is there to watch.
    anyhow::ensure!(
        loc.root.is_dir(),
        "the workspace root {} no longer exists: nothing to start (its history is in {}; `filewatchd forget {}` deletes it)",
        loc.root.display(),
        loc.state_dir.display(),
        loc.root.display()
    );
    let log = loc.state_dir.join(LOG_FILE);
    // Rotated here rather than by the daemon's first line, so its lines begin at `log_from`.
    crate::log_file::rotate_if_full(&log);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .permission_bits(0o600)
        .open(&log)
        .with_context(|| format!("cannot open {}", log.display()))?;
    let log_from = file.metadata().map(|m| m.len()).unwrap_or(0);
    let program = std::env::current_exe().context("cannot find the filewatchd binary")?;
    let mut cmd = Command::new(program);
    cmd.arg("serve").arg("--root").arg(&loc.root);
    cmd.arg("--yes").arg("--log-file").arg(&log);
    if loc.explicit_state {
        cmd.arg("--state-dir").arg(&loc.state_dir);
    }
    if let Some(config) = &launch.config {
        cmd.arg("--config").arg(config);
    }
    if let Some(port) = launch.port {
        cmd.arg("--port").arg(port.to_string());
    }
    cmd.current_dir("/")
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    detached(&mut cmd);
    let child = cmd.spawn().context("cannot start the daemon")?;
    Ok(Spawned { child, log, log_from })
}

/// The daemon in a session of its own (no terminal, out of the starter's process group, which
/// an agent may kill with its hook), and every inherited descriptor above stderr closed at
/// exec. On Windows: a process group of its own with no console.
fn detached(cmd: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: between fork and exec only async-signal-safe system calls run here.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::setsid()?;
                crate::platform::close_inherited_descriptors();
                Ok(())
            });
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        /// `DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP`.
        const DETACHED: u32 = 0x0000_0008 | 0x0000_0200;
        cmd.creation_flags(DETACHED);
    }
}

impl Spawned {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Polls until `ready` holds for what `probe` sees (a state of this daemon), the daemon
    /// exits, or `until` passes.
    pub fn wait(&mut self, loc: &Located, until: Instant, ready: impl Fn(&Running) -> bool) -> Waited {
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Waited::Exited {
                    status,
                    log_tail: self.log_tail(12),
                };
            }
            let running = probe(loc);
            let ours = running.pid() == Some(self.pid());
            if ours && ready(&running) {
                return Waited::Ready(running);
            }
            if Instant::now() >= until {
                return Waited::Pending;
            }
            std::thread::sleep(POLL); // polling the daemon's state under a deadline
        }
    }

    /// The last `n` non-empty lines this daemon wrote to its log.
    pub fn log_tail(&self, n: usize) -> Vec<String> {
        tail(&self.log, self.log_from, n)
    }
}

/// The last `n` non-empty lines of `path` after byte `from`.
fn tail(path: &Path, from: u64, n: usize) -> Vec<String> {
    let mut bytes = Vec::new();
    let read = File::open(path).and_then(|mut file| {
        file.seek(SeekFrom::Start(from))?;
        file.take(1 << 20).read_to_end(&mut bytes)
    });
    if read.is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<String> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}
