//! The files of a burst are read while the command that writes them still runs
//! (`engine::early`), so the end marker after it finds them read and the agent does not wait
//! for them; what was read early of a path stands only while no later write named it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

fn read_early(daemon: &Daemon) -> u64 {
    let status = daemon.status();
    status["watcher"]["read_early"]
        .as_u64()
        .unwrap_or_else(|| panic!("status has no watcher.read_early: {status:#}"))
}

/// Writes `path` and waits until the daemon has read it early (its `read_early` past `before`).
fn write_and_wait_early(ws: &Workspace, daemon: &Daemon, before: u64, path: &str, bytes: &str) {
    ws.write(path, bytes);
    let read = poll_until(Duration::from_secs(10), || {
        (read_early(daemon) > before).then_some(())
    });
    assert!(read.is_some(), "{path} was never read early");
}

/// The change of `path` in a turn's answer.
fn change<'a>(turn: &'a Value, path: &str) -> &'a Value {
    let changes = turn["changes"].as_array().expect("changes");
    changes
        .iter()
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not among the turn's changes: {turn:#}"))
}

fn hash_of(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Runs `during` while another thread appends to `keep.log` every few milliseconds: a burst
/// that never goes quiet, so nothing is recorded for settling meanwhile.
fn in_a_burst<T>(ws: &Workspace, during: impl FnOnce() -> T) -> T {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut log = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(ws.path("keep.log"))
                    .expect("keep.log");
                std::io::Write::write_all(&mut log, format!("{n}\n").as_bytes()).expect("append");
                n += 1;
                // Paces the workload (a command writing as it goes); nothing waits on it.
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        let out = during();
        stop.store(true, Ordering::Relaxed);
        out
    })
}

/// A file read early and written again before the marker is the turn's with its last
/// content: the early read of the first write does not stand for it.
#[test]
fn a_file_written_again_after_its_early_read_ends_the_turn_with_its_last_content() {
    let ws = Workspace::new();
    ws.write("a.txt", "before\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "write twice");
    let before = read_early(&daemon);
    in_a_burst(&ws, || {
        write_and_wait_early(&ws, &daemon, before, "a.txt", "first write\n");
        ws.write("a.txt", "the second and last write\n");
    });
    let turn = daemon.turn_end("s1");
    let a = change(&turn, "a.txt");
    assert_eq!(a["hash"], hash_of(b"the second and last write\n"), "{turn:#}");
    assert_eq!(ws.read("a.txt"), b"the second and last write\n");
    let undone = daemon.undo("s1", serde_json::json!({}));
    assert_eq!(undone.0, 200, "{:#}", undone.1);
    assert_eq!(ws.read("a.txt"), b"before\n");
}

/// Enough files read early are recorded while the burst goes on: the turn still lists each
/// of them, exactly, with what it holds at the marker, and nothing outside the turn.
#[test]
fn files_read_early_are_the_turns_with_what_they_hold_at_the_marker() {
    let ws = Workspace::new();
    for i in 0..700 {
        ws.write(format!("src/f{i:03}.rs"), format!("fn f{i}() {{}}\n"));
    }
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edit 700 files");
    let before = read_early(&daemon);
    in_a_burst(&ws, || {
        for i in 0..700 {
            ws.write(format!("src/f{i:03}.rs"), format!("fn f{i}() {{ edited() }}\n"));
        }
        // The last ten are rewritten once more, early read or not.
        for i in 690..700 {
            ws.write(format!("src/f{i:03}.rs"), format!("fn f{i}() {{ again() }}\n"));
        }
    });
    let turn = daemon.turn_end("s1");
    assert!(
        read_early(&daemon) > before,
        "nothing of the burst was read early"
    );
    let changes = turn["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 701, "700 files and keep.log: {turn:#}");
    for i in 0..700 {
        let body = if i < 690 { "edited()" } else { "again()" };
        let expected = format!("fn f{i}() {{ {body} }}\n");
        let path = format!("src/f{i:03}.rs");
        assert_eq!(
            change(&turn, &path)["hash"],
            hash_of(expected.as_bytes()),
            "{path}"
        );
    }
    let outside = daemon.get("/v1/timeline");
    let entries = outside.1["entries"].as_array().cloned().unwrap_or_default();
    assert!(
        entries.iter().all(|e| e["kind"] != "outside"),
        "nothing of the burst is outside the turn: {:#}",
        outside.1
    );
}

/// A directory moved out of the workspace after its files were read early: no event names
/// its files, and what was read of them does not stand for them: the turn has them deleted.
#[test]
fn files_read_early_in_a_directory_moved_away_are_deleted_by_the_turn() {
    let ws = Workspace::new();
    ws.write("d/x.txt", "x\n");
    let away = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edit, then move d away");
    let before = read_early(&daemon);
    in_a_burst(&ws, || {
        write_and_wait_early(&ws, &daemon, before, "d/x.txt", "edited\n");
        std::fs::rename(ws.path("d"), away.path().join("d")).expect("move d away");
    });
    let turn = daemon.turn_end("s1");
    assert_eq!(change(&turn, "d/x.txt")["change"], "deleted", "{turn:#}");
    assert_eq!(change(&turn, "d")["change"], "deleted", "{turn:#}");
}
