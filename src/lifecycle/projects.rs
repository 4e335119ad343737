//! Every workspace with a state directory under the state home (`projects/<name>-<hash>/`):
//! its root, whether its daemon runs, what its store takes on disk and when its history last
//! changed; and forgetting one (deleting its state directory) once no daemon runs for it.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context as _, bail};

use super::{Located, Running, probe};
use crate::state;

/// One workspace's state directory, as found.
#[derive(Debug, Clone)]
pub struct Project {
    pub state_dir: PathBuf,
    /// The root its daemon watched; `None` when the directory does not say.
    pub root: Option<PathBuf>,
    /// Whether that root still is a directory.
    pub root_exists: bool,
    pub running: Running,
    /// Every file in the state directory, in bytes (the index, the blobs, the log).
    /// Everything in its state directory (content, index, log): what `forget` frees.
    pub disk_bytes: u64,
    /// When the index last changed (ms since the epoch).
    pub last_activity_ms: Option<i64>,
}

/// The state directories under the state home, by root.
pub fn list() -> anyhow::Result<Vec<Project>> {
    let projects = state::state_home()?.join("projects");
    let entries = match std::fs::read_dir(&projects) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", projects.display())),
    };
    let mut found: Vec<Project> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| describe(e.path()))
        .collect();
    found.sort_by(|a, b| a.root.cmp(&b.root).then_with(|| a.state_dir.cmp(&b.state_dir)));
    Ok(found)
}

fn describe(state_dir: PathBuf) -> Project {
    let root = root_of(&state_dir);
    let root_exists = root.as_deref().is_some_and(Path::is_dir);
    // Probed whether its root exists or not: a daemon whose root was removed still runs.
    let running = match &root {
        Some(root) => probe(&Located {
            root: root.clone(),
            state_dir: state_dir.clone(),
            explicit_state: false,
            passed_over: None,
        }),
        None => Running::Stopped,
    };
    Project {
        disk_bytes: bytes_under(&state_dir),
        last_activity_ms: last_activity(&state_dir),
        state_dir,
        root,
        root_exists,
        running,
    }
}

/// The root a state directory's daemon watched (its `root` file, if this user's or root's).
fn root_of(state_dir: &Path) -> Option<PathBuf> {
    let bytes = state::read_trusted(&state_dir.join("root")).ok()?;
    Some(PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The total size of the files beneath `dir` (not following symlinks).
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => bytes_under(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The latest change of the index (the database or its write-ahead log).
fn last_activity(state_dir: &Path) -> Option<i64> {
    ["index.sqlite", "index.sqlite-wal"]
        .iter()
        .filter_map(|name| {
            std::fs::metadata(state_dir.join(name))
                .and_then(|m| m.modified())
                .ok()
        })
        .filter_map(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .max()
}

/// The state directory of the workspace `dir` (which may no longer exist).
pub fn find(dir: &Path) -> anyhow::Result<Project> {
    let absolute = std::path::absolute(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    let canonical = crate::platform::ext::canonical(dir).ok();
    let wanted = |root: &Path| Some(root) == canonical.as_deref() || root == absolute;
    let found = list()?
        .into_iter()
        .find(|p| p.root.as_deref().is_some_and(wanted));
    match found {
        Some(project) => Ok(project),
        None => bail!(
            "filewatchd has no state for {}: `filewatchd projects` lists the workspaces it has",
            absolute.display()
        ),
    }
}

/// Refused while a daemon runs for `project`.
pub fn check_stopped(project: &Project) -> anyhow::Result<()> {
    if matches!(project.running, Running::Stopped) {
        return Ok(());
    }
    Err(running(project))
}

fn running(project: &Project) -> anyhow::Error {
    let root = project.root.as_deref().unwrap_or(&project.state_dir).display();
    anyhow::anyhow!("the filewatchd for {root} is running: stop it first (`filewatchd stop --root {root}`)")
}

/// Deletes the state directory of `project` (its whole history) unless a daemon runs for it.
/// The directory's lock is held meanwhile, so a daemon starting now refuses, as for a running one.
pub fn forget(project: &Project) -> anyhow::Result<()> {
    check_stopped(project)?;
    let dir = &project.state_dir;
    let lock_path = dir.join("lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        return Err(running(project));
    }
    std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))
}
