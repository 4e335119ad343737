//! The worker loop: drain hints, let a burst settle, record it in one batch; run rescans when
//! events were lost; execute turn markers when their cookie comes back.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::barrier::Barrier;
use super::batch::Batch;
use super::checkpoint::Commit;
use super::early::EarlyReads;
use super::lost::LostEvents;
use super::owed::Owed;
use super::schedule::{Schedule, Sent};
use super::upkeep::{Upkeep, Waiting};
use super::{Command, Msg};
use crate::capture::owners::Owners;
use crate::capture::record::{Attribution, Priority, ReadEarly, record};
use crate::capture::rescan::{record_survey, survey};
use crate::capture::{Context, TRIM_AFTER, release_freed_memory};
use crate::model::RACY_NS;
use crate::paths::RelPath;
use crate::refusal::Refusal;
use crate::sessions::turns;
use crate::store::db::{IntegrityCheck, without_sync};
use crate::store::fault::StorageFault;
use crate::store::{journal, owners, sql, unjournaled};
use crate::watch::filter::IgnoreRules;

/// How long a burst of hints runs before the worker takes it (see `take_burst`); a turn
/// marker arriving meanwhile waits at most this long.
const BURST_PAUSE: Duration = Duration::from_millis(1);
/// Idle time after large work before its freed memory is given back.
const TRIM_IDLE: Duration = Duration::from_secs(1);

/// Releases freed memory when dropped: after large work, however it ends.
pub(super) struct TrimOnDrop;

impl Drop for TrimOnDrop {
    fn drop(&mut self) {
        release_freed_memory();
    }
}

/// How long the exit waits for its own cookie (see `settle_racy`).
const EXIT_COOKIE_TIMEOUT: Duration = Duration::from_secs(1);
/// A file modified at least this long before a clean exit has had its events recorded.
const SETTLED_AFTER: Duration = Duration::from_secs(2);

/// `SETTLED_AFTER`, or `FILEWATCHD_TEST_SETTLED_AFTER_MS` for the tests (`crate::test_knobs`).
fn settled_after_ns() -> i64 {
    let after = crate::test_knobs::get().settled_after.unwrap_or(SETTLED_AFTER);
    i64::try_from(after.as_nanos()).unwrap_or(i64::MAX)
}

/// The API's way to the worker.
#[derive(Clone)]
pub struct WorkerHandle {
    tx: Sender<Msg>,
    /// Counted before sending: a background verification pass yields to the command.
    sent: Sent,
}

impl WorkerHandle {
    /// A handle with no worker behind it: every command sent is refused (`Unavailable`).
    pub fn detached() -> Self {
        let (tx, _) = std::sync::mpsc::channel();
        Self {
            tx,
            sent: Sent::default(),
        }
    }

    pub fn send(&self, command: Command) -> Result<(), Refusal> {
        self.sent.one_more();
        self.tx
            .send(Msg::Command(command))
            .map_err(|_| Refusal::Unavailable)
    }

    pub fn shutdown(&self) {
        self.sent.one_more();
        let _ = self.tx.send(Msg::Shutdown);
    }
}

pub struct Worker {
    pub(super) conn: Connection,
    pub(super) ctx: Context,
    pub(super) inbox: Receiver<Msg>,
    pub(super) queued: Arc<AtomicUsize>,
    pub(super) lost: LostEvents,
    /// The paths hinted and not yet recorded, and when they are due.
    pub(super) batch: Batch,
    /// What of them was read already, while the command that wrote them ran.
    pub(super) early: EarlyReads,
    /// What the store failed to take: commands that change the record are refused meanwhile.
    pub(super) owed: Owed,
    pub(super) barrier: Barrier,
    /// The open turns and their tool calls open now: whose a write is.
    pub(super) owners: Owners,
    /// fanotify's writers of each file, when the daemon may listen (`CAP_SYS_ADMIN`).
    pub(super) writers: Option<crate::watch::writers::Writers>,
    /// The daily collection, the one under way, the turn counts owed.
    pub(super) upkeep: Upkeep,
    /// Paths recorded since memory was last given back (`release_freed_memory`), and when
    /// it will be, once idle.
    pub(super) since_trim: usize,
    pub(super) trim_at: Option<Instant>,
    /// The background verification pass, and the commands sent and taken it yields to.
    pub(super) verify: Schedule,
    pub(super) sent: Sent,
    pub(super) taken: u64,
    /// The marker queue the hooks write to while the daemon starts (`queued`).
    pub(super) queue: Option<std::path::PathBuf>,
    /// The repository's state, recorded at markers (`super::git`).
    pub(super) git: crate::git::Observed,
}

