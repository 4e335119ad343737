//! Opening the SQLite index: pragmas and the numbered migrations of
//! `migrations/`, embedded in the binary and applied in one transaction at open.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use super::sqlite_errors::describe;

/// Every migration, in order. Released files are never edited: a change is a new file.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/0001_init.sql"),
    include_str!("../../migrations/0002_rollback.sql"),
    include_str!("../../migrations/0003_retention.sql"),
    include_str!("../../migrations/0004_blob_rows.sql"),
    include_str!("../../migrations/0005_no_hash_index.sql"),
    include_str!("../../migrations/0006_rollback_temps.sql"),
    include_str!("../../migrations/0007_redo_untracked.sql"),
    include_str!("../../migrations/0008_timeline.sql"),
    include_str!("../../migrations/0009_pins.sql"),
    include_str!("../../migrations/0010_reviews.sql"),
    include_str!("../../migrations/0011_unattributed.sql"),
    include_str!("../../migrations/0012_turn_counts.sql"),
    include_str!("../../migrations/0013_store_size.sql"),
    include_str!("../../migrations/0014_rollback_briefs.sql"),
    include_str!("../../migrations/0015_permission_bits.sql"),
    include_str!("../../migrations/0016_rollback_counts.sql"),
    include_str!("../../migrations/0017_owners.sql"),
    include_str!("../../migrations/0018_step_targets.sql"),
    include_str!("../../migrations/0019_git.sql"),
];

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot open the index {path}: {}", describe(err))]
    Open { path: String, err: rusqlite::Error },
    #[error("the index {path} is damaged ({detail}); it was left untouched")]
    Damaged { path: String, detail: String },
    #[error("the index {path} has schema version {found}, newer than this filewatchd ({known})")]
    TooNew { path: String, found: i64, known: usize },
    /// Read without its daemon, an index an older filewatchd left: only a start migrates it.
    #[error(
        "the index {path} has schema version {found}, older than this filewatchd's ({known}): `filewatchd start` in the workspace upgrades it, and then it can be read without its daemon too"
    )]
    TooOld { path: String, found: i64, known: usize },
    #[error(
        "the index {path} cannot be read without its daemon: its write-ahead log has no -shm beside it, and reading would make one (`filewatchd start` reads it)"
    )]
    NoShm { path: String },
    /// SQLite's words in the message, not again as a cause after it.
    #[error("index: {}", describe(.0))]
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for DbError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Sql(err)
    }
}

/// The log pages past which the writer checkpoints at its commit (SQLite's default is 1,000):
/// 64 MiB of 4 KiB pages.
pub const LOG_PAGES_MAX: i64 = 16_384;

/// SQLite's `PRAGMA synchronous` levels: OFF 0, NORMAL 1, FULL 2, EXTRA 3.
const SYNCHRONOUS_NORMAL: i64 = 1;

/// Runs `work` with commits that do not fsync the log (synchronous=NORMAL, or lower if it is
/// lower already), then puts the writer back as it was. WAL with NORMAL never corrupts; a
/// commit reaches the disk with the next commit that fsyncs (any with FULL) or the next
/// checkpoint, and a power cut before either loses it whole.
pub fn without_sync<T>(
    conn: &mut Connection,
    work: impl FnOnce(&mut Connection) -> T,
) -> rusqlite::Result<T> {
    let was: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
    let lower = was > SYNCHRONOUS_NORMAL;
    if lower {
        conn.pragma_update(None, "synchronous", SYNCHRONOUS_NORMAL)?;
    }
    let done = work(conn);
    if lower {
        conn.pragma_update(None, "synchronous", was)?;
    }
    Ok(done)
}

/// The one writer connection: WAL, synchronous=FULL, checked, migrations applied.
pub fn open_writer(path: &Path) -> Result<Connection, DbError> {
    let (conn, mut check) = open_writer_checking(path)?;
    check.wait_correcting(&conn)?;
    Ok(conn)
}

