//! The write-ahead log's costs, moved off the agent's commands. Left to itself, SQLite copies
//! the log into the index (a checkpoint: every page written again, and two fsyncs) whenever a
//! commit leaves it past 1,000 pages, and a commit with synchronous=FULL fsyncs the log: while
//! `sed -i` runs over 2,000 files, the batches recorded ahead of its end marker did both, in
//! the middle of the command. On a disk that discards a replaced file's blocks at once (ext4
//! mounted with `discard`), `sed -i` waits for the disk at every file it replaces, and it waits
//! longer behind those writes and flushes: 1.15-1.3× its time unwatched (docs/benchmarks.md,
//! "What `sed -i` waits for").
//!
//! So a batch nobody waits for commits without an fsync (`store::db::without_sync`), the writer
//! checkpoints by itself only past `store::db::LOG_PAGES_MAX`, and a thread of its own
//! checkpoints (passive: it never waits for the writer or a reader, and neither waits for it)
//! once the worker has written nothing for `QUIET`, and when a commit has gone unsynced for
//! `MAX_UNSYNCED` whatever else happens.
//!
//! What stays durable (G13): a turn marker, a rollback and every command commit with an
//! fsync of the log, which makes everything committed before them durable too; a checkpoint
//! syncs the log before it copies it. So only a batch recorded while nobody waited can be lost
//! to a power cut, for at most `MAX_UNSYNCED` (about as long as the file system keeps the
//! agent's own unsynced writes: ext4 commits every 5 s), and the restart then records what the
//! disk holds, as changed while stopped (record = disk).

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::platform::nice_own_thread;

/// How long the worker writes nothing before the log is checkpointed: the agent's command
/// has ended (its end marker comes within milliseconds of it, so its commit is the last).
pub const QUIET: Duration = Duration::from_millis(250);
/// The longest a commit without an fsync waits for the checkpoint that makes it durable.
pub const MAX_UNSYNCED: Duration = Duration::from_secs(5);
/// A checkpoint a reader held back (it reads an older snapshot) tries again this often.
const RETRY: Duration = Duration::from_millis(100);
const TRIES: u32 = 50;

/// What a piece of the worker's work committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Commit {
    /// With an fsync of the log, which made every commit before it durable too.
    Synced,
    /// Without one (`store::db::without_sync`).
    Unsynced,
    /// Whatever a command did: it commits with an fsync, or not at all.
    Command,
}

/// When the log is checkpointed next, and the thread that does it.
pub(super) struct Checkpoints {
    /// The last commit since the last checkpoint was asked for.
    written: Option<Instant>,
    /// The oldest commit without an fsync since then.
    unsynced: Option<Instant>,
    thread: Option<Checkpointer>,
}

impl Checkpoints {
    /// `db`: the index (`None`: in memory, nothing to checkpoint).
    pub(super) fn start(db: Option<&Path>) -> Self {
        Self {
            written: None,
            unsynced: None,
            thread: db.and_then(Checkpointer::start),
        }
    }

    /// The worker wrote at `now`.
    pub(super) fn wrote(&mut self, now: Instant, commit: Commit) {
        self.written = Some(now);
        match commit {
            Commit::Synced => self.unsynced = None,
            Commit::Unsynced => {
                self.unsynced.get_or_insert(now);
            }
            Commit::Command => {}
        }
    }

    /// When the next checkpoint is due; `busy`: hints or a command wait, so the worker
    /// writes again soon and is not quiet.
    pub(super) fn deadline(&self, busy: bool) -> Option<Instant> {
        self.thread.as_ref()?;
        self.due(busy)
    }

    fn due(&self, busy: bool) -> Option<Instant> {
        let quiet = self.written.filter(|_| !busy).map(|at| at + QUIET);
        let bound = self.unsynced.map(|at| at + MAX_UNSYNCED);
        quiet.into_iter().chain(bound).min()
    }

    /// Asks for a checkpoint when one is due.
    pub(super) fn run(&mut self, now: Instant, busy: bool) {
        if self.due(busy).is_none_or(|at| now < at) {
            return;
        }
        if let Some(thread) = &self.thread {
            thread.ask();
        }
        self.written = None;
        self.unsynced = None;
    }

    /// Before the writer closes (its close is the last, and checkpoints the log away).
    pub(super) fn stop(&mut self) {
        self.thread = None;
    }
}

