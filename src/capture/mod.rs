//! Hints to facts: what a path is now becomes a version (`record`, reading its paths through
//! `observe`, which takes what `crate::engine::early` read ahead as it is); the first index, the
//! restart reconcile and rescans share one walk (`rescan`, `walk`); the directories the watch
//! limit left unwatched are verified by a stat walk (`unwatched`); the verification pass finds
//! what no event reported (`verify`); `tracked` records when a path leaves or enters the
//! tracked set; `lost_root` tells whether the root is still the directory held open. The
//! engine decides when each runs; nothing here sends or answers a command.
//!
//! A path is a fact only after a re-read. A settled burst is recorded in one transaction, its
//! paths' latest versions read first so the readers skip what the index proves
//! (`crate::fs::read::observe_expecting`: a stat that proves a file unchanged spares the
//! open; content the latest version holds is hashed but not stored again). A burst nobody
//! waits for is read by helpers at idle priority beside the worker, so the agent's command
//! keeps the CPU. The walk stats nothing when the index is empty, else is compared with the
//! stat cache, read beside it (`known`: 40 bytes a path), each walker dropping what the cache
//! proves unchanged as soon as it lists it; readers observe its paths ahead of the writer in
//! large transactions. At start-up it runs beside the index's integrity check
//! (`crate::store::db::IntegrityCheck`); nothing is written before that passes. A clean exit settles the racy stat-cache entries so the next start re-reads
//! nothing unchanged. What the verification pass finds is attributed by the time it changed
//! (`crate::store::verified`); every rollback leaves a path alone at a moment it was untracked.

mod known;
pub mod lost_root;
mod observe;
pub mod owners;
pub mod record;
pub mod rescan;
pub mod tracked;
pub mod unwatched;
pub mod verify;
pub mod walk;

use std::sync::Arc;

use crate::fs::read::RootDir;
use crate::paths::RelPath;
use crate::stats::Stats;
use crate::store::blobs::BlobDir;
use crate::watch::Watches;
use crate::watch::filter::IgnoreRules;

/// Everything capture reads and watches with, apart from the database connection (the
/// engine owns both).
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
    /// Puts each ignore file found not applied since the last call in `status` (its last
    /// error), as it is in the log.
    pub fn said_refusals(&mut self) {
        for refusal in self.rules.take_refusals() {
            self.stats.set_error(refusal);
        }
    }

    /// What a rollback works with: the watcher only to let it catch up with its writes.
    pub fn workspace(&self) -> crate::restore::Workspace {
        crate::restore::Workspace::new(self.root.clone(), self.blobs.clone(), self.max_file_size)
            .with_drain(self.watches.drain())
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

/// Fewer allocator arenas, where the allocator has them (`platform::limit_malloc_arenas`).
pub fn limit_malloc_arenas() {
    crate::platform::limit_malloc_arenas();
}

/// Gives the memory a large batch freed back to the system (`platform::release_freed_memory`).
pub fn release_freed_memory() {
    crate::platform::release_freed_memory();
}

/// Test-only (`crate::test_knobs`): `FILEWATCHD_TEST_PANIC_ON=NAME` makes a reader panic when
/// it reads a path whose file name is NAME, so a test can watch the daemon end when its
/// capture thread dies.
pub(crate) fn panic_if_asked(path: &RelPath) {
    if crate::test_knobs::get().panic_on.as_deref() == Some(path.file_name()) {
        panic!("FILEWATCHD_TEST_PANIC_ON: a reader panics reading {path:?}");
    }
}