/// `open_writer` with the integrity check still running on its own connection: it reads every page
/// (a quarter of a second at 100,000 files), and start-up can walk the workspace meanwhile.
/// Nothing may be written before `IntegrityCheck::wait` says the index is sound; a migration
/// (a write) waits for it here.
pub fn open_writer_checking(path: &Path) -> Result<(Connection, IntegrityCheck), DbError> {
    let shown = path.display().to_string();
    set_up_writer(path, &shown).map_err(|e| e.into_damage(&shown))
}

fn set_up_writer(path: &Path, shown: &str) -> Result<(Connection, IntegrityCheck), DbError> {
    let mut conn = Connection::open(path).map_err(|err| DbError::Open {
        path: shown.to_string(),
        err,
    })?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.set_prepared_statement_cache_capacity(64);
    keep_plans(&conn)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "journal_size_limit", 64 * 1024 * 1024)?;
    // Checkpoints are the worker's, when the workspace is quiet (`engine::checkpoint`); this
    // only bounds the log when it never is.
    conn.pragma_update(None, "wal_autocheckpoint", LOG_PAGES_MAX)?;
    // A first index writes hundreds of megabytes in large batches: with SQLite's 2 MiB default
    // cache the pages spill and are read back from the WAL over and over.
    conn.pragma_update(None, "cache_size", -16384)?;
    let mut check = IntegrityCheck::start(path);
    if schema_version(&conn)? != MIGRATIONS.len() as i64 {
        check.wait()?;
        migrate(&mut conn, shown)?;
    }
    Ok((conn, check))
}

/// The integrity check (`quick_check`), running in a thread of its own.
pub struct IntegrityCheck {
    thread: Option<std::thread::JoinHandle<Result<(), DbError>>>,
}

impl IntegrityCheck {
    fn start(path: &Path) -> Self {
        let path = path.to_path_buf();
        let thread = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            read_ahead(&path);
            let conn = open_reader(&path)?;
            let checked = check_integrity(&conn, &path.display().to_string());
            let check_ms = started.elapsed().as_millis() as u64;
            tracing::debug!(check_ms, "integrity check");
            checked
        });
        Self { thread: Some(thread) }
    }

    /// Waits for the check; `Ok` once the index is known sound (at once when already known).
    pub fn wait(&mut self) -> Result<(), DbError> {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        }
    }

    /// `wait`, then corrects the store size counter if it drifted from its blob rows (a scan of
    /// every blob row: the daemon does it after its start, on a thread of its own, instead:
    /// `engine::drift`).
    pub fn wait_correcting(&mut self, conn: &Connection) -> Result<(), DbError> {
        self.wait()?;
        let drift = crate::store::size::drift(conn)?;
        Ok(crate::store::size::correct_drift(conn, drift)?)
    }
}

/// Asks the kernel to read the whole index into the page cache, in file order, while the
/// check starts: the check reads every page in the order of its trees, one page a read, which
/// from a cold disk is a random read each (`PRAGMA quick_check` of the bench's cold 917 MB
/// million-file index: 17.9 s, against 1.3 s after these hints). The hints only queue the
/// reads (60 ms for that index). Linux reads at most max(`read_ahead_kb`, `max_sectors_kb`) of
/// a hint, and the first is 128 KiB by default, so the index is hinted 128 KiB at a time.
/// Only a hint: a failure changes nothing.
fn read_ahead(path: &Path) {
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    let len = file.metadata().map_or(0, |m| m.len());
    crate::platform::read_ahead(&file, len);
}

/// A read-only connection for queries; many may exist beside the writer.
pub fn open_reader(path: &Path) -> Result<Connection, DbError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|err| DbError::Open {
        path: path.display().to_string(),
        err,
    })?;
    conn.busy_timeout(Duration::from_secs(5))?;
    keep_plans(&conn)?;
    Ok(conn)
}

