//! The worker's side of the verification pass (`capture::verify`): when the background pass
//! runs, `filewatchd verify`, and what a pass leaves to retry.

use std::time::Instant;

use super::worker::Worker;
use crate::capture::record::{Attribution, Recorded};
use crate::capture::verify::{self, VerifyError};
use crate::wire::upkeep::Verified;

impl Worker {
    /// The background verification pass, once the workspace has been quiet long enough and
    /// nothing else is waiting; it yields to a command sent meanwhile.
    pub(super) fn verify_when_due(&mut self, now: Instant) {
        if self.verify_deadline().is_none_or(|at| now < at) {
            return;
        }
        let (sent, taken) = (self.sent.clone(), self.taken);
        let yield_now = move || sent.waiting(taken);
        let never = || false;
        let stop: &(dyn Fn() -> bool + Sync) = if self.verify.may_yield() {
            &yield_now
        } else {
            &never
        };
        match verify::pass_at_idle(&mut self.conn, &mut self.ctx, stop) {
            Ok(Some(pass)) => self.verified(pass.recorded),
            Ok(None) => self.verify.yielded(Instant::now()),
            Err(err) => {
                self.ctx
                    .stats
                    .set_error(format!("verification pass failed: {err}"));
                self.verify.ran(Instant::now());
            }
        }
    }

    /// When the background pass is due; `None` while it is off or other work waits (that work
    /// wakes the worker anyway, and the deadline is asked again after it).
    pub(super) fn verify_deadline(&self) -> Option<Instant> {
        let busy = !self.batch.is_empty() || !self.barrier.is_empty() || self.lost.signalled();
        if busy {
            return None;
        }
        self.verify.due_at(self.batch.last_hint())
    }

    /// `filewatchd verify`: a pass now, at normal priority.
    pub(super) fn verify_now(&mut self) -> Result<Verified, VerifyError> {
        let verify::Pass { found, recorded } = verify::pass(&mut self.conn, &mut self.ctx)?;
        self.verified(recorded);
        Ok(found)
    }

    /// After a pass: the next one an interval from now; what kept changing is retried.
    fn verified(&mut self, recorded: Recorded) {
        self.verify.ran(Instant::now());
        // What it found may be attributed to an ended turn: that turn's counts went stale.
        if recorded.versions > 0 {
            self.upkeep.owe_counts();
        }
        self.since_trim += recorded.versions;
        if !recorded.requeue.is_empty() {
            self.batch.requeue(recorded.requeue, Instant::now());
        }
        self.also_failed(recorded.failed, recorded.fault);
        // What an ignore-rule change brings into view: found, and untracked until now; what
        // else it finds, found as well (no event says when it was written).
        if let Some(changed) = recorded.rules_changed {
            self.rescan_changed_rules(changed, Attribution::FOUND);
        }
    }
}
