//! What the matrix runs on every file system, each scenario in a workspace of its own: a turn
//! recorded with the barrier, undo and redo, a time rollback and its redo, conflicts under
//! abort, skip and force, and a `kill -9` in the middle of an undo with the restart's recovery.

use std::time::Duration;

use serde_json::{Value, json};

use super::mounts::{Mounted, State};
use crate::common::*;

const PAUSED: &str = "FILEWATCHD_TEST_PAUSE_AFTER reached";
const DEADLINE: Duration = Duration::from_secs(60);

/// The tree once no `.fuse_hidden…` is in it. On LazyFS a file the daemon was still reading
/// when a rollback renamed over it stays as libfuse's stand-in until the daemon closes it,
/// a moment later on a loaded machine (it is never recorded: `tests/rollback_fuse.rs`); one
/// that outlives the deadline is a descriptor never closed, and fails the scenario.
fn snapshot(root: &std::path::Path) -> Tree {
    let is_stand_in = |p: &String| {
        p.rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with(".fuse_hidden"))
    };
    let mut last = Tree::new();
    let settled = poll_until(DEADLINE, || {
        last = crate::common::snapshot(root);
        (!last.keys().any(is_stand_in)).then(|| last.clone())
    });
    settled.unwrap_or_else(|| panic!("a FUSE stand-in outlived {DEADLINE:?}: {last:#?}"))
}

/// One scenario of the matrix, run on one file system with its state dir where `State` says.
pub type Scenario = fn(&Mounted, State);

/// Every scenario with its name, each once with the state dir beside the workspace and the
/// two whose durability crosses file systems once more with the state dir elsewhere.
pub const SCENARIOS: [(&str, Scenario, State); 6] = [
    ("record, barrier, undo, redo", record_undo_redo, State::Beside),
    ("time rollback and its redo", time_rollback, State::Beside),
    ("conflicts: abort, skip, force", conflicts, State::Beside),
    (
        "kill -9 during an undo, recovery",
        killed_undo_recovers,
        State::Beside,
    ),
    (
        "record, undo, redo, state elsewhere",
        record_undo_redo,
        State::Elsewhere,
    ),
    (
        "kill -9 during an undo, state elsewhere",
        killed_undo_recovers,
        State::Elsewhere,
    ),
];

const SEED: [(&str, &[u8]); 6] = [
    ("a.txt", b"a before\n"),
    ("gone.txt", b"deleted by the turn\n"),
    ("mv_a.txt", b"renamed by the turn\n"),
    ("tool.sh", b"#!/bin/sh\necho tool\n"),
    ("sub/c.txt", b"c before\n"),
    ("steady.txt", b"never changed\n"),
];

/// Edits, a delete, a rename, a chmod, a symlink and a new directory tree.
const TURN: &str = r#"
echo "a after" > a.txt
rm gone.txt
mv mv_a.txt mv_b.txt
chmod +x tool.sh
ln -s a.txt link
mkdir -p new/d && echo deep > new/d/x.txt
echo "c after" > sub/c.txt
"#;

#[track_caller]
fn assert_filesystem(fs: &Mounted, d: &Daemon, probed: bool) {
    let status = d.status();
    let found = &status["filesystem"];
    assert_eq!(found["type"], fs.kind.status_type(), "{found:#}");
    assert_eq!(found["install_mode"], fs.kind.install_mode(), "{found:#}");
    assert_eq!(found["probed"], probed, "{found:#}");
}

/// The record equals the disk: an empty turn finds nothing to list.
#[track_caller]
fn assert_record_is_disk(d: &Daemon, what: &str) {
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(
        changes(&turn).is_empty(),
        "{what}: the record differs from the disk: {turn:#}"
    );
}

fn record_undo_redo(fs: &Mounted, state: State) {
    let ws = fs.workspace(&SEED, state);
    let d = Daemon::start(&ws);
    ws.write("outside.txt", "written before the turn\n");
    let before = snapshot(ws.root());
    d.turn_start("s", "the turn");
    ws.sh(TURN);
    ws.write("last.txt", "written right before the end marker\n");
    let turn = d.turn_end("s");
    let listed = changed_files(&turn);
    for path in [
        "a.txt",
        "gone.txt",
        "mv_b.txt",
        "tool.sh",
        "link",
        "new/d/x.txt",
        "sub/c.txt",
    ] {
        assert!(listed.contains(path), "{path} not in the turn: {listed:?}");
    }
    assert!(listed.contains("last.txt"), "the barrier: {listed:?}");
    assert!(!listed.contains("outside.txt"), "before the turn: {listed:?}");
    let after = snapshot(ws.root());
    assert_filesystem(fs, &d, false);

    all_done(&rollback_applied(d.undo("s", json!({}))));
    assert_tree_eq(&before, &snapshot(ws.root()), "after the undo");
    assert_filesystem(fs, &d, true);
    all_done(&rollback_applied(d.redo("s", json!({}))));
    assert_tree_eq(&after, &snapshot(ws.root()), "after the redo");
    assert_record_is_disk(&d, "after the redo");
    d.stop();
}

fn time_rollback(fs: &Mounted, state: State) {
    let ws = fs.workspace(&[("t.txt", b"v0\n")], state);
    let d = Daemon::start(&ws);
    d.turn_start("s", "one");
    ws.write("t.txt", "v1\n");
    ws.write("u.txt", "made by turn one\n");
    d.turn_end("s");
    let mark = time_mark();
    let at_mark = snapshot(ws.root());
    d.turn_start("s", "two");
    ws.write("t.txt", "v2\n");
    ws.remove("u.txt");
    ws.write("w/x.txt", "made by turn two\n");
    d.turn_end("s");
    let after = snapshot(ws.root());

    rollback_applied(d.rollback_in_time(json!({"at": mark})));
    assert_tree_eq(&at_mark, &snapshot(ws.root()), "after the time rollback");
    rollback_applied(d.redo_in_time(json!({})));
    assert_tree_eq(&after, &snapshot(ws.root()), "after its redo");
    assert_record_is_disk(&d, "after the redo");
    d.stop();
}

