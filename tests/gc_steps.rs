//! A collection runs a step at a time, each its own transaction, with hints recorded between
//! steps: it must keep exactly what the one statement of earlier releases kept
//! (the same versions, paths, journal rows and blobs), and capture must go on while it runs.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::*;
use rusqlite::Connection;
use serde_json::json;

/// The collapse of earlier releases, as one statement per table (`store::gc` before 19.3).
const COLLAPSIBLE: &str = "FROM versions WHERE seq <= ?1
    AND seq NOT IN (SELECT max(pv.seq) FROM pins p JOIN versions pv ON pv.seq <= p.seq
                    WHERE p.seq < ?1 GROUP BY p.id, pv.path_id)
    AND (seq NOT IN (SELECT max(seq) FROM versions WHERE seq <= ?1 GROUP BY path_id)
         OR (kind = 0 AND path_id NOT IN (SELECT pv.path_id FROM pins p JOIN versions pv
                                          ON pv.seq <= p.seq WHERE p.seq < ?1)))";

fn collect_at_once(conn: &Connection, cutoff: i64) {
    conn.execute(
        &format!(
            "DELETE FROM rollback_steps WHERE rollback_id IN (SELECT id FROM rollbacks WHERE status NOT IN ('prepared', 'reverting') AND temps_left = 0)
               AND (current_seq IN (SELECT seq {COLLAPSIBLE}) OR target_seq IN (SELECT seq {COLLAPSIBLE}))"
        ),
        [cutoff],
    )
    .expect("journal rows");
    conn.execute(&format!("DELETE {COLLAPSIBLE}"), [cutoff])
        .expect("versions");
    conn.execute(
        "DELETE FROM paths WHERE NOT EXISTS (SELECT 1 FROM versions v WHERE v.path_id = paths.id)",
        [],
    )
    .expect("paths");
    conn.execute(
        "DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM versions WHERE hash IS NOT NULL)",
        [],
    )
    .expect("blobs");
}

/// What a collection keeps, as rows: versions, paths, journal steps and blobs (up to `seq`).
fn kept(conn: &Connection, seq: i64) -> Vec<String> {
    let queries = [
        "SELECT 'version ' || seq || ' ' || path_id FROM versions WHERE seq <= ?1 ORDER BY seq",
        "SELECT 'path ' || id FROM paths WHERE id IN (SELECT path_id FROM versions WHERE seq <= ?1) ORDER BY id",
        "SELECT 'step ' || rollback_id || ' ' || ord FROM rollback_steps WHERE ?1 IS NOT NULL ORDER BY 1",
        "SELECT 'blob ' || hex(hash) FROM blobs WHERE hash IN (SELECT hash FROM versions WHERE seq <= ?1) ORDER BY 1",
    ];
    let mut rows = Vec::new();
    for sql in queries {
        let mut stmt = conn.prepare(sql).expect(sql);
        let found = stmt.query_map([seq], |r| r.get::<_, String>(0)).expect(sql);
        rows.extend(found.map(|row| row.expect("row")));
    }
    rows
}

fn index_of(dir: &Path) -> std::path::PathBuf {
    dir.join("index.sqlite")
}

/// Twelve turns over forty paths: edits, deletions (a path whose latest state is "absent"),
/// a re-created path, a pin in the middle and an undo with its journal.
fn varied_history(ws: &Workspace, daemon: &Daemon) {
    for i in 0..40 {
        ws.write(format!("p/{i:02}.txt"), noise(i, 300));
    }
    for t in 1..=12u64 {
        daemon.turn_start("s1", &format!("turn {t}"));
        for i in (t % 4..40).step_by(4) {
            ws.write(format!("p/{i:02}.txt"), noise(1000 * t + i, 300));
        }
        match t {
            3 => ws.sh("rm p/01.txt p/02.txt"),
            5 => ws.write("p/01.txt", "back\n"),
            7 => ws.sh("rm -r p/03.txt && mkdir -p d/e && echo deep > d/e/f.txt"),
            _ => {}
        }
        daemon.turn_end("s1");
        if t == 6 {
            let (status, pin) = daemon.pin(json!({"name": "middle", "session": "s1", "turn": 4}));
            assert_eq!(status, 201, "{pin:#}");
        }
        if t == 9 || t == 12 {
            rollback_applied(daemon.undo("s1", json!({})));
            rollback_applied(daemon.redo("s1", json!({})));
        }
    }
}