/// A query's result while the integrity check may still run: a damaged index is reported as
/// the damage the check found, not as the query's error.
fn checked<T>(check: &mut IntegrityCheck, result: rusqlite::Result<T>) -> anyhow::Result<T> {
    if result.is_err() {
        check.wait()?;
    }
    Ok(result?)
}

impl Worker {
    /// Indexes (first start) or reconciles (restart) the workspace, recording what changed
    /// while the daemon was down as `offline`, and returns the worker ready to run. `check`
    /// runs meanwhile: recovery and recording wait for it, the walk does not.
    pub fn start(
        mut conn: Connection,
        mut check: IntegrityCheck,
        mut ctx: Context,
        channel: (Sender<Msg>, Receiver<Msg>),
        queued: Arc<AtomicUsize>,
        overflow: Arc<AtomicBool>,
    ) -> anyhow::Result<(Self, WorkerHandle)> {
        let (tx, inbox) = channel;
        if checked(&mut check, journal::needs_recovery(&conn))? {
            check.wait()?;
            let (recovered, effects) = crate::restore::recover::recover(&mut conn, &ctx.workspace())?;
            ctx.apply(effects);
            for outcome in recovered {
                tracing::warn!(rollback = ?outcome.rollback_id, note = ?outcome.recovery, "recovered a rollback");
            }
        }
        let offline = Attribution::FOUND;
        let started = Instant::now();
        let survey = checked(&mut check, survey(&conn, &mut ctx, None))?;
        check.wait()?;
        let recorded = unjournaled::build(&mut conn, |conn| {
            record_survey(conn, &mut ctx, survey, offline, true)
        })?;
        journal::mark_history_begins(&conn, crate::model::now_ms())?;
        release_freed_memory();
        tracing::info!(
            versions = recorded.versions,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "workspace indexed"
        );
        let writers = crate::watch::writers::Writers::for_daemon(&ctx.root.path, &ctx.stats);
        let mut owners = Owners::default();
        owners.refresh(sql::open_turns(&conn)?, &owners::windowed_open(&conn)?);
        let verify = Schedule::new(ctx.verify, Instant::now());
        let interval_ms = ctx.verify.interval.map(|i| i.as_millis() as u64);
        ctx.stats
            .set_verify_schedule(interval_ms, ctx.verify.quiet.as_millis() as u64);
        let sent = Sent::default();
        let early = EarlyReads::new(ctx.observer(), ctx.stats.clone());
        let db = conn.path().filter(|p| !p.is_empty()).map(std::path::Path::new);
        let upkeep = Upkeep::new(Instant::now(), db);
        let recorded = crate::store::git::at(&conn, i64::MAX)?.map(|row| row.state);
        let git = crate::git::Observed::new(&ctx.root.path, recorded);
        let mut worker = Self {
            conn,
            ctx,
            inbox,
            queued,
            lost: LostEvents::new(overflow),
            batch: Batch::new(Instant::now()),
            early,
            owed: Owed::default(),
            barrier: Barrier::default(),
            writers,
            owners,
            upkeep,
            since_trim: 0,
            trim_at: None,
            verify,
            sent: sent.clone(),
            taken: 0,
            queue: None,
            git,
        };
        worker.record_git(Some(offline));
        Ok((worker, WorkerHandle { tx, sent }))
    }

