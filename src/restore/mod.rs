//! Rollback, undo and redo (docs/guarantees.md G3-G7): plan, check, apply.
//!
//! - `chain` turns a request (rollback to a boundary, undo, redo) into a target sequence
//!   number, walking the session's chain of undos and redos.
//! - `plan` lists every tracked path changed since the target with its action, checks each
//!   for conflicts (G4: foreign changes since the boundary, disk differing from the record, a
//!   symlink in the way), verifies every blob it will need, and decides per `on_conflict`.
//!   The dry run is this plan (its `steps` and notes). A session's rollback takes back the
//!   session's own writes only (`own`): others' are kept, merged (`merge`: a three-way merge of
//!   lines) when they changed a file after it, or a conflict (`foreign`: their changes in words).
//! - `journaled` writes the plan durably (the journal) before anything is touched; `apply`
//!   then changes the files through `crate::fs::ops` (confined, symlink-free, temp + fsync +
//!   rename, no clobber) and checks each against its target (`apply::verify`); `finish`
//!   records the result as versions of origin `rollback` and commits, or puts back what a
//!   failed one changed (all or nothing, G12). A committed one returns its `Effects`, the
//!   directories it made or removed, for the caller to watch or unwatch.
//! - `redo` plans a redo: only the paths the rollback it names changed, each back to its
//!   state just before it; any of them changed since by anything else is a conflict.
//! - `revert` plans the revert of one file of a turn, or of one hunk of it (a new blob).
//! - `recover` finishes, at start-up, a rollback a crash interrupted.
//! - `outcome` makes the answer (`model::answer::Outcome`): what was (or would be) done, path
//!   by path, as stored with the rollback and answered (`wire::rollback`).

pub(crate) mod apply;
mod case;
pub(crate) mod chain;
pub(crate) mod finish;
mod foreign;
pub(crate) mod git;
mod journaled;
mod merge;
pub(crate) mod outcome;
mod outside;
mod own;
mod pause;
pub mod plan;
pub(crate) mod recover;
pub(crate) mod redo;
pub(crate) mod revert;
mod run;
mod steps;
#[cfg(test)]
mod tests;

pub use run::perform;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::fs::cookie::Drain;
use crate::fs::read::RootDir;
use crate::model::RollbackKind;
use crate::model::answer::{Actor, OnConflict};
use crate::store::blobs::BlobDir;

use crate::paths::RelPath;
use crate::sessions::turns::TurnSelector;

/// What a rollback works with: the workspace's root held open, the blob store and the size
/// limit. It needs no watcher: what the watcher is to do after it comes back as `Effects`.
pub struct Workspace {
    pub root: Arc<RootDir>,
    pub blobs: Arc<BlobDir>,
    pub max_file_size: u64,
    /// The watcher a rollback writing many files lets catch up (`fs::cookie::Drain`); `None`:
    /// nothing watches (a test's restore).
    pub drain: Option<Arc<Drain>>,
}

/// What a rollback changed on disk that its caller applies: directories it created are to be
/// watched, those it removed (a directory turned into a file or removed) unwatched.
#[derive(Debug, Default)]
pub struct Effects {
    pub watch: Vec<RelPath>,
    pub unwatch: Vec<RelPath>,
}

impl Workspace {
    pub fn new(root: Arc<RootDir>, blobs: Arc<BlobDir>, max_file_size: u64) -> Self {
        Self {
            root,
            blobs,
            max_file_size,
            drain: None,
        }
    }

    /// The watcher this workspace's rollbacks let catch up with their writes.
    pub fn with_drain(self, drain: Arc<Drain>) -> Self {
        Self {
            drain: Some(drain),
            ..self
        }
    }

    /// What `path` holds on disk now; `None` when that cannot be told (it kept changing while
    /// read, it is a FIFO or a device, it cannot be read, the store refused its content).
    pub fn state_of(&self, path: &RelPath) -> Option<crate::model::State> {
        use crate::fs::read::{Observation, probe};
        match probe(&self.root, path, self.max_file_size) {
            Observation::Absent => Some(crate::model::State::Absent),
            Observation::Present(present) => Some(present.state),
            _ => None,
        }
    }
}

impl Effects {
    /// What the steps done changed: a directory a step created, or one it removed.
    pub fn of(steps: &[plan::Ordered], results: &[apply::Finished]) -> Self {
        let mut effects = Self::default();
        for (plan::Ordered { step, .. }, finished) in steps.iter().zip(results) {
            if !matches!(finished, apply::Finished::Done(_)) {
                continue;
            }
            if step.target.is_dir() {
                effects.watch.push(step.path.clone());
            } else if step.current.is_dir() {
                effects.unwatch.push(step.path.clone());
            }
        }
        effects
    }

