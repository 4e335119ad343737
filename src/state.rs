//! The project state directory (PRODUCT.md 6): where it is, the single-instance lock, the
//! bearer token and `daemon.json`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// What `daemon.json` says about a running daemon. It never holds the token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DaemonInfo {
    pub url: String,
    pub pid: u32,
    pub root: PathBuf,
    pub version: String,
}

/// What `indexing.json` says while a daemon runs its start-up walk (first index or
/// reconcile), before it listens: `filewatchd status` shows it meanwhile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Progress {
    pub pid: u32,
    pub root: PathBuf,
    pub started_at_ms: i64,
    /// Files read so far and to read; both `None` while the walk still lists the tree.
    pub read: Option<u64>,
    pub total: Option<u64>,
}

/// The name of the progress file in the state directory.
pub const PROGRESS_FILE: &str = "indexing.json";

/// `$FILEWATCHD_HOME`, else `$XDG_STATE_HOME/filewatchd`, else `~/.local/state/filewatchd`.
pub fn state_home() -> anyhow::Result<PathBuf> {
    if let Some(home) = env_path("FILEWATCHD_HOME") {
        return Ok(home);
    }
    if let Some(xdg) = env_path("XDG_STATE_HOME") {
        return Ok(xdg.join("filewatchd"));
    }
    let home = env_path("HOME").context("neither FILEWATCHD_HOME, XDG_STATE_HOME nor HOME is set")?;
    Ok(home.join(".local/state/filewatchd"))
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `projects/<root name>-<short hash of the canonical root>` under the state home.
pub fn project_dir(home: &Path, canonical_root: &Path) -> PathBuf {
    let name = canonical_root
        .file_name()
        .map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned());
    let hash = blake3::hash(canonical_root.as_os_str().as_encoded_bytes());
    let short = &hash.to_hex()[..12];
    home.join("projects").join(format!("{name}-{short}"))
}

/// The state directory of one workspace, held open by the running daemon.
pub struct StateDir {
    pub dir: PathBuf,
    _lock: File,
}

impl StateDir {
    /// Creates the directory (0700) and takes the single-instance lock (CRASH-07). The lock is
    /// an `flock`, released by the kernel when the process dies, so a killed daemon never
    /// leaves a lock that blocks a restart.
    /// It then says which workspace it watches (`root`), and drops a `daemon.json` an earlier,
    /// killed daemon left (the new one is written once it listens).
    pub fn acquire(dir: PathBuf, root: &Path) -> anyhow::Result<Self> {
        crate::store::create_dir_all_durably(&dir)
            .with_context(|| format!("cannot create state directory {}", dir.display()))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot set permissions on {}", dir.display()))?;
        let lock_path = dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .with_context(|| format!("cannot open {}", lock_path.display()))?;
        if !lock_exclusively(&lock) {
            bail!("{}", already_running_message(&dir));
        }
        let state = Self { dir, _lock: lock };
        state.remove_info();
        state.remove_progress();
        write_atomic(&state.dir.join("root"), root.as_os_str().as_encoded_bytes())?;
        Ok(state)
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.join("index.sqlite")
    }

    pub fn blob_dir(&self) -> PathBuf {
        self.dir.join("blobs")
    }

    /// Writes a fresh 256-bit token, readable by the owner only (SEC-03).
    pub fn write_token(&self) -> anyhow::Result<String> {
        let mut raw = [0u8; 32];
        rustix::rand::getrandom(&mut raw, rustix::rand::GetRandomFlags::empty())
            .context("cannot read random bytes for the token")?;
        let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        write_atomic(&self.dir.join("token"), token.as_bytes())?;
        Ok(token)
    }

    pub fn write_info(&self, info: &DaemonInfo) -> anyhow::Result<()> {
        let json = serde_json::to_vec_pretty(info)?;
        write_atomic(&self.dir.join("daemon.json"), &json)
    }

    /// The cookie instances (`watch::filter::cookie_instance`) of earlier daemons of this
    /// state directory whose cookies may still lie in the root.
    pub fn cookie_instances(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.dir.join("cookies")).unwrap_or_default();
        text.lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// Remembers `instances` durably: written before this daemon plants its first cookie, so
    /// a cookie a crash leaves is always recognised as this state directory's own.
    pub fn write_cookie_instances(&self, instances: &[String]) -> anyhow::Result<()> {
        write_atomic(&self.dir.join("cookies"), instances.join("\n").as_bytes())
    }

    pub fn remove_progress(&self) {
        let _ = std::fs::remove_file(self.dir.join(PROGRESS_FILE));
    }

    /// Removes `daemon.json` at a clean shutdown so clients do not try a dead URL.
    pub fn remove_info(&self) {
        let _ = std::fs::remove_file(self.dir.join("daemon.json"));
    }
}

/// Takes the lock, trying a few times over some 50 ms: `is_held` takes a shared lock for an
/// instant, and a daemon starting at that instant must not take it for a running one.
fn lock_exclusively(lock: &File) -> bool {
    for _ in 0..10 {
        if rustix::fs::flock(lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5)); // a retry, not a synchronisation
    }
    false
}

/// Whether a live daemon holds the directory's lock: a shared lock cannot be had beside its
/// exclusive one, and the kernel drops that the moment the daemon dies.
pub fn is_held(dir: &Path) -> bool {
    let Ok(lock) = File::open(dir.join("lock")) else {
        return false;
    };
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockShared).is_err()
}

fn already_running_message(dir: &Path) -> String {
    match read_info(dir) {
        Ok(info) => format!(
            "another filewatchd is already running for this workspace (pid {}, {}); stop it first",
            info.pid, info.url
        ),
        Err(_) => format!(
            "another filewatchd holds the lock in {} (it may still be starting); stop it first",
            dir.display()
        ),
    }
}

pub fn read_info(dir: &Path) -> anyhow::Result<DaemonInfo> {
    let path = dir.join("daemon.json");
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not valid", path.display()))
}

/// Rewrites `indexing.json` in the state directory `dir`.
pub fn write_progress(dir: &Path, progress: &Progress) -> anyhow::Result<()> {
    let json = serde_json::to_vec(progress)?;
    write_atomic(&dir.join(PROGRESS_FILE), &json)
}

/// The start-up walk's progress, if a daemon of `dir` is running one.
pub fn read_progress(dir: &Path) -> Option<Progress> {
    let bytes = std::fs::read(dir.join(PROGRESS_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn read_token(dir: &Path) -> anyhow::Result<String> {
    let path = dir.join("token");
    let token = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(token.trim().to_string())
}

/// temp file (0600) + fsync + rename: readers see the old file or the new one, never half.
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
