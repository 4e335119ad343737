//! The daemon of a workspace as seen from outside it: which workspace a directory belongs to
//! (`locate`), whether its daemon runs and answers (`probe`), starting one in the background
//! (`spawn`), stopping it (`stop`), the roots nobody should index without being asked
//! (`guard`), and every workspace with a state directory (`projects`). The CLI's `start`,
//! `stop`, `restart`, `projects` and `forget`, and the hooks' autostart, are built on it.

pub mod guard;
pub mod projects;
pub mod spawn;
pub mod stop;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::client::Client;
use crate::instance;
use crate::state::{self, DaemonInfo, Progress};

/// A workspace and where its state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The canonical root.
    pub root: PathBuf,
    pub state_dir: PathBuf,
    /// `--state-dir` was given: the daemon is told too.
    pub explicit_state: bool,
    /// A directory above that would have been the root by its marker, passed over because
    /// another user owns the marker or the directory (`Foreign::notice` says so).
    pub passed_over: Option<Foreign>,
}

/// A workspace marker another user owns: never what chooses this user's root or config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub path: PathBuf,
    pub owner: u32,
}

impl Foreign {
    /// The one line a command says of it.
    pub fn notice(&self) -> String {
        format!(
            "passed over {}: it belongs to uid {}, not to you or root, and another user's files never choose your workspace",
            self.path.display(),
            self.owner
        )
    }
}

/// How long `probe` waits for a daemon's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The workspace to start, stop or ask about: `root` if given; else the root `--state-dir`
/// says it watches; else, from `from` (default: the current directory) upwards, the nearest
/// directory with a running daemon, then the nearest with a state directory or a
/// `.filewatchd.toml` (never the home directory or `/` unless `from` is that very directory);
/// else `from` itself. A root that no longer exists is found by its record (the state
/// directory that names it), so its daemon can still be asked about and stopped.
pub fn locate(root: Option<&Path>, state_dir: Option<&Path>, from: Option<&Path>) -> anyhow::Result<Located> {
    let home = state::state_home()?;
    let given_root = match (root, state_dir) {
        (Some(root), _) => Some(root.to_path_buf()),
        (None, Some(dir)) => state::read_trusted(&dir.join("root"))
            .ok()
            .map(|bytes| PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())),
        (None, None) => None,
    };
    let mut passed_over = None;
    let (root, recorded_state) = match given_root {
        Some(root) => canonical_or_recorded(&home, &root, state_dir)?,
        None => {
            let from = match from {
                Some(dir) => dir.to_path_buf(),
                None => state::working_dir()?,
            };
            match canonical_or_recorded(&home, &from, state_dir)? {
                (from, None) => {
                    let (root, foreign) = nearest_workspace(&home, &from);
                    passed_over = foreign;
                    (root, None)
                }
                recorded => recorded,
            }
        }
    };
    let state_dir = match (state_dir, recorded_state) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(dir)) => dir,
        (None, None) => state::project_dir(&home, &root),
    };
    // Not the default state directory of `root`: the daemon must be told.
    let explicit_state = state_dir != state::project_dir(&home, &root);
    Ok(Located {
        root,
        state_dir,
        explicit_state,
        passed_over,
    })
}

/// `dir` made canonical; or, when it no longer exists, the root it belonged to by record
/// (with `--state-dir`, the root that directory names; else the state directory naming it
/// or an ancestor) and that state directory.
fn canonical_or_recorded(
    home: &Path,
    dir: &Path,
    state_dir: Option<&Path>,
) -> anyhow::Result<(PathBuf, Option<PathBuf>)> {
    let missing = match canonical(dir) {
        Ok(root) => return Ok((root, None)),
        Err(err) if dir.exists() => return Err(err),
        Err(err) => err,
    };
    if let Some(dir) = state_dir {
        let named = state::read_trusted(&dir.join("root")).ok();
        let named = named.map(|bytes| PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()));
        return match named {
            Some(root) => Ok((root, Some(dir.to_path_buf()))),
            None => Err(missing),
        };
    }
    match state::recorded_root(home, dir) {
        Some((root, state_dir)) => Ok((root, Some(state_dir))),
        None => bail!(
            "workspace root {} does not exist, and filewatchd has no record of it (`filewatchd projects` lists the workspaces it has)",
            dir.display()
        ),
    }
}

fn canonical(dir: &Path) -> anyhow::Result<PathBuf> {
    let canonical = crate::platform::ext::canonical(dir)
        .with_context(|| format!("workspace root {} does not exist", dir.display()))?;
    anyhow::ensure!(
        canonical.is_dir(),
        "workspace root {} is not a directory",
        canonical.display()
    );
    Ok(canonical)
}

/// The nearest directory from `from` up with a running daemon; else the nearest that
/// filewatchd knows or a marker makes a workspace, where neither the directory nor its marker
/// is another user's (anyone can plant a `.git` or a `.filewatchd.toml` in `/tmp`); else
/// `from`. Also the nearest such marker passed over.
fn nearest_workspace(home: &Path, from: &Path) -> (PathBuf, Option<Foreign>) {
    let running = from.ancestors().find(|dir| {
        if instance::locks_usable(dir) {
            instance::holder_of(dir).is_some()
        } else {
            state::is_held(&state::project_dir(home, dir))
        }
    });
    if let Some(dir) = running {
        return (dir.to_path_buf(), None);
    }
    let mut passed_over = None;
    let known = from
        .ancestors()
        .take_while(|dir| *dir == from || guard::risk(dir).is_none())
        .find(|dir| {
            if state::project_dir(home, dir).join("root").is_file() {
                return true;
            }
            let Some(marker) = marker_of(dir) else {
                return false;
            };
            match foreign_owner(dir, &marker) {
                Some(foreign) if *dir != from => {
                    passed_over.get_or_insert(foreign);
                    false
                }
                _ => true,
            }
        });
    (known.unwrap_or(from).to_path_buf(), passed_over)
}

