//! The review API's costs, measured on the library the handlers call, in one read
//! snapshot as the API reads: blame of a file with 500 versions, one page (100 entries) of
//! the timeline of a 1,000-turn session with each turn's reviewed mark, and the net changes
//! and marks of a turn of 2,000 files (what `GET /v1/sessions/{s}/turns/{n}` renders).
//!
//! `cargo bench --bench review` (add `-- --quick` for a short run).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rusqlite::Connection;

use filewatchd::history::{self, blame};
use filewatchd::model::{Content, FileState, Hash, Origin, State};
use filewatchd::paths::RelPath;
use filewatchd::sessions::review;
use filewatchd::sessions::turns::{self, TurnMarker, TurnSelector};
use filewatchd::store::blobs::BlobDir;
use filewatchd::store::{db, sql};
use filewatchd::timeline::{self, Scope};

fn store() -> (tempfile::TempDir, Connection, BlobDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = db::open_writer(&dir.path().join("index.sqlite")).expect("db");
    let blobs = BlobDir::open(dir.path().join("blobs")).expect("blobs");
    (dir, conn, blobs)
}

/// Stores `bytes` and returns the state of a file holding them.
fn stored(conn: &Connection, blobs: &BlobDir, bytes: &[u8]) -> State {
    let hash = Hash::of(bytes);
    let blob = blobs.prepare(hash, bytes).expect("blob");
    sql::insert_blob(conn, &blob).expect("blob row");
    State::File(FileState {
        content: Content::Stored(hash),
        size: bytes.len() as u64,
        executable: false,
        mode: Some(0o644),
    })
}

fn marker(label: String) -> TurnMarker {
    TurnMarker {
        turn_ref: None,
        label: Some(label),
        agent: None,
    }
}

/// One turn of session `s`, writing what `write` records inside it.
fn turn(conn: &mut Connection, label: String, write: impl FnOnce(&Connection, i64)) {
    let started = turns::start(conn, "s", &marker(label)).expect("start");
    write(conn, started.turn.id);
    turns::end(conn, "s", &TurnSelector::Current, None).expect("end");
}

/// A 2,000-line file edited by 500 turns, each changing one line and adding one.
fn blame_500_versions(c: &mut Criterion) {
    let (_dir, mut conn, blobs) = store();
    let path = RelPath::from_fs_bytes(b"src/big.rs".to_vec());
    let id = sql::ensure_path(&conn, &path).expect("path");
    let mut lines: Vec<String> = (0..2000).map(|i| format!("    let line_{i} = {i};\n")).collect();
    for v in 0..500 {
        lines[(v * 7) % 2000] = format!("    let edited_{v} = {v};\n");
        lines.push(format!("    let added_{v} = {v};\n"));
        let content = lines.concat();
        turn(&mut conn, format!("edit {v}"), |conn, turn_id| {
            let state = stored(conn, &blobs, content.as_bytes());
            sql::insert_version(conn, id, &state, Origin::Turn, Some(turn_id), None, 0).expect("version");
        });
    }
    c.bench_function("blame of a file with 500 versions (2,500 lines)", |b| {
        b.iter(|| {
            let tx = conn.unchecked_transaction().expect("snapshot");
            let found = blame::blame(&tx, &blobs, black_box(&path), None).expect("blame");
            assert_eq!(found.lines.len(), 2500);
        });
    });
}

/// 1,000 turns of one file each: the newest page of 100, with each turn's marks.
fn timeline_1000_turns(c: &mut Criterion) {
    let (_dir, mut conn, blobs) = store();
    for t in 0..1000 {
        let path = RelPath::from_fs_bytes(format!("f{t}.txt").into_bytes());
        turn(&mut conn, format!("turn {t}"), |conn, turn_id| {
            let id = sql::ensure_path(conn, &path).expect("path");
            let state = stored(conn, &blobs, format!("{t}\n").as_bytes());
            sql::insert_version(conn, id, &state, Origin::Turn, Some(turn_id), None, 0).expect("version");
        });
    }
    let query = timeline::Query {
        scope: Scope::Session("s".into()),
        since_ms: None,
        before: None,
        limit: 100,
        with_paths: true,
    };
    c.bench_function(
        "timeline page of a 1,000-turn session (100 entries, marks)",
        |b| {
            b.iter(|| {
                let tx = conn.unchecked_transaction().expect("snapshot");
                let page = timeline::page(&tx, black_box(&query)).expect("page");
                let mut reviewed = 0;
                for entry in &page.entries {
                    if let timeline::Entry::Turn(t) = entry {
                        let marks =
                            review::of_turn(&tx, t.turn.id, &t.turn.session, t.turn.number).expect("marks");
                        reviewed += usize::from(marks.reviewed);
                    }
                }
                black_box(reviewed);
                assert_eq!(page.entries.len(), 100);
            });
        },
    );
}

/// One turn writing 2,000 files: its net changes and marks.
fn turn_of_2000_files(c: &mut Criterion) {
    let (_dir, mut conn, blobs) = store();
    turn(&mut conn, "many".into(), |conn, turn_id| {
        for f in 0..2000 {
            let path = RelPath::from_fs_bytes(format!("d{}/f{f}.rs", f % 40).into_bytes());
            let id = sql::ensure_path(conn, &path).expect("path");
            let state = stored(conn, &blobs, format!("fn f{f}() {{}}\n").as_bytes());
            sql::insert_version(conn, id, &state, Origin::Turn, Some(turn_id), None, 0).expect("version");
        }
    });
    let row = turns::find(&conn, "s", &TurnSelector::Number(1)).expect("turn");
    c.bench_function("turn page of 2,000 files (net changes, marks)", |b| {
        b.iter(|| {
            let tx = conn.unchecked_transaction().expect("snapshot");
            let changes = history::turn_changes(&tx, black_box(&row)).expect("changes");
            let marks = review::of_turn(&tx, row.id, &row.session, row.number).expect("marks");
            let reviewed = changes.iter().filter(|c| marks.covers(&c.path)).count();
            assert_eq!((changes.len(), reviewed), (2000, 0));
        });
    });
}

criterion_group!(
    benches,
    blame_500_versions,
    timeline_1000_turns,
    turn_of_2000_files
);
criterion_main!(benches);
