//! The first index into an index that holds nothing is written without SQLite's journal: the
//! WAL would write every inline blob twice (once to the log, once to the database), a seventh
//! of a cold first index. Nothing of value can be lost: a marker file, durable before the first
//! unjournaled write, says the database is being built, and a start that finds it (the build
//! was interrupted, the file may be torn) removes that database and indexes again from empty.
//! Any other database is never re-created.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// Removes the database an interrupted unjournaled build left, with its marker. Returns
/// whether there was one. Runs before the database is opened.
pub fn discard_interrupted(db: &Path) -> io::Result<bool> {
    let marker = marker_of(db);
    if !marker.exists() {
        return Ok(false);
    }
    for suffix in ["", "-wal", "-shm"] {
        match std::fs::remove_file(with_suffix(db, suffix)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    std::fs::remove_file(&marker)?;
    sync_parent(db)?;
    Ok(true)
}

/// Runs `build` on `conn` without the journal when the index holds nothing yet, and with it
/// otherwise; the journal (WAL, synchronous=FULL) is back, and everything durable, after.
pub fn build<T>(
    conn: &mut Connection,
    build: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
) -> anyhow::Result<T> {
    let Some(db) = conn.path().filter(|p| !p.is_empty()).map(PathBuf::from) else {
        return Ok(build(conn)?);
    };
    if !holds_nothing(conn)? {
        return Ok(build(conn)?);
    }
    let marker = marker_of(&db);
    File::create(&marker)?.sync_all()?;
    sync_parent(&db)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = OFF", [], |r| r.get(0))?;
    if mode != "off" {
        // Another connection holds the database: build with the journal after all.
        std::fs::remove_file(&marker)?;
        return Ok(build(conn)?);
    }
    conn.pragma_update(None, "synchronous", "OFF")?;
    let built = crate::store::size::counted_after(conn, build)?;
    pause_for_tests();
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    anyhow::ensure!(
        mode == "wal",
        "the index stayed in journal mode {mode} after the first index"
    );
    conn.pragma_update(None, "synchronous", "FULL")?;
    crate::platform::ext::sync_file(&db)?;
    std::fs::remove_file(&marker)?;
    sync_parent(&db)?;
    Ok(built)
}

/// Test-only (`crate::test_knobs`): `FILEWATCHD_TEST_PAUSE_BUILD` stops here, everything
/// written and the journal still off, so a test can kill the daemon at the worst moment.
fn pause_for_tests() {
    if crate::test_knobs::get().pause_build {
        tracing::warn!("FILEWATCHD_TEST_PAUSE_BUILD: pausing the first index until killed");
        loop {
            std::thread::park();
        }
    }
}

/// No version, session or rollback: a database with nothing a rebuild could lose.
fn holds_nothing(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT NOT EXISTS (SELECT 1 FROM versions) AND NOT EXISTS (SELECT 1 FROM sessions)
            AND NOT EXISTS (SELECT 1 FROM rollbacks)",
        [],
        |r| r.get(0),
    )
}

fn marker_of(db: &Path) -> PathBuf {
    with_suffix(db, ".building")
}

fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

fn sync_parent(db: &Path) -> io::Result<()> {
    match db.parent() {
        Some(dir) => crate::platform::ext::sync_dir(dir),
        None => Ok(()),
    }
}