    pub fn extend(&mut self, more: Effects) {
        self.watch.extend(more.watch);
        self.unwatch.extend(more.unwatch);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Boundary {
    Before,
    After,
}

/// Which state a request asks for.
#[derive(Debug, Clone)]
pub enum Operation {
    Rollback {
        to: Boundary,
        turn: TurnSelector,
    },
    Undo,
    Redo,
    /// The workspace as recorded at a time (milliseconds since the epoch).
    Time {
        at_ms: i64,
    },
    /// The point a pin names (checked as a time rollback).
    Pin {
        name: String,
    },
    /// Some paths as recorded at a sequence number: each one's latest version at or before
    /// it (`restore --seq`, a version `history` lists).
    Seq {
        seq: i64,
    },
    /// One file of a turn back to the turn's start, or one hunk of the turn's diff of it taken
    /// back (`revert`): a rollback of the session restricted to that path.
    Revert {
        turn: TurnSelector,
        /// The hunk's index in the turn's unified diff of the path (a `u16` keeps the
        /// engine's command small).
        hunk: Option<u16>,
    },
}

impl Operation {
    /// What the journal and the answer call it: a rollback to a turn or a time is a rollback.
    pub fn kind(&self) -> RollbackKind {
        match self {
            Self::Undo => RollbackKind::Undo,
            Self::Redo => RollbackKind::Redo,
            Self::Rollback { .. }
            | Self::Time { .. }
            | Self::Pin { .. }
            | Self::Seq { .. }
            | Self::Revert { .. } => RollbackKind::Rollback,
        }
    }
}

/// One rollback-like request, as the API and the CLI send it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `None` for a time rollback (or its redo), made without any agent integration.
    pub session: Option<String>,
    pub operation: Operation,
    pub on_conflict: OnConflict,
    pub dry_run: bool,
    /// Restrict the rollback to these paths (and what lies beneath them).
    pub paths: Vec<RelPath>,
    pub op_id: Option<String>,
    /// Include unified diffs of what each text file would become.
    pub diff: bool,
    /// Who asked for it, when not the user; stored with the rollback's answer and shown in
    /// the timeline.
    pub actor: Option<Actor>,
}

#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error(transparent)]
    Lookup(#[from] crate::sessions::turns::LookupError),
    #[error("turn {turn} of session {session:?} is still open: end it first")]
    TurnOpen { session: String, turn: i64 },
    #[error(
        "nothing at or beneath '{0}' was ever recorded (paths are relative to the workspace; ignored paths are never recorded)"
    )]
    NeverRecorded(String),
    #[error("session {0:?} has nothing left to undo")]
    NothingToUndo(String),
    #[error(
        "session {0:?} has nothing to redo: a redo follows an undo or rollback not yet redone, and a new turn ends the chain (a rollback to a time or a pin is redone with `filewatchd redo --time`)"
    )]
    NothingToRedo(String),
    #[error("there is no time rollback to redo")]
    NothingToRedoInTime,
    #[error(transparent)]
    Revert(#[from] revert::RevertError),
    #[error("no pin named {0:?}")]
    UnknownPin(String),
    /// A time rollback to a time not reached yet (a local time typed as UTC, a typo).
    #[error("{0} is in the future: a rollback goes back to a state already recorded")]
    FutureTime(String),
    #[error("that state (seq {seq}) was removed by retention; the oldest exact state is seq {horizon}")]
    Expired { seq: i64, horizon: i64 },
    #[error(transparent)]
    BeforeHistory(#[from] crate::history::BeforeHistory),
    #[error("op_id {op_id:?} was already used for another request ({was}): use a new op_id")]
    OpIdReused { op_id: String, was: String },
    #[error("undo and rollback to a turn need a session")]
    NeedsSession,
    /// A sequence number that names no recorded state, or one given without paths.
    #[error("{0}")]
    BadSeq(String),
    #[error("the index failed: {0}")]
    Store(#[from] rusqlite::Error),
    /// A step failed (G12): what the rollback changed was put back, or the answer says which
    /// path is where.
    #[error("{0}")]
    Failed(Box<finish::Failure>),
    /// Applied on disk, but the index cannot record it yet: the engine keeps it and retries.
    #[error(
        "the rollback was applied on disk, but the index cannot record it yet: {0}; it is recorded as soon as the store takes writes again (or at the next start), and until then turn markers and rollbacks are refused"
    )]
    AppliedNotRecorded(crate::store::fault::StorageFault),
    #[error(transparent)]
    Refused(#[from] crate::refusal::Refusal),
    /// git's part could not be moved (a git command moved a ref meanwhile, holds
    /// `index.lock`, or git failed): what moved was put back, no file was touched.
    #[error("the rollback could not move git back: {0}; what it moved was put back and no file was changed")]
    Git(String),
}

impl RollbackError {
    /// A fault of the daemon or its storage (the log's WARN), not a request the user can fix
    /// (an unknown session, nothing to undo, an expired state: the log's INFO).
    pub fn is_fault(&self) -> bool {
        use crate::refusal::Refusal;
        use crate::sessions::turns::LookupError;
        match self {
            Self::Lookup(LookupError::Store(_))
            | Self::Store(_)
            | Self::Refused(Refusal::Unrecorded(_) | Refusal::WorkspaceLost(_))
            | Self::Failed(_)
            | Self::AppliedNotRecorded(_) => true,
            Self::Lookup(LookupError::UnknownSession(_) | LookupError::UnknownTurn { .. })
            | Self::TurnOpen { .. }
            | Self::NeverRecorded(_)
            | Self::NothingToUndo(_)
            | Self::NothingToRedo(_)
            | Self::NothingToRedoInTime
            | Self::Expired { .. }
            | Self::BeforeHistory(_)
            | Self::OpIdReused { .. }
            | Self::NeedsSession
            | Self::UnknownPin(_)
            | Self::FutureTime(_)
            | Self::Revert(_)
            | Self::BadSeq(_)
            | Self::Refused(Refusal::Unavailable)
            | Self::Git(_) => false,
        }
    }
}