/// A varied history kept to its last two turns, the daemon stopped, and its index copied
/// whole into a temp dir (a clean stop leaves it checkpointed).
fn saved_history(ws: &Workspace) -> tempfile::TempDir {
    ws.write(".filewatchd.toml", "keep_days = 0\nkeep_turns = 2\n");
    let daemon = Daemon::start(ws);
    varied_history(ws, &daemon);
    daemon.stop();
    let saved = tempfile::tempdir().expect("tempdir");
    std::fs::copy(index_of(ws.state_dir()), index_of(saved.path())).expect("copy the index");
    saved
}

/// The ways to step, by test knobs: one path id per collapse (the other phases adapt), and
/// three rows per step of every phase.
const STEPPINGS: [&[(&str, &str)]; 2] = [
    &[("FILEWATCHD_TEST_GC_STEP_PATHS", "1")],
    &[("FILEWATCHD_TEST_GC_STEP_ROWS", "3")],
];

#[test]
fn a_collection_in_steps_keeps_exactly_what_one_statement_kept() {
    let ws = Workspace::new();
    let saved = saved_history(&ws);

    for stepping in STEPPINGS {
        put_back(saved.path(), ws.state_dir());
        let daemon = Daemon::start_with_env(&ws, &[], stepping);
        let report = daemon.gc(false);
        let cutoff = report["cutoff_seq"].as_i64().expect("cutoff");
        assert!(
            report["versions_removed"].as_i64().unwrap_or(0) > 50,
            "{stepping:?}: {report:#}"
        );
        daemon.stop();

        let (reference, _dir) = collected_at_once(saved.path(), cutoff);
        let stepped = Connection::open(index_of(ws.state_dir())).expect("open the index");
        let latest = latest_seq(&reference);
        let (want, have) = (kept(&reference, latest), kept(&stepped, latest));
        assert!(
            want.iter().any(|row| row.starts_with("step ")),
            "the undo's journal: {want:#?}"
        );
        assert_eq!(
            have, want,
            "a collection in steps ({stepping:?}) against one statement (cutoff {cutoff})"
        );
        assert_sound(&stepped);
    }
}

/// Where a collection is killed: a few steps into each of its phases, one after the other.
const KILLED_AT: [&str; 3] = ["collapse:5", "list:2", "sweep:1"];

#[test]
fn a_collection_killed_between_steps_loses_nothing_and_leaves_nothing_dangling() {
    let ws = Workspace::new();
    let saved = saved_history(&ws);
    let original = Connection::open(index_of(saved.path())).expect("open the copy");
    let latest = latest_seq(&original);

    let mut horizons = Vec::new();
    for at in KILLED_AT {
        let env = [
            ("FILEWATCHD_TEST_GC_STEP_ROWS", "3"),
            ("FILEWATCHD_TEST_GC_HOLD_AT", at),
        ];
        let daemon = Daemon::start_with_env(&ws, &[], &env);
        let _gc = post_unanswered(&daemon, "/v1/gc");
        let phase = at.split(':').next().unwrap_or(at);
        let held = poll_until(Duration::from_secs(60), || {
            let log = daemon.stderr();
            let line = log.lines().find(|l| l.contains("the collection is held"))?;
            Some(line.to_string())
        });
        let held = held.unwrap_or_else(|| panic!("never held at {at}:\n{}", daemon.stderr()));
        assert!(held.contains(phase), "held at {at}: {held}");
        daemon.kill9();

        let index = Connection::open(index_of(ws.state_dir())).expect("open the index");
        assert_sound(&index);
        let horizon: i64 = index
            .query_row("SELECT value FROM meta WHERE key = 'horizon'", [], |r| r.get(0))
            .expect("the horizon the collection set");
        horizons.push(horizon);
        // Nothing the whole collection keeps is gone, whatever step it was killed after.
        let (reference, _dir) = collected_at_once(saved.path(), horizon);
        let have = kept(&index, latest);
        let want = kept(&reference, latest);
        let lost: Vec<&String> = want.iter().filter(|row| !have.contains(row)).collect();
        assert!(lost.is_empty(), "killed at {at}, lost: {lost:#?}");
    }
    assert!(horizons.windows(2).all(|w| w[0] == w[1]), "{horizons:?}");

    // A collection run to its end after the kills keeps exactly what one statement keeps.
    let daemon = Daemon::start(&ws);
    let report = daemon.gc(false);
    let cutoff = report["cutoff_seq"].as_i64().expect("cutoff");
    assert_eq!(Some(&cutoff), horizons.first(), "{report:#}");
    daemon.stop();
    let (reference, _dir) = collected_at_once(saved.path(), cutoff);
    let index = Connection::open(index_of(ws.state_dir())).expect("open the index");
    assert_eq!(kept(&index, latest), kept(&reference, latest));
    assert_sound(&index);
}

