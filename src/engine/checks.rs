//! What a command passes before it runs, and what a failed batch leaves: the root still the
//! directory held open (`lost_root`), the directories the watch limit left unwatched verified
//! (`unwatched`), every earlier write recorded (G12: paths the store failed stay pending and
//! are retried with back-off; meanwhile commands that need them are refused).

use std::time::Instant;

use super::Command;
use super::checkpoint::Commit;
use super::worker::Worker;
use crate::capture::verify::VerifyError;
use crate::capture::{lost_root, unwatched};
use crate::model::answer::Outcome;
use crate::paths::RelPath;
use crate::refusal::Refusal;
use crate::restore::RollbackError;
use crate::restore::finish::{Concluded, NotRecorded, Pending};
use crate::stats::WorkspaceLost;
use crate::store::fault::{StorageFault, Unrecorded};

impl Worker {
    /// Paths a partial walk (a directory's rescan, the unwatched directories, the verification
    /// pass) could not store: pending beside those pending already.
    pub(super) fn also_failed(&mut self, mut failed: Vec<RelPath>, fault: Option<StorageFault>) {
        if failed.is_empty() {
            return;
        }
        failed.extend(self.owed.unrecorded.take().into_iter().flat_map(|u| u.paths));
        self.storage_outcome(failed, fault);
    }

    /// A rollback, undo or redo, once every earlier write is recorded; git as it left it is
    /// what the next marker compares with.
    pub(super) fn rollback(
        &mut self,
        request: crate::restore::Request,
        reply: tokio::sync::oneshot::Sender<Result<Outcome, RollbackError>>,
    ) {
        let result = crate::restore::perform(&mut self.conn, &self.ctx.workspace(), &request);
        self.git_moved();
        let result = result.map(|(concluded, effects)| {
            self.ctx.apply(effects);
            concluded
        });
        let result = self.answer_rollback(result);
        match &result {
            Err(err) if err.is_fault() => tracing::warn!(error = %err, "rollback failed"),
            Err(err) => tracing::info!(error = %err, "rollback refused"),
            Ok(_) => {}
        }
        let _ = reply.send(result);
        crate::capture::release_freed_memory();
    }

    /// The answer to a rollback: one applied but not recorded is kept (and retried before
    /// anything else is recorded), and the caller is told so.
    pub(super) fn answer_rollback(
        &mut self,
        result: Result<Concluded, RollbackError>,
    ) -> Result<Outcome, RollbackError> {
        match result? {
            Concluded::Recorded(outcome) => Ok(outcome),
            Concluded::NotRecorded(not_recorded) => {
                let NotRecorded { fault, pending } = *not_recorded;
                self.hold_pending_rollback(fault.clone(), pending);
                Err(RollbackError::AppliedNotRecorded(fault))
            }
        }
    }

    fn hold_pending_rollback(&mut self, fault: StorageFault, pending: Pending) {
        let paths = pending.paths();
        self.ctx.stats.storage_failed(&fault);
        self.owe(fault, paths);
        self.owed.rollback = Some(pending);
        // Woken with nothing else pending: the flush retries the rollback's record.
        self.batch.requeue([], Instant::now());
        self.batch.failed(Instant::now());
    }

    /// Records a rollback the store did not take, if there is one; false while it still
    /// cannot (then nothing else is recorded either).
    pub(super) fn record_pending_rollback(&mut self) -> bool {
        let Some(pending) = self.owed.rollback.take() else {
            return true;
        };
        let retried = pending.retry(&mut self.conn, &self.ctx.workspace());
        match retried {
            Ok(None) => {
                tracing::info!("a rollback applied during a storage fault is recorded now");
                self.fault_over();
                true
            }
            Ok(Some(not_recorded)) => {
                let NotRecorded { fault, pending } = *not_recorded;
                self.hold_pending_rollback(fault, pending);
                false
            }
            Err(err) => {
                // Not a storage fault: the journal still holds it, the next start finishes it.
                self.ctx
                    .stats
                    .set_error(format!("cannot record a rollback: {err}"));
                true
            }
        }
    }

