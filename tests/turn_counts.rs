//! The counts the turns listing gives are stored when a turn ends (so a long session lists fast):
//! they must be the numbers the turn's own answer computes from its net changes, over a varied
//! history (a write made while turns of two sessions were open, renames, deletions, an undo and
//! its redo, a fork, an open turn) and after retention has collapsed the oldest turns' history.
//! Each ended turn's row in the index is compared too, so the listing cannot pass by computing
//! everything on read.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};

/// Each session's turns: the listing's counts and each turn's own (computed) counts.
fn listed_and_computed(daemon: &Daemon, session: &str) -> Vec<(i64, Value, Value)> {
    daemon
        .turn_list(session)
        .iter()
        .map(|turn| {
            let number = turn["turn"].as_u64().expect("turn number");
            let own = daemon.turn(session, number, false);
            (
                turn["turn"].as_i64().unwrap_or(0),
                turn["counts"].clone(),
                own["counts"].clone(),
            )
        })
        .collect()
}

fn assert_listing_matches(daemon: &Daemon, sessions: &[&str], when: &str) {
    for session in sessions {
        for (turn, listed, computed) in listed_and_computed(daemon, session) {
            assert_eq!(listed, computed, "{when}: counts of {session} turn {turn}");
        }
    }
}

/// The stored rows (turn id → counts) of the index, read beside the running daemon.
fn stored_rows(ws: &Workspace) -> BTreeMap<i64, Value> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let conn = rusqlite::Connection::open_with_flags(ws.state_dir().join("index.sqlite"), flags)
        .expect("open the index read-only");
    let mut stmt = conn
        .prepare("SELECT turn_id, added, modified, deleted, renamed, ambiguous FROM turn_counts")
        .expect("turn_counts");
    let rows = stmt
        .query_map([], |r| {
            let n = |i| r.get::<_, i64>(i);
            let counts = json!({"added": n(1)?, "modified": n(2)?, "deleted": n(3)?,
                                "renamed": n(4)?, "ambiguous": n(5)?});
            Ok((r.get(0)?, counts))
        })
        .expect("rows");
    rows.map(|row| row.expect("row")).collect()
}

/// Every ended turn's counts, as its own answer computes them, by the ids the index uses
/// (turns are numbered in the order they started, so ids follow `started_at`).
fn ended_turns(daemon: &Daemon, sessions: &[&str]) -> BTreeMap<String, Value> {
    let mut ended = BTreeMap::new();
    for session in sessions {
        for turn in daemon.turn_list(session) {
            if turn["ended_at"].is_null() || turn["session"] != *session {
                continue;
            }
            let number = turn["turn"].as_u64().expect("turn number");
            let own = daemon.turn(session, number, false);
            ended.insert(format!("{session}/{number}"), own["counts"].clone());
        }
    }
    ended
}

/// Waits until the index holds a row for every ended turn, then compares the rows, as a
/// multiset, with the computed counts (the test knows turns by session and number, the
/// index by id).
fn assert_rows_match(ws: &Workspace, daemon: &Daemon, sessions: &[&str], when: &str) {
    let computed = ended_turns(daemon, sessions);
    let rows = poll_until(Duration::from_secs(30), || {
        let rows = stored_rows(ws);
        (rows.len() == computed.len()).then_some(rows)
    })
    .unwrap_or_else(|| panic!("{when}: the index never stored a row for each of {computed:#?}"));
    let mut want: Vec<String> = computed.values().map(Value::to_string).collect();
    let mut have: Vec<String> = rows.values().map(Value::to_string).collect();
    want.sort();
    have.sort();
    assert_eq!(have, want, "{when}: stored rows against computed counts");
}

#[test]
fn stored_counts_are_the_computed_counts_over_a_varied_history() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "keep_days = 0\nkeep_turns = 0\n");
    for i in 0..6 {
        ws.write(format!("src/f{i}.txt"), noise(i, 600));
    }
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "adds and edits");
    ws.write("src/new.txt", "new\n");
    ws.write("src/f0.txt", noise(100, 600));
    daemon.turn_end("s1");

    // Two sessions' turns open: what is written meanwhile is ambiguous, in both.
    daemon.turn_start("s1", "shared");
    daemon.turn_start("s2", "shared too");
    ws.write("src/f1.txt", noise(101, 600));
    ws.write("shared.txt", "both\n");
    daemon.turn_end("s2");
    ws.write("src/f2.txt", noise(102, 600));
    daemon.turn_end("s1");

    daemon.turn_start("s1", "renames and deletes");
    ws.sh("mv src/f3.txt src/moved.txt && rm src/f4.txt && mkdir -p dir/sub && echo x > dir/sub/x");
    ws.write("src/f5.txt", noise(105, 600));
    ws.remove("src/f5.txt"); // edited, then deleted
    daemon.turn_end("s1");

    rollback_applied(daemon.undo("s1", json!({})));
    rollback_applied(daemon.redo("s1", json!({})));

    let (status, forked) = daemon.fork("s1", "s1f", json!(2));
    assert_eq!(status, 201, "{forked:#}");
    daemon.turn_start("s1f", "fork's own");
    ws.write("src/f0.txt", noise(200, 600));
    daemon.turn_end("s1f");

    for i in 4..=6 {
        daemon.turn_start("s1", &format!("turn {i}"));
        ws.write(format!("later/{i}.txt"), noise(300 + i, 200));
        ws.write("src/f1.txt", noise(400 + i, 600));
        daemon.turn_end("s1");
    }
    daemon.turn_start("s1", "left open");
    ws.write("src/open.txt", "open\n");

    let sessions = ["s1", "s2", "s1f"];
    let s2 = daemon.turn(sessions[1], 1, false);
    assert_eq!(s2["counts"]["ambiguous"], 2, "the shared writes: {s2:#}");
    assert_listing_matches(&daemon, &sessions, "before gc");
    assert_rows_match(&ws, &daemon, &sessions, "before gc");

    // Retention collapses the oldest turns' history: what they count changes with it.
    let report = daemon.gc(false);
    assert!(report["turns_expired"].as_i64().unwrap_or(0) > 0, "{report:#}");
    assert_listing_matches(&daemon, &sessions, "after gc");
    assert_rows_match(&ws, &daemon, &sessions, "after gc");

    // Counts missing at start-up (an index from before they were stored) are filled.
    daemon.stop();
    let conn = rusqlite::Connection::open(ws.state_dir().join("index.sqlite")).expect("open");
    conn.execute("DELETE FROM turn_counts", [])
        .expect("forget the rows");
    drop(conn);
    let daemon = Daemon::start(&ws);
    assert_listing_matches(&daemon, &sessions, "after a restart without rows");
    assert_rows_match(&ws, &daemon, &sessions, "after a restart without rows");
}
