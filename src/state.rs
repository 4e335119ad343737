//! The project state directory (docs/daemon.md): where it is, the single-instance lock, the
//! bearer token and `daemon.json`. What is read back from it is believed only when this user
//! (or root) owns it: a file another user planted is ignored, and the error says so.

use crate::platform::ext::OpenExt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
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
    /// When the process started (`instance::process::start_time`): `stop` signals `pid` only
    /// while it is the process that started then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
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
    /// As `DaemonInfo::started`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
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
    // Windows: `%LOCALAPPDATA%\filewatchd`, the user's own (its ACL keeps others out).
    #[cfg(windows)]
    if let Some(local) = env_path("LOCALAPPDATA") {
        return Ok(local.join("filewatchd"));
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

/// The workspace a path that no longer exists belonged to, by its record: the root (that
/// path or the nearest of its ancestors a state directory under `home` names in its `root`
/// file) and that state directory. The root may have been removed, moved or replaced while
/// its daemon still runs: the record, not the directory, says where its state is.
pub fn recorded_root(home: &Path, path: &Path) -> Option<(PathBuf, PathBuf)> {
    let absolute = std::path::absolute(path).ok()?;
    let candidates: Vec<PathBuf> = [Some(absolute.clone()), canonical_above(&absolute)]
        .into_iter()
        .flatten()
        .collect();
    let listed = recorded_roots(home);
    candidates.iter().find_map(|candidate| {
        candidate
            .ancestors()
            .take_while(|dir| !dir.exists())
            .find_map(|dir| listed.iter().find(|(root, _)| root == dir).cloned())
    })
}

/// `path` with its nearest existing ancestor canonical (a symlink on the way resolved), the
/// rest as given.
fn canonical_above(path: &Path) -> Option<PathBuf> {
    let existing = path.ancestors().find(|dir| dir.exists())?;
    let rest = path.strip_prefix(existing).ok()?;
    Some(crate::platform::ext::canonical(existing).ok()?.join(rest))
}

/// Every state directory under `home` with the root its `root` file names (only files of
/// this user's or root's are believed).
fn recorded_roots(home: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(home.join("projects")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let dir = entry.path();
            let bytes = read_trusted(&dir.join("root")).ok()?;
            Some((PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()), dir))
        })
        .collect()
}

/// The current directory; when it was removed under this process (its shell still in it),
/// the path the shell says it is in (`$PWD`), so its workspace can still be found by record.
pub fn working_dir() -> anyhow::Result<PathBuf> {
    let err = match std::env::current_dir() {
        Ok(dir) => return Ok(dir),
        Err(err) => err,
    };
    match env_path("PWD") {
        Some(pwd) if err.kind() == std::io::ErrorKind::NotFound && pwd.is_absolute() => Ok(pwd),
        _ => Err(err).context("cannot read the current directory"),
    }
}

/// The state directory of one workspace, held open by the running daemon.
pub struct StateDir {
    pub dir: PathBuf,
    _lock: File,
}

impl StateDir {
    /// Creates the directory (0700) and takes the single-instance lock. The lock is
    /// an `flock`, released by the kernel when the process dies, so a killed daemon never
    /// leaves a lock that blocks a restart.
    /// It then says which workspace it watches (`root`), and drops a `daemon.json` an earlier,
    /// killed daemon left (the new one is written once it listens).
    pub fn acquire(dir: PathBuf, root: &Path) -> anyhow::Result<Self> {
        crate::store::create_dir_all_durably(&dir)
            .with_context(|| format!("cannot create state directory {}", dir.display()))?;
        crate::platform::ext::set_permission_bits(&dir, 0o700)
            .with_context(|| format!("cannot set permissions on {}", dir.display()))?;
        let lock_path = dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .permission_bits(0o600)
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

    /// Writes a fresh 256-bit token, readable by the owner only.
    pub fn write_token(&self) -> anyhow::Result<String> {
        let mut raw = [0u8; 32];
        crate::platform::random_bytes(&mut raw).context("cannot read random bytes for the token")?;
        let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        write_atomic(&self.dir.join("token"), token.as_bytes())?;
        Ok(token)
    }

    pub fn write_info(&self, info: &DaemonInfo) -> anyhow::Result<()> {
        let json = serde_json::to_vec_pretty(info)?;
        write_atomic(&self.dir.join("daemon.json"), &json)
    }

    /// The cookie instances (`fs::cookie::cookie_instance`) of earlier daemons of this
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
        if lock.try_lock().is_ok() {
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
    lock.try_lock_shared().is_err()
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
    let bytes = read_trusted(&path)?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not valid", path.display()))
}

/// Rewrites `indexing.json` in the state directory `dir`.
pub fn write_progress(dir: &Path, progress: &Progress) -> anyhow::Result<()> {
    let json = serde_json::to_vec(progress)?;
    write_atomic(&dir.join(PROGRESS_FILE), &json)
}

/// The start-up walk's progress, if a daemon of `dir` is running one.
pub fn read_progress(dir: &Path) -> Option<Progress> {
    let bytes = read_trusted(&dir.join(PROGRESS_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn read_token(dir: &Path) -> anyhow::Result<String> {
    let path = dir.join("token");
    let token =
        String::from_utf8(read_trusted(&path)?).with_context(|| format!("{} is not text", path.display()))?;
    Ok(token.trim().to_string())
}

/// The bytes of the index in the state directory `dir`: the database, its write-ahead log and
/// its shared memory (what `status`, `doctor` and `projects` call the index).
pub fn index_bytes(dir: &Path) -> u64 {
    ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"]
        .iter()
        .filter_map(|name| std::fs::metadata(dir.join(name)).ok())
        .map(|meta| meta.len())
        .sum()
}

/// This process's effective uid.
pub fn euid() -> u32 {
    crate::platform::ext::euid()
}

/// Whether what `uid` owns may be believed: this user's or root's (root can write anything
/// anyway). Anything another local user can write is never trusted.
pub fn is_trusted_owner(uid: u32) -> bool {
    uid == euid() || uid == 0
}

/// The most read of a state file: each is a line or a small JSON object.
const STATE_FILE_LIMIT: u64 = 1 << 20;

/// The bytes of the regular file `path`, opened without following a symlink, when it and its
/// directory are this user's (or root's); else an error saying whose they are.
pub fn read_trusted(path: &Path) -> anyhow::Result<Vec<u8>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let meta = std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        check_owner(dir, crate::platform::ext::owner_of(&meta))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .no_follow()
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file: ignored", path.display());
    }
    check_owner(path, crate::platform::ext::owner_of(&meta))?;
    let mut bytes = Vec::new();
    file.take(STATE_FILE_LIMIT)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(bytes)
}

/// Refuses what another user owns, naming it and its owner.
pub fn check_owner(path: &Path, uid: u32) -> anyhow::Result<()> {
    if is_trusted_owner(uid) {
        return Ok(());
    }
    bail!(
        "{} belongs to uid {uid}, not to you (uid {}) or root: ignored, as is anything another user can write",
        path.display(),
        euid()
    )
}

/// temp file (0600) + fsync + rename: readers see the old file or the new one, never half.
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .permission_bits(0o600)
        .no_follow()
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
