//! History read while the daemon is stopped: `log`, `show`, `history` and `blame` read the
//! index as the daemon left it (a clean stop, or `kill -9` with a turn open), print exactly
//! what they printed while it ran, say on stderr that no daemon runs, and write or create
//! nothing in the state directory.

use std::collections::BTreeMap;
use std::process::Output;

use crate::common::*;

/// The commands compared, each in text and as JSON.
const COMMANDS: &[&[&str]] = &[
    &["log"],
    &["log", "--json"],
    &["log", "--session", "s", "--paths"],
    &["history", "a.txt"],
    &["history", "a.txt", "--json"],
    &["show", "1", "--session", "s", "--no-pager"],
    &["show", "1", "--session", "s", "--diff", "--no-pager"],
    &["show", "current", "--session", "s", "--json"],
    &["blame", "a.txt"],
    &["blame", "a.txt", "--json"],
    &["show", "a.txt", "--at", "seq:2"],
    &["sessions"],
    &["sessions", "--json"],
];

/// Two turns of session `s` (the second left open) and an edit in each.
fn record_turns(ws: &Workspace, daemon: &Daemon) {
    daemon.turn_start("s", "first");
    ws.write("a.txt", "one\ntwo\n");
    daemon.turn_end("s");
    daemon.turn_start("s", "second");
    ws.write("a.txt", "one\ntwo\nthree\n");
    ws.write("b.txt", "b\n");
    // Passes the barrier: every write above is recorded.
    daemon.history("a.txt");
}

/// Each command's stdout, asserting it succeeded.
fn outputs(ws: &Workspace) -> Vec<(String, Output)> {
    COMMANDS
        .iter()
        .map(|args| {
            let out = cli_state(ws, args);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            (args.join(" "), out)
        })
        .collect()
}

/// Every file in the state directory and its bytes (the `-shm` by name only: a reader of a
/// log left by a crash may rebuild that shared-memory index, which is not the record).
fn state_files(ws: &Workspace) -> BTreeMap<String, Option<Vec<u8>>> {
    let entries = std::fs::read_dir(ws.state_dir()).expect("read the state directory");
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let bytes = (!name.ends_with("-shm")).then(|| std::fs::read(e.path()).expect("read"));
            (name, bytes)
        })
        .collect()
}

/// The same commands once the daemon is gone: the same stdout, one line on stderr, nothing
/// written.
#[track_caller]
fn assert_read_offline(ws: &Workspace, running: &[(String, Output)]) {
    let before = state_files(ws);
    for ((command, was), (_, now)) in running.iter().zip(outputs(ws)) {
        assert_eq!(
            String::from_utf8_lossy(&now.stdout),
            String::from_utf8_lossy(&was.stdout),
            "`{command}` prints otherwise without its daemon"
        );
        let stderr = String::from_utf8_lossy(&now.stderr);
        assert!(
            stderr.contains("no daemon is running") && stderr.contains("as of its stop"),
            "`{command}`: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "`{command}`: {stderr}");
    }
    assert_eq!(state_files(ws), before, "reading changed the state directory");
}

#[test]
fn history_reads_the_same_after_a_clean_stop() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let daemon = Daemon::start(&ws);
    record_turns(&ws, &daemon);
    daemon.turn_end("s");
    let running = outputs(&ws);
    daemon.stop();
    assert_read_offline(&ws, &running);
    // A clean stop leaves no write-ahead log, and the reads made none.
    assert!(!ws.state_dir().join("index.sqlite-wal").exists());
    assert!(!ws.state_dir().join("index.sqlite-shm").exists());
}

#[test]
fn history_reads_the_same_after_kill_9_with_a_turn_open() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let daemon = Daemon::start(&ws);
    record_turns(&ws, &daemon);
    let running = outputs(&ws);
    daemon.kill9();
    assert!(
        ws.state_dir().join("index.sqlite-wal").exists(),
        "the killed daemon left no write-ahead log: nothing is tested"
    );
    assert_read_offline(&ws, &running);
}

/// The index of another release (its schema version older or newer than this build's) is not
/// read without its daemon: each command says why and what to do, and nothing is written.
#[test]
fn an_index_of_another_release_is_not_read_without_its_daemon_and_says_why() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let daemon = Daemon::start(&ws);
    record_turns(&ws, &daemon);
    daemon.turn_end("s");
    daemon.stop();
    let db = ws.state_dir().join("index.sqlite");
    let known: i64 = rusqlite::Connection::open(&db)
        .and_then(|conn| conn.query_row("PRAGMA user_version", [], |r| r.get(0)))
        .expect("the schema version");
    let upgrade = "`filewatchd start` in the workspace upgrades it";
    for (found, says) in [(known - 1, "older"), (known + 1, "newer")] {
        rusqlite::Connection::open(&db)
            .and_then(|conn| conn.pragma_update(None, "user_version", found))
            .expect("set the schema version");
        let before = state_files(&ws);
        for args in [&["log"][..], &["history", "a.txt"]] {
            let out = cli_state(&ws, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(
                err.contains(&format!("schema version {found}, {says}")),
                "{args:?}: {err}"
            );
            assert_eq!(err.contains(upgrade), says == "older", "{args:?}: {err}");
        }
        assert_eq!(state_files(&ws), before, "nothing written");
    }
}