/// A read-only connection to the index of a daemon that is not running, which writes and
/// creates nothing beside it: a read-only open of a WAL database would create its `-wal` and
/// `-shm`. With no write-ahead log left (a clean stop checkpoints it) the file alone is the
/// index, read as immutable; after a crash the log and its `-shm` are read as they are. A log
/// without its `-shm` cannot be read without making one: refused, saying so.
pub fn open_offline(path: &Path) -> Result<Connection, DbError> {
    let beside = |suffix: &str| {
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };
    let logged = std::fs::metadata(beside("-wal")).is_ok_and(|m| m.len() > 0);
    let shown = path.display().to_string();
    let query = match (logged, beside("-shm").is_file()) {
        (false, _) => "mode=ro&immutable=1",
        (true, true) => "mode=ro",
        (true, false) => return Err(DbError::NoShm { path: shown }),
    };
    let uri = format!("file:{}?{query}", uri_path(path));
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags).map_err(|err| DbError::Open { path: shown, err })?;
    conn.busy_timeout(Duration::from_secs(5))?;
    keep_plans(&conn)?;
    let (found, known) = (schema_version(&conn)?, MIGRATIONS.len());
    let path = path.display().to_string();
    match found.cmp(&(known as i64)) {
        std::cmp::Ordering::Equal => Ok(conn),
        std::cmp::Ordering::Less => Err(DbError::TooOld { path, found, known }),
        std::cmp::Ordering::Greater => Err(DbError::TooNew { path, found, known }),
    }
}

/// `path` as the path of a `file:` URI: every byte but the unreserved ones and `/` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char)
        } else {
            out.push_str(&format!("%{b:02X}"))
        }
    }
    out
}

/// The bundled SQLite is built with STAT4, which re-prepares a cached statement whenever its
/// bound values could change the plan: most of the time a 1,000-path rollback spent planning.
/// The query planner stability guarantee keeps each prepared plan.
fn keep_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map(|_| ())
}

/// A damaged index stops the daemon with a clear error; it is never re-created.
fn check_integrity(conn: &Connection, path: &str) -> Result<(), DbError> {
    let result: String = conn
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(|e| DbError::from(e).into_damage(path))?;
    if result == "ok" {
        return Ok(());
    }
    Err(DbError::Damaged {
        path: path.to_string(),
        detail: result,
    })
}

impl DbError {
    /// SQLite's own "malformed" and "not a database" errors, met before or by the check, are
    /// the damage the integrity check reports.
    fn into_damage(self, path: &str) -> Self {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        let source = match &self {
            Self::Sql(e) | Self::Open { err: e, .. } => e,
            _ => return self,
        };
        match source.sqlite_error_code() {
            Some(DatabaseCorrupt | NotADatabase) => Self::Damaged {
                path: path.to_string(),
                detail: source.to_string(),
            },
            _ => self,
        }
    }
}

fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