    pub fn run(mut self) {
        loop {
            let received = match self.next_deadline() {
                None => self.inbox.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(at) => self
                    .inbox
                    .recv_timeout(at.saturating_duration_since(Instant::now())),
            };
            match received {
                Ok(Msg::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(msg @ (Msg::Hint(_) | Msg::Gone(_))) => {
                    self.handle(msg);
                    if self.take_burst() {
                        break;
                    }
                }
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
            }
            self.after_message();
        }
        // A lost root takes no more cookies or records (`lost_root`).
        if !self.ctx.stats.is_workspace_lost() {
            self.flush(Priority::Waited);
            self.settle_racy();
        }
        self.upkeep.stop();
        tracing::info!("capture stopped");
    }

    /// At a clean exit, once a cookie shows every event up to now has been recorded: a file
    /// recorded right after it was written is "racy" (a second write in the same timestamp
    /// tick would leave its stat unchanged), so the next start would re-read it. A file last
    /// modified long enough ago is racy no more: such a second write had its own event, and
    /// it has been recorded. Marking those checked now spares the next start the re-reads (W6).
    fn settle_racy(&mut self) {
        let root = self.ctx.root.path.clone();
        let Some(cookie) = self.barrier.plant(&root) else {
            return;
        };
        let deadline = Instant::now() + EXIT_COOKIE_TIMEOUT;
        let arrived = loop {
            match self
                .inbox
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(Msg::Hint(path) | Msg::Gone(path)) if path == cookie => break true,
                Ok(msg @ (Msg::Hint(_) | Msg::Gone(_))) => self.handle(msg),
                // Commands sent during the exit are dropped: their callers get `unavailable`.
                Ok(_) => {}
                Err(_) => break false,
            }
        };
        let _ = std::fs::remove_file(cookie.to_abs(&root));
        self.flush(Priority::Waited);
        if !arrived || !self.batch.is_empty() || self.lost.signalled() {
            return;
        }
        let now = crate::model::now_ns();
        match sql::settle_racy(&self.conn, now, RACY_NS, now - settled_after_ns()) {
            Ok(rows) => tracing::debug!(rows, "racy entries settled"),
            Err(err) => tracing::warn!(%err, "cannot settle racy entries"),
        }
    }

    /// Hints come in bursts (`sed -i` over 2,000 files is some 8,000 events): waking up for
    /// each one cost more CPU than recording them. After a hint the worker lets the burst run
    /// for `BURST_PAUSE`, then takes everything queued at once. True when asked to shut down.
    fn take_burst(&mut self) -> bool {
        std::thread::sleep(BURST_PAUSE);
        loop {
            match self.inbox.try_recv() {
                Ok(Msg::Shutdown) | Err(TryRecvError::Disconnected) => return true,
                Ok(msg) => self.handle(msg),
                Err(TryRecvError::Empty) => return false,
            }
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Gone(path) => {
                // Before anything is read: the directory now at this path, if any, is not
                // the one watched, and is armed and walked when its hint is recorded.
                if self.ctx.watches.is_watched(&path) {
                    self.ctx.watches.unwatch_tree(&path);
                    // What was read beneath it may be gone with it, and no event says so.
                    self.early.clear();
                }
                self.handle(Msg::Hint(path));
            }
            Msg::Hint(path) => {
                self.queued.fetch_sub(1, Ordering::AcqRel);
                if self.ctx.stats.is_workspace_lost() {
                    return;
                }
                if IgnoreRules::is_cookie(&path) {
                    if let Some(command) = self.barrier.arrived(&self.ctx.root.path, &path) {
                        // Events were lost before this cookie came back (a burst handled at once
                        // can carry the overflow and the cookie together): the rescan comes
                        // first, or the command would miss what the lost events named.
                        if self.lost.take() || self.owed.rescan {
                            self.full_rescan();
                            self.run_command(command);
                            self.release_waiting();
                        } else {
                            self.writers_caught_up();
                            self.flush(Priority::Waited);
                            self.run_command(command);
                        }
                    }
                    return;
                }
                if self.lost.hint_is_stale() {
                    return;
                }
                let now = Instant::now();
                self.early.hinted(&path, now);
                self.batch.hint(path, now);
            }
            Msg::Queued(name) => {
                if self.ctx.stats.is_workspace_lost() {
                    return;
                }
                // As for a cookie: what was hinted before the marker is recorded before it.
                if self.lost.take() || self.owed.rescan {
                    self.rescan_and_release();
                } else {
                    self.flush(Priority::Waited);
                }
                self.queued_marker(&name);
            }
            Msg::Rescan => self.lost.marker_arrived(),
            Msg::RootChanged => {
                self.root_lost();
            }
            Msg::Command(command) => {
                self.taken += 1;
                let Some(command) = self.admit(command) else {
                    return;
                };
                if let Err(command) = self.barrier.begin(&self.ctx.root.path, command) {
                    self.full_rescan();
                    self.run_command(command);
                }
            }
            Msg::Shutdown => {}
        }
    }

