//! The repository's state recorded at markers (`crate::git`): before a turn starts or ends,
//! before a tool call starts or ends, before a rollback. A few `stat`s tell whether anything
//! git keeps moved since the last look (`git::Repo::fingerprint`); only then is it read, and
//! only a change of refs or of staged entries is recorded, attributed as a write made now.

use super::worker::Worker;
use crate::capture::owners::Attribution;
use crate::git::change::{IndexAt, Recorded};
use crate::git::{Fingerprint, GitState, Repo};
use crate::model::Hash;
use crate::store::git::{self, NewGitState};

/// The repository, what was last recorded of it, and the stat data it was last read at.
#[derive(Default)]
pub(super) struct GitRecord {
    repo: Option<Repo>,
    looked: Option<Fingerprint>,
    recorded: Option<Recorded>,
}

impl GitRecord {
    /// The workspace's repository and its latest recorded state.
    pub(super) fn load(conn: &rusqlite::Connection, root: &std::path::Path) -> Self {
        let recorded = git::at(conn, i64::MAX).ok().flatten().map(|row| row.state);
        Self {
            repo: Repo::at(root),
            looked: None,
            recorded,
        }
    }

    /// Forgets the last look: a rollback moved git itself, and recorded what it did.
    pub(super) fn reload(&mut self, conn: &rusqlite::Connection) {
        self.looked = None;
        self.recorded = git::at(conn, i64::MAX).ok().flatten().map(|row| row.state);
    }
}

impl Worker {
    /// Records the repository's state if it changed since it was last recorded, as a write
    /// made now (`None`: by whoever `owners` says is writing).
    pub(super) fn record_git(&mut self, by: Option<Attribution>) {
        if self.git.repo.is_none() {
            self.git.repo = Repo::at(&self.ctx.root.path);
        }
        let Some(repo) = &self.git.repo else {
            return;
        };
        let looked = repo.fingerprint();
        if self.git.looked == Some(looked) {
            return;
        }
        let state = match repo.read() {
            Ok(Some(state)) => state,
            Ok(None) => return,
            Err(err) => {
                tracing::debug!(error = %err, "the repository cannot be read: its state is not recorded");
                self.git.repo = None;
                return;
            }
        };
        let by = by.unwrap_or_else(|| self.owners.who().batch);
        match self.store_git(&state, by) {
            Ok(recorded) => {
                self.git.looked = Some(looked);
                if let Some(recorded) = recorded {
                    self.git.recorded = Some(recorded);
                }
            }
            Err(err) => self
                .ctx
                .stats
                .set_error(format!("cannot record the repository's state: {err}")),
        }
    }

    /// Stores `state` unless it is the one last recorded; returns it as recorded.
    fn store_git(&mut self, state: &GitState, by: Attribution) -> anyhow::Result<Option<Recorded>> {
        let last_digest = self
            .git
            .recorded
            .as_ref()
            .and_then(|r| r.index.as_ref())
            .map(|i| i.digest.0);
        if let Some(last) = &self.git.recorded
            && state.same_as(&last.refs, last_digest.as_ref())
        {
            return Ok(None);
        }
        let tx = self.conn.unchecked_transaction()?;
        let index = match &state.index {
            Some(index) => Some(IndexAt {
                hash: git::store_bytes(&tx, &self.ctx.blobs, &index.bytes)?,
                digest: Hash(index.digest),
            }),
            None => None,
        };
        let recorded = Recorded {
            refs: state.refs.clone(),
            index,
        };
        let new = NewGitState {
            state: &recorded,
            origin: by.origin,
            turn_id: by.turn_id,
            rollback_id: None,
            decided: by.decided,
            now_ms: crate::model::now_ms(),
        };
        git::insert(&tx, &new)?;
        tx.commit()?;
        Ok(Some(recorded))
    }
}