/// Whether `loc` is where the user works, as a hook's autostart asks: filewatchd has a
/// record of it (or was given its state directory), or its root holds a project marker or
/// config that is the user's (or root's), in a directory that is too. A payload's `cwd` of
/// `/etc` or `/tmp` is neither.
pub fn is_users_project(loc: &Located) -> bool {
    if loc.explicit_state || loc.state_dir.join("root").is_file() {
        return true;
    }
    marker_of(&loc.root).is_some_and(|marker| foreign_owner(&loc.root, &marker).is_none())
}

/// The config file or project marker that makes `dir` a workspace's root, if any.
fn marker_of(dir: &Path) -> Option<PathBuf> {
    std::iter::once(crate::config::CONFIG_FILE)
        .chain(PROJECT_MARKERS)
        .map(|name| dir.join(name))
        .find(|path| path.symlink_metadata().is_ok())
}

/// The marker or directory of the two that another user (not root) owns.
fn foreign_owner(dir: &Path, marker: &Path) -> Option<Foreign> {
    [marker, dir].into_iter().find_map(|path| {
        let owner = crate::platform::ext::owner_of(&path.symlink_metadata().ok()?);
        (!state::is_trusted_owner(owner)).then(|| Foreign {
            path: path.to_path_buf(),
            owner,
        })
    })
}

/// What marks the root of a project: a git repository, or an agent's project settings (where
/// `hook install` puts the hooks). A hook run from a subdirectory (an agent that `cd`ed into
/// `src/`) then starts the daemon for the whole project, not for `src/`.
const PROJECT_MARKERS: [&str; 6] = [".git", ".claude", ".gemini", ".codex", ".opencode", ".pi"];

/// What runs for a workspace.
#[derive(Debug, Clone)]
pub enum Running {
    /// It answers at `info.url`.
    Answering(DaemonInfo),
    /// It runs its start-up walk (first index or reconcile) and has no URL yet.
    Indexing {
        pid: Option<u32>,
        progress: Option<Progress>,
    },
    /// It holds the workspace and wrote its URL, but does not answer.
    Silent(DaemonInfo),
    /// A daemon with another state directory watches this very tree.
    Elsewhere(instance::Holder),
    Stopped,
}

impl Running {
    /// The daemon's pid, when known.
    pub fn pid(&self) -> Option<u32> {
        match self {
            Running::Answering(info) | Running::Silent(info) => Some(info.pid),
            Running::Indexing { pid, .. } => *pid,
            Running::Elsewhere(holder) => Some(holder.pid),
            Running::Stopped => None,
        }
    }
}

/// Whether the daemon of `loc` runs, and answers `GET /v1/status`: the one holding the lock of
/// the tree at `loc.root`, else the one whose tree lock's note names `loc.state_dir` (its root
/// removed or replaced). Nothing here takes a lock a starting daemon could find taken: the
/// machine-wide tree locks are tested without taking them; the state directory's own lock
/// only where the tree locks cannot be used.
pub fn probe(loc: &Located) -> Running {
    probe_asking(loc, true)
}

/// As `probe`, without asking the daemon: one that wrote its URL counts as answering (a hook
/// sends its marker right after, and a failure then says so).
pub fn probe_quietly(loc: &Located) -> Running {
    probe_asking(loc, false)
}

/// How long a probe waits for a daemon killed a moment ago to let go of its workspace.
const EXIT_WAIT: Duration = Duration::from_secs(5);

fn probe_asking(loc: &Located, ask: bool) -> Running {
    let until = Instant::now() + EXIT_WAIT;
    loop {
        let running = probe_once(loc, ask);
        // A daemon that does not answer because it is dying (`kill -9` returns before the
        // kernel has torn it down and released its lock), or whose lock note names a daemon
        // gone already (its successor has not written its own yet), is not what holds the
        // workspace: what comes next is, once it shows.
        match &running {
            Running::Silent(info) if is_gone_or_going(info) && Instant::now() < until => {}
            _ => return running,
        }
        std::thread::sleep(Duration::from_millis(10)); // polling the process, not synchronising
    }
}

/// The daemon named by `info` has died or is dying.
pub fn is_gone_or_going(info: &DaemonInfo) -> bool {
    instance::process::is_gone_or_going(info.pid, info.started)
}

fn probe_once(loc: &Located, ask: bool) -> Running {
    let holder = instance::holder_of(&loc.root).or_else(|| instance::holder_for_state(&loc.state_dir));
    let pid = match holder {
        Some(holder) if holder.state_dir != loc.state_dir => return Running::Elsewhere(holder),
        Some(holder) => Some(holder.pid),
        None if instance::locks_usable(&loc.root) => return Running::Stopped,
        None if state::is_held(&loc.state_dir) => None,
        None => return Running::Stopped,
    };
    let dir = &loc.state_dir;
    match state::read_info(dir) {
        // A daemon.json left by a killed daemon names another pid (a starting one removes it).
        Ok(info) if pid.is_none_or(|pid| pid == info.pid) => {
            if !ask || answers(dir) {
                Running::Answering(info)
            } else {
                Running::Silent(info)
            }
        }
        _ => {
            let progress = state::read_progress(dir).filter(|p| pid.is_none_or(|pid| pid == p.pid));
            let pid = pid.or(progress.as_ref().map(|p| p.pid));
            Running::Indexing { pid, progress }
        }
    }
}

fn answers(dir: &Path) -> bool {
    Client::at(dir, PROBE_TIMEOUT)
        .is_ok_and(|client| client.get_as::<serde::de::IgnoredAny>("/v1/status").is_ok())
}