fn migrate(conn: &mut Connection, path: &str) -> Result<(), DbError> {
    let current = schema_version(conn)?;
    let known = MIGRATIONS.len();
    if current > known as i64 {
        return Err(DbError::TooNew {
            path: path.to_string(),
            found: current,
            known,
        });
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    for sql in MIGRATIONS.iter().skip(usize::try_from(current).unwrap_or(0)) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", known as i64)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::answer::{Actor, RollbackCounts, TargetTo};

    #[test]
    fn every_migration_applies_to_an_empty_database_and_reopening_is_a_no_op() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("index.sqlite");
        drop(open_writer(&path).expect("first open"));
        let conn = open_writer(&path).expect("second open");
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("version");
        assert_eq!(version, MIGRATIONS.len() as i64);
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'versions'",
                [],
                |r| r.get(0),
            )
            .expect("tables");
        assert_eq!(tables, 1);
    }

    /// Migrations 14 and 16 give the rollbacks recorded before them their briefs, from their answers.
    #[test]
    fn the_rollbacks_of_an_older_index_get_their_briefs_when_it_is_opened() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("index.sqlite");
        let old = Connection::open(&path).expect("open");
        for sql in &MIGRATIONS[..12] {
            old.execute_batch(sql).expect("migration");
        }
        let answer = r#"{"target":{"to":"before","turn":2,"seq":7},"actions":[{"action":"create","status":"done"},{"action":"delete","status":"skipped"},{"action":"set_mode","status":"done"},{"action":"remove_dir","status":"done"}],"skipped":[{"path":"b"}],"kept":[{"path":"d"}],"recovery":"finished at start-up","actor":"mcp"}"#;
        old.execute_batch(&format!(
            "PRAGMA user_version = 12;
             INSERT INTO sessions (id, name, created_at) VALUES (1, 's', 0);
             INSERT INTO rollbacks (session_id, kind, target_seq, from_seq, status, outcome, created_at)
             VALUES (1, 'undo', 7, 9, 'committed', '{answer}', 0), (1, 'redo', 9, 9, 'committed', 'not json', 0);"
        ))
        .expect("old rows");
        drop(old);
        let conn = open_writer(&path).expect("migrated");
        let briefs = crate::store::briefs::of_session(&conn, 1).expect("briefs");
        let brief = briefs[0].brief.clone().expect("a brief");
        let target = brief.target.expect("a target");
        assert_eq!(
            (target.to, target.turn, target.seq),
            (TargetTo::Before, Some(2), 7)
        );
        let one = RollbackCounts {
            added: 1,
            modified: 1,
            deleted: 1,
            skipped: 1,
            kept: 1,
        };
        assert_eq!(brief.counts, one);
        assert_eq!(brief.counts.done(), 3);
        assert_eq!(brief.recovery.as_deref(), Some("finished at start-up"));
        assert_eq!(brief.actor, Some(Actor::Mcp));
        assert_eq!(briefs[1].brief, None);
        // An answer that does not read is an error naming its rollback, not "no answer".
        let unread = crate::store::timeline::rollback_outcome(&conn, 2).expect_err("not json");
        assert!(
            unread
                .to_string()
                .contains("rollback 2 of the journal: its outcome cannot be read"),
            "{unread}"
        );
    }

    /// Migration 15: the latest version of each present file takes its bits from the stat it is
    /// cached with; older versions (and other kinds) keep none, knowing only the executable bit.
    #[test]
    fn the_latest_file_versions_of_an_older_index_get_the_bits_of_their_stat() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("index.sqlite");
        let old = Connection::open(&path).expect("open");
        for sql in &MIGRATIONS[..14] {
            old.execute_batch(sql).expect("migration");
        }
        old.execute_batch(
            "PRAGMA user_version = 14;
             INSERT INTO paths (id, path) VALUES (1, '.env'), (2, 'd');
             INSERT INTO versions (seq, path_id, kind, hash, size, executable, origin, recorded_at)
             VALUES (1, 1, 1, x'01', 1, 0, 2, 0), (2, 1, 1, x'02', 1, 0, 2, 0), (3, 2, 3, NULL, NULL, 0, 2, 0);
             INSERT INTO path_state (path_id, seq, dev, ino, size, mtime_ns, ctime_ns, mode, checked_ns)
             VALUES (1, 2, 1, 1, 1, 0, 0, 33152, 0), (2, 3, 1, 2, 0, 0, 0, 16877, 0);",
        )
        .expect("old rows");
        drop(old);
        let conn = open_writer(&path).expect("migrated");
        let modes: Vec<Option<u32>> = conn
            .prepare("SELECT mode FROM versions ORDER BY seq")
            .and_then(|mut stmt| stmt.query_map([], |r| r.get(0))?.collect())
            .expect("modes");
        // 33152 is a regular file of mode 0600.
        assert_eq!(modes, [None, Some(0o600), None]);
    }
}