    fn after_message(&mut self) {
        if self.ctx.stats.is_workspace_lost() {
            return;
        }
        let now = Instant::now();
        let owed = self.owed.rescan && self.batch.may_retry(now);
        if self.lost.take() || self.barrier.overdue(now) || owed {
            self.rescan_and_release();
        }
        // A removed root sends no event of its own while its descriptor is held open: the
        // removals of its children lead here first.
        if self.batch.due(now) && !self.root_lost() {
            self.flush(Priority::Background);
        }
        self.early.ask_quiet(now);
        self.record_ahead();
        self.trim_when_idle(now);
        self.verify_when_due(now);
        let waiting = self.waiting();
        self.upkeep.run(&mut self.conn, &self.ctx, waiting);
    }

    /// What the upkeep yields to.
    fn waiting(&self) -> Waiting {
        Waiting {
            command: !self.barrier.is_empty(),
            hints: !self.batch.is_empty(),
        }
    }

    /// Once a second has passed without work after large work (the API's answers about it
    /// included), gives the freed memory back.
    fn trim_when_idle(&mut self, now: Instant) {
        if self.since_trim < TRIM_AFTER || !self.batch.is_empty() {
            return;
        }
        match self.trim_at {
            Some(at) if now >= at => {
                release_freed_memory();
                self.since_trim = 0;
                self.trim_at = None;
            }
            Some(_) => {}
            None => self.trim_at = Some(now + TRIM_IDLE),
        }
    }

    /// A full rescan satisfies every waiting command: each runs after it, oldest first.
    fn rescan_and_release(&mut self) {
        self.full_rescan();
        self.apply_all_queued();
        self.release_waiting();
    }

