//! The capture worker: the one owner of the SQLite writer. It turns watcher hints into
//! versions (`record`), runs the first index, the restart reconcile and rescans (`rescan`),
//! executes turn markers behind the barrier (`barrier`, `turns`), and runs the verification
//! pass for what no event reported (`verify`). `tracked` records
//! when a path leaves or enters the tracked set.

pub mod barrier;
mod lost;
mod lost_root;
pub mod record;
pub mod rescan;
pub mod tracked;
mod unwatched;
pub mod verify;
pub mod walk;
mod worker;

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::fs::read::RootDir;
use crate::paths::RelPath;
use crate::restore::outcome::Outcome;
use crate::restore::{Request, RollbackError};
use crate::retention::GcReport;
use crate::sessions::turns::{TurnError, TurnSelector, TurnStarted};
use crate::stats::Stats;
use crate::store::blobs::BlobDir;
use crate::store::sql::TurnRow;
use crate::watch::Watches;
use crate::watch::filter::IgnoreRules;

pub use worker::{Worker, WorkerHandle};

/// What reaches the worker, in order: hints from the watcher, and commands from the API.
pub enum Msg {
    /// A path an event named: something about it may have changed.
    Hint(RelPath),
    /// The watcher lost events: everything must be re-checked.
    Rescan,
    /// An event named the root itself (moved, removed, its attributes changed): is the root
    /// still the directory held open? (`lost_root`)
    RootChanged,
    Command(Command),
    Shutdown,
}

impl From<crate::watch::Hint> for Msg {
    fn from(hint: crate::watch::Hint) -> Self {
        match hint {
            crate::watch::Hint::Path(path) => Msg::Hint(path),
            crate::watch::Hint::Rescan => Msg::Rescan,
            crate::watch::Hint::RootChanged => Msg::RootChanged,
        }
    }
}

/// A turn marker, answered after the barrier.
pub enum Command {
    TurnStart {
        session: String,
        turn_ref: Option<String>,
        label: Option<String>,
        reply: oneshot::Sender<Result<TurnStarted, TurnError>>,
    },
    TurnEnd {
        session: String,
        turn: TurnSelector,
        /// A label for a turn started without one (Codex `notify` learns the prompt at the end).
        label: Option<String>,
        reply: oneshot::Sender<Result<TurnRow, TurnError>>,
    },
    /// Fork a session after one of its turns.
    Fork {
        parent: String,
        new_session: String,
        turn: TurnSelector,
        reply: oneshot::Sender<Result<TurnRow, TurnError>>,
    },
    /// Garbage collection (retention), or its dry run.
    Gc {
        dry_run: bool,
        reply: oneshot::Sender<rusqlite::Result<GcReport>>,
    },
    /// Nothing: answered once every write made before it is recorded, so a read that follows
    /// (a path's history, its content) sees them.
    Sync { reply: oneshot::Sender<()> },
    /// A rollback, undo or redo: planned and applied once every earlier write is recorded.
    Rollback {
        request: Request,
        reply: oneshot::Sender<Result<Outcome, RollbackError>>,
    },
    /// A verification pass now (G2), once every earlier write is recorded.
    Verify {
        reply: oneshot::Sender<Result<verify::Found, verify::VerifyError>>,
    },
}

/// Why a command that changes the record (a turn marker, a fork, a rollback) cannot run now.
#[derive(Debug, Clone)]
pub enum Refusal {
    /// The workspace root is lost (`lost_root`): the message says what became of it.
    WorkspaceLost(String),
    /// Writes made before it cannot be recorded (G12).
    Unrecorded(crate::store::fault::Unrecorded),
}

impl Command {
    /// Answers a turn marker, fork or rollback with `why`; gives any other command back.
    pub fn refuse(self, why: &Refusal) -> Option<Command> {
        match self {
            Command::TurnStart { reply, .. } => {
                let _ = reply.send(Err(why.into()));
            }
            Command::TurnEnd { reply, .. } | Command::Fork { reply, .. } => {
                let _ = reply.send(Err(why.into()));
            }
            Command::Rollback { reply, .. } => {
                let _ = reply.send(Err(why.into()));
            }
            other => return Some(other),
        }
        None
    }
}

impl From<&Refusal> for TurnError {
    fn from(why: &Refusal) -> Self {
        match why {
            Refusal::WorkspaceLost(message) => Self::WorkspaceLost(message.clone()),
            Refusal::Unrecorded(unrecorded) => Self::Unrecorded(unrecorded.clone()),
        }
    }
}

impl From<&Refusal> for RollbackError {
    fn from(why: &Refusal) -> Self {
        match why {
            Refusal::WorkspaceLost(message) => Self::WorkspaceLost(message.clone()),
            Refusal::Unrecorded(unrecorded) => Self::Unrecorded(unrecorded.clone()),
        }
    }
}

/// Everything the worker reads and watches with, apart from the database connection.
pub struct Context {
    pub root: Arc<RootDir>,
    pub blobs: Arc<BlobDir>,
    pub rules: IgnoreRules,
    pub watches: Watches,
    pub stats: Arc<Stats>,
    pub max_file_size: u64,
    pub retention: crate::config::Retention,
    pub verify: crate::config::Verify,
}

impl Context {
    /// What a rollback works with (it needs no watcher).
    pub fn workspace(&self) -> crate::restore::Workspace {
        crate::restore::Workspace::new(self.root.clone(), self.blobs.clone(), self.max_file_size)
    }

    /// A rollback's effects on the watches: removed directories first, then created ones.
    pub fn apply(&mut self, effects: crate::restore::Effects) {
        for dir in &effects.unwatch {
            self.watches.unwatch_tree(dir);
        }
        for dir in &effects.watch {
            self.watches.watch(dir);
        }
    }
}

/// Work above this many paths is followed by `release_freed_memory`.
pub const TRIM_AFTER: usize = 1000;

/// Two malloc arenas instead of glibc's eight per core: readers, walkers and fsync threads
/// each got an arena of their own, and what a batch freed in them lingered until trimmed, so
/// every large batch raised the daemon's peak RSS (W6: ≤ 100 MB). Called once, at start-up.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a glibc tunable; it is called before the threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Gives the memory a large batch freed back to the system: glibc keeps it in its arenas (one
/// per reader thread), so the daemon's RSS would stay at its peak for good.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and only walks glibc's own heaps, under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Test-only: `FILEWATCHD_TEST_PANIC_ON=NAME` makes a reader panic when it reads a path whose
/// file name is NAME, so a test can watch the daemon end when its capture thread dies
/// (issue 14 item 10). Unset in normal use; read once.
pub(crate) fn panic_if_asked(path: &RelPath) {
    static NAME: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    let name = NAME
        .get_or_init(|| std::env::var_os("FILEWATCHD_TEST_PANIC_ON").map(|n| n.as_encoded_bytes().to_vec()));
    if name.as_deref() == Some(path.file_name()) {
        panic!("FILEWATCHD_TEST_PANIC_ON: a reader panics reading {path:?}");
    }
}