    /// A walk the store failed: what it would have recorded is owed, `paths` among it, and
    /// the walk runs again (a whole rescan) before the next command, which is refused until
    /// it succeeds (G12).
    pub(super) fn owe_walk(&mut self, err: &rusqlite::Error, paths: Vec<RelPath>) {
        let fault = StorageFault::of_batch(err);
        self.ctx.stats.storage_failed(&fault);
        self.owe(fault, paths);
        self.owed.rescan = true;
    }

    /// A storage fault over: nothing is unrecorded now.
    fn fault_over(&mut self) {
        if self.owed.unrecorded.take().is_some() {
            self.ctx.stats.set_storage(None);
        }
    }

    /// A storage fault in force: `paths` (none, for a walk that must run again whole) are not
    /// recorded, and every command that changes the record is refused until they are (G12).
    pub(super) fn owe(&mut self, fault: StorageFault, paths: Vec<RelPath>) {
        self.ctx.stats.set_storage(Some((&fault, &paths)));
        self.owed.unrecorded = Some(Unrecorded { fault, paths });
    }

    /// After a batch: paths the store failed stay pending and are retried with back-off; with
    /// none, the fault (if any) is over.
    pub(super) fn storage_outcome(&mut self, failed: Vec<RelPath>, fault: Option<StorageFault>) {
        let (false, Some(fault)) = (failed.is_empty(), fault) else {
            self.batch.succeeded();
            self.fault_over();
            return;
        };
        self.batch.requeue(failed.iter().cloned(), Instant::now());
        self.batch.failed(Instant::now());
        self.owe(fault, failed);
    }

    /// Runs a command whose barrier has passed, unless the root was lost meanwhile, once
    /// the directories the watch limit left unwatched are verified.
    pub(super) fn run_command(&mut self, command: Command) {
        let Some(command) = self.admit(command) else {
            return;
        };
        self.verify_unwatched();
        self.execute(command);
        self.upkeep.wrote(Commit::Command);
    }

    /// The command back if the workspace root is still the directory held open; refused
    /// (`workspace_lost`) otherwise.
    pub(super) fn admit(&mut self, command: Command) -> Option<Command> {
        if !self.root_lost() {
            return Some(command);
        }
        if let Some(lost) = self.ctx.stats.workspace_lost() {
            refuse_lost(command, &lost);
        }
        None
    }

    /// True when the root is lost, now or before. The first time, capture stops: nothing
    /// pending is recorded and every command waiting for its cookie is refused.
    pub(super) fn root_lost(&mut self) -> bool {
        if self.ctx.stats.is_workspace_lost() {
            return true;
        }
        let Some(lost) = lost_root::check(&self.ctx.root) else {
            return false;
        };
        tracing::error!(root = %lost.root, what = %lost.what, "the workspace root is lost; capture has stopped");
        self.batch.clear();
        self.early.clear();
        for (cookie, command) in self.barrier.drain() {
            lost_root::remove_cookie(&self.ctx.root, &cookie);
            refuse_lost(command, &lost);
        }
        self.ctx.stats.set_workspace_lost(lost);
        true
    }

    /// What the directories the watch limit left unwatched hold now is recorded before a
    /// command runs (`unwatched`, G2).
    pub(super) fn verify_unwatched(&mut self) {
        let who = self.who();
        match unwatched::verify(&mut self.conn, &mut self.ctx, who) {
            Ok(recorded) => {
                self.since_trim += recorded.versions;
                if !recorded.requeue.is_empty() {
                    self.batch.requeue(recorded.requeue, Instant::now());
                }
                self.also_failed(recorded.failed, recorded.fault);
            }
            Err(err) => self.owe_walk(&err, Vec::new()),
        }
    }
}

/// Answers a command that cannot run: markers and rollbacks with `workspace_lost`; a sync (a
/// read of the history waiting for earlier writes) at once, since nothing more is recorded;
/// garbage collection by dropping its reply (the API says `workspace_lost`).
pub(super) fn refuse_lost(command: Command, lost: &WorkspaceLost) {
    let why = Refusal::WorkspaceLost(lost.message());
    match command.refuse(&why) {
        Some(Command::Sync { reply }) => {
            let _ = reply.send(());
        }
        Some(Command::Verify { reply }) => {
            let _ = reply.send(Err(VerifyError::Refused(why)));
        }
        // The root's rules cannot be read any more: the path is simply not recorded.
        Some(Command::WhyIgnored { reply, .. }) => {
            let _ = reply.send(None);
        }
        _ => {}
    }
}