/// The thread that checkpoints, with its own connection, at the lowest normal priority.
struct Checkpointer {
    asks: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    fn start(db: &Path) -> Option<Self> {
        let (asks, asked) = channel();
        let db = db.to_path_buf();
        let spawned = std::thread::Builder::new()
            .name("checkpoint".into())
            .spawn(move || {
                nice_own_thread();
                match open(&db) {
                    Ok(conn) => serve(&conn, &asked),
                    Err(err) => tracing::warn!(%err, "cannot open the index to checkpoint it; the writer does, past its limit"),
                }
            });
        let thread = spawned
            .inspect_err(|err| tracing::warn!(%err, "cannot start the checkpoint thread; the writer checkpoints, past its limit"))
            .ok()?;
        Some(Self {
            asks: Some(asks),
            thread: Some(thread),
        })
    }

    fn ask(&self) {
        if let Some(asks) = &self.asks {
            let _ = asks.send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.asks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A connection that writes nothing itself: a checkpoint copies the log into the index,
/// which a read-only connection may not do. It never creates the index.
fn open(db: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(db, flags)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// Checkpoints once per ask (asks that came meanwhile are one), until the daemon stops.
fn serve(conn: &Connection, asked: &Receiver<()>) {
    while asked.recv().is_ok() {
        while asked.try_recv().is_ok() {}
        for _ in 0..TRIES {
            if checkpoint(conn) {
                break;
            }
            match asked.recv_timeout(RETRY) {
                Err(RecvTimeoutError::Disconnected) => return,
                Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// One passive checkpoint; true when the whole log is in the index (and so was synced), or it
/// failed in a way another try would not mend. False while another checkpoint runs (the
/// writer's, past its limit) or a reader holds part of the log back.
fn checkpoint(conn: &Connection) -> bool {
    let started = Instant::now();
    let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
        ))
    });
    match result {
        Ok((busy, log, copied)) => {
            let ms = started.elapsed().as_millis() as u64;
            tracing::debug!(busy, log, copied, ms, "checkpoint");
            busy == 0 && copied >= log
        }
        Err(err) => {
            // The writer's next commit meets the same fault and reports it (G12); past its
            // limit the writer checkpoints itself.
            tracing::warn!(%err, "checkpoint failed");
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> Checkpoints {
        Checkpoints {
            written: None,
            unsynced: None,
            thread: None,
        }
    }

    #[test]
    fn a_checkpoint_waits_until_the_worker_is_quiet() {
        let t0 = Instant::now();
        let mut log = idle();
        assert_eq!(log.due(false), None, "nothing written");
        log.wrote(t0, Commit::Synced);
        assert_eq!(log.due(false), Some(t0 + QUIET));
        assert_eq!(log.due(true), None, "a synced log waits while hints come");
        log.wrote(t0 + QUIET / 2, Commit::Command);
        assert_eq!(
            log.due(false),
            Some(t0 + QUIET / 2 + QUIET),
            "each write restarts it"
        );
        log.run(t0 + QUIET, false);
        assert_eq!(log.written, Some(t0 + QUIET / 2), "not due yet");
        log.run(t0 + 2 * QUIET, false);
        assert_eq!(log.due(false), None, "asked for: nothing left to do");
    }

    #[test]
    fn an_unsynced_commit_is_checkpointed_within_its_bound_however_busy() {
        let t0 = Instant::now();
        let mut log = idle();
        log.wrote(t0, Commit::Unsynced);
        for ms in (0..6_000).step_by(100) {
            log.wrote(t0 + Duration::from_millis(ms), Commit::Unsynced);
        }
        assert_eq!(
            log.due(true),
            Some(t0 + MAX_UNSYNCED),
            "from the oldest unsynced commit"
        );
        log.run(t0 + MAX_UNSYNCED, true);
        assert_eq!(log.due(true), None);
        log.wrote(t0 + MAX_UNSYNCED, Commit::Unsynced);
        log.wrote(t0 + MAX_UNSYNCED + QUIET, Commit::Synced);
        assert_eq!(log.due(true), None, "a commit with an fsync made it durable");
    }

    #[test]
    fn an_index_in_memory_is_never_checkpointed() {
        let mut log = Checkpoints::start(None);
        log.wrote(Instant::now(), Commit::Unsynced);
        assert_eq!(log.deadline(false), None);
    }
}