    fn release_waiting(&mut self) {
        for command in self.barrier.take_all(&self.ctx.root.path) {
            self.run_command(command);
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        [
            self.batch.deadline(),
            self.early.deadline(),
            self.barrier.next_deadline(),
            self.batch.retry_at().filter(|_| self.owed.rescan),
            Some(self.upkeep.deadline(self.waiting())),
            self.trim_at,
            self.verify_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Records every pending hint in one batch; `priority` says whether a command waits for it.
    fn flush(&mut self, priority: Priority) {
        if !self.record_pending_rollback() {
            return;
        }
        // Taken even when empty: a batch woken only to retry a rollback's record is done.
        let work = self.batch.take();
        if work.is_empty() {
            return;
        }
        let early = self.early.take();
        self.record_work(work, priority, early);
    }

    /// Records what was read early once enough of it waits, the burst still going on: the
    /// marker after it finds only its tail left (`early`). Not while anything is owed.
    fn record_ahead(&mut self) {
        // The root is checked before every batch recorded (`lost_root`).
        if !self.owed.is_empty() || self.lost.signalled() || !self.early.ready() || self.root_lost() {
            return;
        }
        let early = self.early.take_ready();
        let mut work: Vec<RelPath> = early.keys().cloned().collect();
        work.sort_unstable();
        self.batch.remove(&work);
        self.record_work(work, Priority::Background, early);
    }

    fn record_work(&mut self, work: Vec<RelPath>, priority: Priority, early: HashMap<RelPath, ReadEarly>) {
        tracing::debug!(paths = work.len(), read_early = early.len(), ?priority, "batch");
        let who = self.who_now();
        let rescanned_by = who.batch;
        self.since_trim += work.len();
        self.trim_at = None;
        let recorded = match priority {
            Priority::Waited => record(&mut self.conn, &mut self.ctx, work.clone(), who, priority, early),
            // Nobody waits: no fsync in the middle of the command that wrote it.
            Priority::Background => without_sync(&mut self.conn, |conn| {
                record(conn, &mut self.ctx, work.clone(), who, priority, early)
            })
            .and_then(|recorded| recorded),
        };
        let commit = match priority {
            Priority::Waited if recorded.is_ok() => Commit::Synced,
            _ => Commit::Unsynced,
        };
        self.upkeep.wrote(commit);
        match recorded {
            Ok(recorded) => {
                if recorded.dirs_gone {
                    self.early.clear();
                }
                if !recorded.requeue.is_empty() {
                    self.batch.requeue(recorded.requeue, Instant::now());
                }
                self.storage_outcome(recorded.failed, recorded.fault);
                // What an ignore-rule change brings into view is found; what else the
                // rescan finds was written now, whose events are not read yet.
                if let Some(changed) = recorded.rules_changed {
                    self.rescan_changed_rules(changed, rescanned_by);
                }
            }
            Err(err) => {
                // The transaction was rolled back: nothing of the batch is half-written.
                let fault = StorageFault::of_batch(&err);
                self.ctx.stats.storage_failed(&fault);
                self.storage_outcome(work, Some(fault));
            }
        }
    }

    pub(super) fn execute(&mut self, command: Command) {
        let command = match self.owed.refusal() {
            Some(why) => match command.refuse(&why) {
                Some(command) => command,
                None => return,
            },
            None => command,
        };
        if command.moves_git() {
            self.record_git(None);
        }
        match command {
            Command::TurnStart {
                session,
                marker,
                reply,
            } => {
                let result = turns::start(&mut self.conn, &session, &marker);
                if let Some(ended) = result.as_ref().ok().and_then(|s| s.ended.as_ref()) {
                    self.upkeep.turn_ended(&self.conn, ended);
                }
                self.refresh_open_turns();
                let _ = reply.send(result);
            }
            Command::TurnEnd {
                session,
                turn,
                label,
                reply,
            } => {
                let result = turns::end(&mut self.conn, &session, &turn, label.as_deref());
                if let Ok(ended) = &result {
                    self.upkeep.turn_ended(&self.conn, ended);
                }
                self.refresh_open_turns();
                let _ = reply.send(result);
            }
            Command::ToolCall {
                session,
                phase,
                call,
                reply,
            } => {
                let _ = reply.send(self.tool_call(&session, phase, *call));
            }
            Command::Sync { reply } => {
                let _ = reply.send(());
            }
            Command::Gc { dry_run, reply } => {
                self.upkeep
                    .collect(&mut self.conn, &self.ctx, dry_run, Some(reply))
            }
            Command::Fork {
                parent,
                new_session,
                turn,
                reply,
            } => {
                let _ = reply.send(turns::fork(&mut self.conn, &parent, &new_session, &turn));
            }
            Command::Verify { reply } => {
                let _ = reply.send(self.verify_now());
            }
            Command::Pin { name, point, reply } => {
                // A pin changes what a collection keeps.
                self.upkeep.finish_collection(&mut self.conn, &self.ctx);
                let _ = reply.send(crate::pins::create(&mut self.conn, &name, &point));
            }
            Command::Purge { path, reply } => {
                let _ = reply.send(crate::store::purge::purge(&mut self.conn, &self.ctx.blobs, &path));
            }
            Command::Unpin { name, reply } => {
                self.upkeep.finish_collection(&mut self.conn, &self.ctx);
                let _ = reply.send(crate::pins::remove(&mut self.conn, &name));
            }
            Command::Review {
                session,
                turn,
                path,
                reviewed,
                reply,
            } => {
                let marked =
                    crate::sessions::review::mark(&self.conn, &session, &turn, path.as_ref(), reviewed);
                let _ = reply.send(marked);
            }
            Command::WhyIgnored { path, reply } => {
                let is_dir = crate::fs::read::is_dir(&self.ctx.root, &path);
                let _ = reply.send(self.ctx.rules.explain(&path, is_dir));
            }
            Command::Rollback { request, reply } => self.rollback(request, reply),
        }
    }
}