/// A turn changes both files, then someone else changes `theirs.txt`: abort refuses, skip
/// leaves it, force rolls it back too.
fn conflicts(fs: &Mounted, state: State) {
    let ws = fs.workspace(
        &[("mine.txt", b"mine before\n"), ("theirs.txt", b"theirs before\n")],
        state,
    );
    let d = Daemon::start(&ws);
    let before = snapshot(ws.root());
    d.turn_start("s", "the turn");
    ws.write("mine.txt", "mine after\n");
    ws.write("theirs.txt", "theirs after\n");
    d.turn_end("s");
    ws.write("theirs.txt", "someone else's\n");
    let changed = snapshot(ws.root());

    let (status, body) = d.undo("s", json!({}));
    assert_eq!(status, OnConflict::Refused.status(), "abort: {body:#}");
    assert_eq!(body["error"]["code"], "conflicts", "{body:#}");
    assert_eq!(listed_paths(&body, "conflicts"), set(["theirs.txt"]), "{body:#}");
    assert_tree_eq(&changed, &snapshot(ws.root()), "abort changes nothing");

    let skipped = expect(200, d.undo("s", json!({"on_conflict": "skip"})));
    assert_eq!(
        listed_paths(&skipped, "skipped"),
        set(["theirs.txt"]),
        "{skipped:#}"
    );
    assert_eq!(ws.read("mine.txt"), b"mine before\n");
    assert_eq!(ws.read("theirs.txt"), b"someone else's\n", "skip leaves it");
    rollback_applied(d.redo("s", json!({})));
    assert_tree_eq(&changed, &snapshot(ws.root()), "the skip's redo");

    let forced = expect(200, d.undo("s", json!({"on_conflict": "force"})));
    assert_eq!(forced["applied"], true, "{forced:#}");
    assert_tree_eq(&before, &snapshot(ws.root()), "force rolls it back too");
    assert_record_is_disk(&d, "after the forced undo");
    d.stop();
}

/// Files the crash scenario's turn rewrites, in three directories.
const FILES: usize = 9;

fn file(i: usize) -> String {
    format!("d{}/f{i}.txt", i % 3)
}

/// An undo parked half-way (`FILEWATCHD_TEST_PAUSE_AFTER`) and the daemon killed: the restart
/// finishes it (the tree is exactly the undo's target), says so, and the retry of the same
/// request answers the finished undo; the session's redo then conflicts with nothing.
fn killed_undo_recovers(fs: &Mounted, state: State) {
    let seed: Vec<(String, Vec<u8>)> = (0..FILES)
        .map(|i| (file(i), format!("before {i}\n").into_bytes()))
        .collect();
    let seed: Vec<(&str, &[u8])> = seed.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
    let ws = fs.workspace(&seed, state);
    let d = Daemon::start(&ws);
    let before = snapshot(ws.root());
    d.turn_start("s", "rewrite everything");
    for i in 0..FILES {
        ws.write(file(i), format!("after {i}, a longer line than before\n"));
    }
    ws.write("d0/new.txt", "made by the turn\n");
    d.turn_end("s");
    let after = snapshot(ws.root());
    d.stop();
    fs.before_restart();

    let half = (FILES / 2).to_string();
    let env = [
        ("FILEWATCHD_TEST_PAUSE_AFTER", half.as_str()),
        ("RUST_LOG", "filewatchd=info"),
    ];
    let d = Daemon::start_with_env(&ws, &[], &env);
    let body = json!({"op_id": "the-undo"});
    let parked = kill_when_parked(d, "/v1/sessions/s/undo", body.clone(), ws.root());
    assert!(
        parked != before && parked != after,
        "killed half-way: {parked:#?}"
    );
    fs.before_restart();

    let d = Daemon::start(&ws);
    assert_tree_eq(&before, &snapshot(ws.root()), "the restart finished the undo");
    let recovery = &d.status()["recovery"];
    assert_eq!(recovery["outcome"], "finished", "{recovery:#}");
    assert_eq!(recovery["left"], json!([]), "{recovery:#}");
    let again = expect(200, d.undo("s", body));
    all_done(&again);
    assert_tree_eq(&before, &snapshot(ws.root()), "after the retry");
    rollback_applied(d.redo("s", json!({})));
    assert_tree_eq(&after, &snapshot(ws.root()), "after the redo");
    assert_record_is_disk(&d, "after the redo");
    d.stop();
}

/// Sends the request, waits until the daemon says the rollback parked, and kills it; the tree
/// as it was then (the rollback's temp files left out).
fn kill_when_parked(d: Daemon, path: &str, body: Value, root: &std::path::Path) -> Tree {
    let answer = d.post_detached(path, body);
    let parked = poll_until(DEADLINE, || {
        if let Ok(reply) = answer.try_recv() {
            panic!("{path} finished before it parked: {reply:?}");
        }
        d.stderr().contains(PAUSED).then_some(())
    });
    assert!(parked.is_some(), "{path} never parked; stderr:\n{}", d.stderr());
    let mut tree = snapshot(root);
    tree.retain(|p, _| {
        !p.rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with(".filewatchd-tmp-"))
    });
    d.kill9();
    let reply = answer
        .recv_timeout(DEADLINE)
        .expect("the pending request never ended");
    assert!(reply.is_none(), "the killed {path} answered: {reply:?}");
    tree
}
