//! Turn markers hooks queued while the daemon was not answering yet (`crate::queue`), applied
//! as the API would have applied them, each at its place among the hints: those already queued
//! when the watcher started right after the first index or reconcile (before the hints queued
//! meanwhile), later ones when the watcher's event for their file comes, like a cookie: the
//! writes hinted before it are recorded first, under the turns open before it.

use std::path::{Path, PathBuf};

use tokio::sync::oneshot;

use super::{Command, Worker};
use crate::queue::{self, Marker, Queued};
use crate::sessions::turns::{TurnMarker, TurnSelector};

impl Worker {
    /// Takes the queue `dir` on, and applies `listed`, the markers queued before its watch
    /// was armed, in order. Call it once the index is ready, before `run`.
    pub fn adopt_queue(&mut self, dir: PathBuf, listed: Vec<PathBuf>) {
        self.queue = Some(dir);
        let now = crate::model::now_ms();
        for path in listed {
            self.apply_queued(&path, Some(now));
        }
    }

    /// A marker's file `name` appeared in the queue; the hints before it are recorded.
    pub(super) fn queued_marker(&mut self, name: &std::ffi::OsStr) {
        let Some(path) = self.queue.as_ref().map(|dir| dir.join(name)) else {
            return;
        };
        self.apply_queued(&path, None);
    }

    /// Every marker still queued, in order: after lost events, their own may be among the lost.
    pub(super) fn apply_all_queued(&mut self) {
        let Some(dir) = self.queue.clone() else {
            return;
        };
        for path in queue::listed(&dir) {
            self.apply_queued(&path, None);
        }
    }

    /// Applies the marker at `path` once; at start-up (`now` given) a stale one is dropped.
    fn apply_queued(&mut self, path: &Path, now: Option<i64>) {
        let queued = match queue::take(path) {
            Ok(Some(queued)) => queued,
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(%err, "dropped a queued turn marker");
                return;
            }
        };
        if now.is_some_and(|now| queued.is_stale(now)) {
            tracing::warn!(marker = ?queued.marker, queued_at_ms = queued.queued_at_ms, "dropped a queued turn marker left by a start that failed");
            return;
        }
        let Queued { marker, .. } = queued;
        let session = match &marker {
            Marker::TurnStart { session, .. } | Marker::TurnEnd { session, .. } => session.clone(),
        };
        if !crate::sessions::is_valid_name(&session) {
            tracing::warn!(?marker, "dropped a queued turn marker: not a session name");
            return;
        }
        self.run_marker(marker, session);
    }

    fn run_marker(&mut self, marker: Marker, session: String) {
        match marker {
            Marker::TurnStart {
                label,
                turn_ref,
                agent,
                ..
            } => {
                let (reply, mut answer) = oneshot::channel();
                let marker = TurnMarker {
                    turn_ref,
                    label,
                    agent,
                };
                self.run_command(Command::TurnStart {
                    session: session.clone(),
                    marker,
                    reply,
                });
                match answer.try_recv() {
                    Ok(Ok(started)) => {
                        tracing::info!(%session, turn = started.turn.number, "queued turn start applied")
                    }
                    Ok(Err(err)) => tracing::warn!(%session, %err, "queued turn start refused"),
                    Err(_) => tracing::warn!(%session, "queued turn start not applied"),
                }
            }
            Marker::TurnEnd { label, .. } => {
                let (reply, mut answer) = oneshot::channel();
                self.run_command(Command::TurnEnd {
                    session: session.clone(),
                    turn: TurnSelector::Current,
                    label,
                    reply,
                });
                match answer.try_recv() {
                    Ok(Ok(turn)) => tracing::info!(%session, turn = turn.number, "queued turn end applied"),
                    // No open turn (or no session yet) is not an error for a hook either.
                    Ok(Err(err)) => tracing::debug!(%session, %err, "queued turn end had nothing to end"),
                    Err(_) => tracing::warn!(%session, "queued turn end not applied"),
                }
            }
        }
    }
}
