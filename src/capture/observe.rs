//! Reading the paths of a batch: each observed (in parallel when there are many, at idle
//! priority when nobody waits), what the index proves unchanged skipped, what was read early
//! (`engine::early`) taken as it is.

use std::collections::HashMap;
use std::sync::Arc;

use indicatif::ProgressBar;

use super::Context;
use crate::fs::feed::{map_parallel, map_parallel_at_idle};
use crate::fs::fuse;
use crate::fs::read::{Expected, Observation, RootDir, observe, observe_expecting, observe_file};
use crate::model::RACY_NS;
use crate::paths::RelPath;
use crate::store::blobs::BlobDir;
use crate::store::sql::Latest;

const PARALLEL_ABOVE: usize = 16;
pub(super) const READERS: usize = 8;

/// A path read ahead of its batch (`engine::early`), and when that read began.
pub struct ReadEarly {
    pub observed: Observation,
    pub at_ns: i64,
}

/// An observation, and when it was taken if that was before its batch.
pub type Observed = (Observation, Option<i64>);

/// Who waits for a batch: nobody (it settled by itself, and the agent's command may still be
/// running: readers at idle priority, beside the worker reading at its own), or a command
/// (everyone at normal priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    Background,
    Waited,
}

/// What the readers may skip for a path the index knows.
fn expected(latest: &Latest) -> Expected {
    Expected {
        stat: latest.stat,
        stat_proves: latest.stat.mtime_ns + RACY_NS < latest.checked_ns,
        state: latest.state.clone(),
    }
}

/// What reading a path needs, shareable with reader threads.
#[derive(Clone)]
pub struct Observer {
    pub root: Arc<RootDir>,
    pub blobs: Arc<BlobDir>,
    pub max_file_size: u64,
}

impl Context {
    pub fn observer(&self) -> Observer {
        Observer {
            root: self.root.clone(),
            blobs: self.blobs.clone(),
            max_file_size: self.max_file_size,
        }
    }
}

impl Observer {
    /// Reads one path; `file` when a walk has just seen a regular file there.
    pub(super) fn observe_one(
        &self,
        path: &RelPath,
        file: bool,
        progress: Option<&ProgressBar>,
    ) -> Observation {
        super::panic_if_asked(path);
        let observed = if file {
            observe_file(&self.root, path, self.max_file_size, &self.blobs)
        } else {
            observe(&self.root, path, self.max_file_size, &self.blobs)
        };
        if let Some(bar) = progress {
            bar.inc(1);
        }
        observed
    }

    /// Observes every path, in parallel when there are many, in the order given, skipping
    /// what `known` proves (`observe_expecting`) and taking what `early` read already.
    pub(super) fn observe_all(
        &self,
        work: &[RelPath],
        known: &HashMap<RelPath, Latest>,
        priority: Priority,
        early: &mut HashMap<RelPath, ReadEarly>,
    ) -> Vec<Observed> {
        let mut read: Vec<Option<Observed>> = work
            .iter()
            .map(|p| early.remove(p).map(|e| (e.observed, Some(e.at_ns))))
            .collect();
        let left: Vec<&RelPath> = work
            .iter()
            .zip(&read)
            .filter(|(_, r)| r.is_none())
            .map(|(p, _)| p)
            .collect();
        let mut observed = self.observe_left(&left, known, priority).into_iter();
        for slot in read.iter_mut().filter(|r| r.is_none()) {
            // As many as were left: `Unstable` (read again later) never stands in.
            *slot = Some((observed.next().unwrap_or(Observation::Unstable), None));
        }
        read.into_iter().flatten().collect()
    }

    fn observe_left(
        &self,
        work: &[&RelPath],
        known: &HashMap<RelPath, Latest>,
        priority: Priority,
    ) -> Vec<Observation> {
        let one = |i: usize| {
            let path = work[i];
            super::panic_if_asked(path);
            let expected = known.get(path).map(expected);
            observe_expecting(
                &self.root,
                path,
                self.max_file_size,
                &self.blobs,
                expected.as_ref(),
            )
        };
        if work.len() <= PARALLEL_ABOVE {
            return (0..work.len()).map(one).collect();
        }
        // Not on FUSE, where a file a starved reader holds open is visible (`fs::fuse`).
        match priority {
            Priority::Background if fuse::reads_at_idle(self.root.fd()) => {
                map_parallel_at_idle(work.len(), READERS, one)
            }
            _ => map_parallel(work.len(), READERS, one),
        }
    }
}
