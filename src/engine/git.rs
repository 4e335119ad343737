//! The repository's state recorded at markers (`crate::git`): before a turn starts or ends,
//! before a tool call starts or ends, before a rollback. A few `stat`s tell whether anything
//! git keeps moved since the last look (`git::Repo::fingerprint`); only then is it read, and
//! only a change of refs or of staged entries is recorded, attributed as a write made now.

use super::worker::Worker;
use crate::capture::owners::Attribution;
use crate::git::GitState;
use crate::git::change::Recorded;
use crate::store::git::{self, MovedBy};

impl Worker {
    /// A rollback moved git and recorded what it did: the next marker compares with that.
    pub(super) fn git_moved(&mut self) {
        let recorded = git::at(&self.conn, i64::MAX).ok().flatten().map(|row| row.state);
        self.git.forget(recorded);
    }

    /// Records the repository's state if it changed since it was last recorded, as a write
    /// made now (`None`: by whoever `owners` says is writing).
    pub(super) fn record_git(&mut self, by: Option<Attribution>) {
        let Some((state, looked)) = self.git.look(&self.ctx.root.path) else {
            return;
        };
        if self.git.unchanged(&state) {
            self.git.seen(looked, None);
            return;
        }
        let by = by.unwrap_or_else(|| self.owners.who().batch);
        match self.store_git(&state, by) {
            Ok(recorded) => self.git.seen(looked, Some((recorded, state))),
            Err(err) => self
                .ctx
                .stats
                .set_error(format!("cannot record the repository's state: {err}")),
        }
    }

    /// Stores `state` as a new recorded state, in one transaction with its index's blob.
    fn store_git(&mut self, state: &GitState, by: Attribution) -> rusqlite::Result<Recorded> {
        let tx = self.conn.unchecked_transaction()?;
        let by = MovedBy {
            origin: by.origin,
            turn_id: by.turn_id,
            rollback_id: None,
            decided: by.decided,
        };
        let recorded = git::record(&tx, &self.ctx.blobs, state, &by, self.git.last_index())?;
        tx.commit()?;
        Ok(recorded)
    }
}
