//! The engine: the single-writer loop. Everything that changes the record reaches one thread
//! in order (`Msg`): the watcher's hints, and the API's commands (`Command`), each answered
//! once its barrier cookie comes back (`barrier`, G1). The worker (`worker`) owns the SQLite
//! writer and decides when each piece of work runs: it calls capture (hints to facts),
//! restore (rollbacks, returning their effects, which it applies) and retention; none of
//! them calls it back. `batch` holds the hinted paths and says when they are due; `early`
//! reads them while the command that wrote them still runs (idle priority), so the batch a
//! marker waits for finds them read, and records those ahead of it in blocks; `checks` is
//! what a command passes before it runs and what a failed batch leaves
//! (`crate::store::fault::StorageFault::of_batch`); `owed` (a type the worker owns) what the
//! store failed to take, which refuses commands with a `crate::refusal::Refusal` meanwhile;
//! `lost` the lost events as the queue sees them; `schedule` when the background verification
//! pass runs; `queued` the turn markers hooks queued while the daemon was starting
//! (`crate::queue`), each applied at its place among the hints; `upkeep` (a type the worker
//! owns) a collection a step at a time between hints, the turn counts stored when turns
//! end, the store size counter corrected once `drift` has measured it after the start, and
//! the write-ahead log checkpointed once the worker is quiet (`checkpoint`: a batch nobody
//! waits for commits without an fsync, in the middle of the agent's command).

pub mod barrier;
mod batch;
mod calls;
mod checkpoint;
mod checks;
mod drift;
mod early;
mod git;
mod lost;
mod owed;
mod queued;
mod rescans;
mod schedule;
mod upkeep;
mod verify_pass;
mod worker;

use tokio::sync::oneshot;

use crate::capture::verify;
use crate::model::answer::Outcome;
use crate::paths::RelPath;
use crate::pins::{PinError, Point};
use crate::refusal::Refusal;
use crate::restore::{Request, RollbackError};
use crate::retention::GcReport;
use crate::sessions::turns::{TurnError, TurnMarker, TurnSelector, TurnStarted};
use crate::store::pins::PinRow;
use crate::store::sql::TurnRow;

pub use worker::{Worker, WorkerHandle};

/// What reaches the worker, in order: hints from the watcher, and commands from the API.
pub enum Msg {
    /// A path an event named: something about it may have changed.
    Hint(RelPath),
    /// A path an event named as removed or moved away (`watch::Hint::Gone`): its watches, if
    /// it was a watched directory, are dropped at once; then it is a hint like any other.
    Gone(RelPath),
    /// The watcher lost events: everything must be re-checked.
    Rescan,
    /// An event named the root itself (moved, removed, its attributes changed): is the root
    /// still the directory held open? (`lost_root`)
    RootChanged,
    /// A hook queued a turn marker (the file's name in the queue, `queued`).
    Queued(std::ffi::OsString),
    Command(Command),
    Shutdown,
}

impl From<crate::watch::Hint> for Msg {
    fn from(hint: crate::watch::Hint) -> Self {
        match hint {
            crate::watch::Hint::Path(path) => Msg::Hint(path),
            crate::watch::Hint::Gone(path) => Msg::Gone(path),
            crate::watch::Hint::Rescan => Msg::Rescan,
            crate::watch::Hint::RootChanged => Msg::RootChanged,
            crate::watch::Hint::Queued(name) => Msg::Queued(name),
        }
    }
}

/// What the API asks of the worker (turn markers, rollbacks, forks, pins, reviews, gc, a
/// verification pass, a sync), each answered on its own channel after the barrier.
pub enum Command {
    TurnStart {
        session: String,
        marker: TurnMarker,
        reply: oneshot::Sender<Result<TurnStarted, TurnError>>,
    },
    TurnEnd {
        session: String,
        turn: TurnSelector,
        /// A label for a turn started without one (Codex `notify` learns the prompt at the end).
        label: Option<String>,
        reply: oneshot::Sender<Result<TurnRow, TurnError>>,
    },
    /// One of a session's tool calls starts or ends (`crate::capture::owners`), once every
    /// write made before it is recorded: those were made before the call, or inside it.
    ToolCall {
        session: String,
        phase: crate::wire::request::CallPhase,
        call: Box<crate::capture::owners::Call>,
        reply: oneshot::Sender<rusqlite::Result<crate::wire::turn::ToolCallMarked>>,
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
    /// Why a path is not tracked (which ignore rule hides it), once every earlier write is
    /// recorded (an ignore file just edited is in force).
    WhyIgnored {
        path: crate::paths::RelPath,
        reply: oneshot::Sender<Option<crate::watch::filter::Ignored>>,
    },
    /// A verification pass now (G2), once every earlier write is recorded.
    Verify {
        reply: oneshot::Sender<Result<crate::wire::upkeep::Verified, verify::VerifyError>>,
    },
    /// Make a pin, once every earlier write is recorded (a pin at "now" includes them).
    Pin {
        name: String,
        point: Point,
        reply: oneshot::Sender<Result<PinRow, PinError>>,
    },
    /// Delete a path's contents from the store (`store::purge`), once its latest write is
    /// recorded.
    Purge {
        path: crate::paths::RelPath,
        reply: oneshot::Sender<rusqlite::Result<Option<crate::store::purge::Purged>>>,
    },
    /// Remove a pin, in order with the writes.
    Unpin {
        name: String,
        reply: oneshot::Sender<Result<PinRow, PinError>>,
    },
    /// Mark a turn, or one file of it, reviewed (or not): the index only, never the files.
    Review {
        session: String,
        turn: TurnSelector,
        path: Option<crate::paths::RelPath>,
        reviewed: bool,
        reply: oneshot::Sender<Result<crate::sessions::review::Review, crate::sessions::turns::LookupError>>,
    },
}

impl Command {
    /// Whether the repository's state is recorded before it runs (`git`): at the markers of
    /// turns and tool calls, and before a rollback, a pin or a sync (what a read after it sees).
    pub fn moves_git(&self) -> bool {
        matches!(
            self,
            Command::TurnStart { .. }
                | Command::TurnEnd { .. }
                | Command::ToolCall { .. }
                | Command::Rollback { .. }
                | Command::Pin { .. }
                | Command::Sync { .. }
        )
    }

    /// Answers a turn marker, fork, rollback or pin with `why`; gives any other command back.
    pub fn refuse(self, why: &Refusal) -> Option<Command> {
        match self {
            Command::TurnStart { reply, .. } => {
                let _ = reply.send(Err(why.clone().into()));
            }
            Command::TurnEnd { reply, .. } | Command::Fork { reply, .. } => {
                let _ = reply.send(Err(why.clone().into()));
            }
            Command::Rollback { reply, .. } => {
                let _ = reply.send(Err(why.clone().into()));
            }
            Command::Pin { reply, .. } | Command::Unpin { reply, .. } => {
                let _ = reply.send(Err(why.clone().into()));
            }
            other => return Some(other),
        }
        None
    }
}
