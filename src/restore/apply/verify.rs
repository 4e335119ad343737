//! After applying, every done step is checked against its target on disk (G12): one that is
//! not there fails the rollback, with the cause a failed rollback's answer names.

use super::{Finished, note};
use crate::fs::feed::map_parallel;
use crate::model::answer::NoteCode;
use crate::restore::Workspace;
use crate::restore::plan::Ordered;
use crate::store::fault::{FaultCause, io_cause};

/// Paths checked at a time after applying.
const VERIFY_THREADS: usize = 16;

/// Why a step failed, as a failed rollback's `cause` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// An I/O error: its errno's name (`EIO`, `ENOSPC`, `EROFS`, ...).
    Io(FaultCause),
    /// An I/O error whose cause the sync did not keep.
    UnknownIo,
    /// After applying, the path was not at its target.
    NotAtTarget,
    /// The workspace root was moved away, removed or replaced while the rollback ran.
    WorkspaceLost,
}

impl Cause {
    pub fn of_io(err: &std::io::Error) -> Self {
        Self::Io(io_cause(err))
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(cause) => cause.fmt(f),
            Self::UnknownIo => f.write_str("io_error"),
            Self::NotAtTarget => f.write_str("not_at_target"),
            Self::WorkspaceLost => f.write_str("workspace_lost"),
        }
    }
}

impl serde::Serialize for Cause {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Cause {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?;
        Ok(match word.as_str() {
            "io_error" => Self::UnknownIo,
            "not_at_target" => Self::NotAtTarget,
            "workspace_lost" => Self::WorkspaceLost,
            errno => Self::Io(errno.parse().map_err(serde::de::Error::custom)?),
        })
    }
}

/// Checks every done step against its target on disk (type, content, executable bit, link
/// target); one that differs is failed.
pub fn verify(ws: &Workspace, steps: &[Ordered], results: &mut [Finished]) {
    let done: Vec<usize> = (0..steps.len())
        .filter(|&i| matches!(results[i], Finished::Done(_)))
        .collect();
    let found = map_parallel(done.len(), VERIFY_THREADS, |k| {
        ws.state_of(&steps[done[k]].step.path)
    });
    for (i, state) in done.into_iter().zip(found) {
        let step = &steps[i].step;
        if state.as_ref() == Some(&step.target) {
            continue;
        }
        let now = state.map_or("unreadable", |s| s.kind().name());
        let reason = format!(
            "after applying it is not at its target (a {} expected, found {now}, or other content)",
            step.target.kind().name()
        );
        results[i] = Finished::Failed(note(step, NoteCode::NotAtTarget, reason), Cause::NotAtTarget);
    }
}