/// Replaces the workspace's index with the one saved in `saved` (no WAL beside it).
fn put_back(saved: &Path, state_dir: &Path) {
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(state_dir.join(format!("index.sqlite{suffix}")));
    }
    std::fs::copy(index_of(saved), index_of(state_dir)).expect("put the index back");
}

/// A copy of the index saved in `saved`, collected by one statement per table.
fn collected_at_once(saved: &Path, cutoff: i64) -> (Connection, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(index_of(saved), index_of(dir.path())).expect("copy the index");
    let conn = Connection::open(index_of(dir.path())).expect("open the copy");
    collect_at_once(&conn, cutoff);
    (conn, dir)
}

fn latest_seq(conn: &Connection) -> i64 {
    conn.query_row("SELECT max(seq) FROM versions", [], |r| r.get(0))
        .expect("latest")
}

/// Nothing dangles: the index is sound, every row names what is there (foreign keys), every
/// version's content has its blob, and the store size counter is the sum of the blob rows.
fn assert_sound(conn: &Connection) {
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity check");
    assert_eq!(check, "ok");
    let mut stmt = conn
        .prepare("PRAGMA foreign_key_check")
        .expect("foreign key check");
    let dangling: Vec<String> = stmt
        .query_map([], |r| {
            Ok(format!(
                "{}: {:?}",
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?
            ))
        })
        .expect("foreign key check")
        .map(|row| row.expect("row"))
        .collect();
    assert!(dangling.is_empty(), "rows naming what is gone: {dangling:#?}");
    let missing: i64 = conn
        .query_row(
            "SELECT count(*) FROM versions v WHERE v.hash IS NOT NULL AND v.too_large = 0
               AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = v.hash)",
            [],
            |r| r.get(0),
        )
        .expect("versions without their blob");
    assert_eq!(missing, 0, "versions whose content is gone");
    let (counted, summed): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT bytes FROM store_size), (SELECT coalesce(sum(stored_size), 0) FROM blobs)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("store size");
    assert_eq!(counted, summed, "the store size counter against its blob rows");
}

/// Sends `POST path` with an empty JSON body and leaves its answer unread: the request of a
/// daemon about to be killed (the connection stays open while the stream lives).
fn post_unanswered(daemon: &Daemon, path: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(daemon.host()).expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}",
        daemon.host(),
        daemon.bearer()
    );
    stream.write_all(request.as_bytes()).expect("send the request");
    stream
}

#[test]
fn capture_records_writes_while_a_collection_is_under_way() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "keep_days = 0\nkeep_turns = 1\n");
    let hold = ws.home().join("hold-gc");
    let hold_text = hold.to_string_lossy().into_owned();
    let env = [
        ("FILEWATCHD_TEST_GC_STEP_PATHS", "1"),
        ("FILEWATCHD_TEST_GC_HOLD", hold_text.as_str()),
    ];
    let daemon = Daemon::start_with_env(&ws, &[], &env);
    varied_history(&ws, &daemon);
    std::fs::write(&hold, "").expect("hold the collection");

    std::thread::scope(|scope| {
        let (done, report) = mpsc::channel();
        let daemon = &daemon;
        scope.spawn(move || {
            let _ = done.send(daemon.gc(false));
        });
        // The collection has begun: its cutoff is the horizon, turn 1 has expired.
        let begun = poll_until(Duration::from_secs(30), || {
            let turn = daemon.turn("s1", 1, false);
            (turn["expired"] == true).then_some(())
        });
        assert!(begun.is_some(), "the collection never began");

        ws.write("during.txt", "written while the collection is held\n");
        ws.write("p/00.txt", "edited while the collection is held\n");
        let history = daemon.history("during.txt");
        assert_eq!(
            history["versions"].as_array().map(Vec::len),
            Some(1),
            "{history:#}"
        );
        let turn = daemon.turn_start("s1", "during the collection");
        assert_eq!(turn["turn"], 13, "{turn:#}");
        assert!(
            matches!(report.try_recv(), Err(mpsc::TryRecvError::Empty)),
            "the collection ended while held"
        );

        std::fs::remove_file(&hold).expect("release the collection");
        let report = report
            .recv_timeout(Duration::from_secs(120))
            .expect("the gc report");
        assert!(report["versions_removed"].as_i64().unwrap_or(0) > 0, "{report:#}");
    });
    let history = daemon.history("p/00.txt");
    let versions = history["versions"].as_array().expect("versions");
    let last = versions.last().expect("a version");
    assert_eq!(
        last["size"], 36,
        "the write made during the collection stays: {history:#}"
    );
    let ended = daemon.turn_end("s1");
    assert_eq!(ended["counts"]["modified"], 0, "{ended:#}");
}
