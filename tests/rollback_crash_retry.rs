//! G12 after a crash: what a killed rollback wrote, and what the recovery put back, is never
//! recorded as anyone else's change. A rollback (undo or redo) is killed with `kill -9` at
//! several points: while a temp file is half-written (its creation held by strace's
//! `delay_exit`, so the daemon dies with an empty temp file on disk), and after K of its
//! changes (`FILEWATCHD_TEST_PAUSE_AFTER`). After the restart no path has an `outside`
//! version, the retry of the same request (its `op_id`) answers the finished rollback, and
//! the session's next redo and undo meet no conflict.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);
const PAUSED: &str = "FILEWATCHD_TEST_PAUSE_AFTER reached";
/// Four directories of three files: the rollback writes temp files in each.
const DIRS: usize = 4;
const FILES: usize = 12;

/// Where the rollback is killed.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// The first temp file created in directory `d{N}` is held right after its creation.
    WritingIn(usize),
    /// After K file changes.
    AfterChanges(usize),
}

fn file(i: usize) -> String {
    format!("d{}/f{i}.txt", i % DIRS)
}

/// A turn that rewrote every file; returns the tree before and after it.
fn turn(ws: &Workspace) -> (Tree, Tree) {
    for i in 0..FILES {
        ws.write(file(i), format!("before {i}\n"));
    }
    let daemon = Daemon::start(ws);
    let before = snapshot(ws.root());
    daemon.turn_start("s1", "rewrite every file");
    for i in 0..FILES {
        ws.write(file(i), format!("after {i}, a longer line than before\n"));
    }
    daemon.turn_end("s1");
    let after = snapshot(ws.root());
    drop(daemon);
    (before, after)
}

/// The temp files of ours in `dir` and their sizes.
fn temps_in(dir: &std::path::Path) -> Vec<u64> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    listing
        .flatten()
        .filter(|e| e.file_name().as_encoded_bytes().starts_with(b".filewatchd-tmp-"))
        .filter_map(|e| e.metadata().ok().map(|m| m.len()))
        .collect()
}

/// Sends `path` (with `body`) and kills the daemon at `kill`. False when strace is missing.
fn kill_during(ws: &Workspace, kill: Kill, path: &str, body: Value) -> bool {
    let k_text = match kill {
        Kill::AfterChanges(k) => k.to_string(),
        Kill::WritingIn(_) => String::new(),
    };
    let env = [("FILEWATCHD_TEST_PAUSE_AFTER", k_text.as_str())];
    let daemon = match kill {
        Kill::AfterChanges(_) => Daemon::start_with_env(ws, &[], &env),
        Kill::WritingIn(_) => Daemon::start(ws),
    };
    let mut strace = None;
    if let Kill::WritingIn(n) = kill {
        let dir: PathBuf = ws.root().join(format!("d{n}")).canonicalize().unwrap();
        let dir = dir.display().to_string();
        let args = [
            "-P",
            &dir,
            "-e",
            "trace=openat",
            "-e",
            "inject=openat:delay_exit=60000000:when=1",
        ];
        let Some(attached) = Strace::attach(daemon.pid, &args) else {
            return false;
        };
        strace = Some(attached);
    }
    let answer = daemon.post_detached(path, body);
    let reached = poll_until(DEADLINE, || match kill {
        Kill::WritingIn(n) => temps_in(&ws.path(format!("d{n}"))).contains(&0).then_some(()),
        Kill::AfterChanges(_) => daemon.stderr().contains(PAUSED).then_some(()),
    });
    assert!(
        reached.is_some(),
        "{kill:?}: {path} never got there; stderr:\n{}",
        daemon.stderr()
    );
    daemon.kill9();
    drop(strace);
    let reply = answer
        .recv_timeout(DEADLINE)
        .expect("the pending request never ended");
    assert!(reply.is_none(), "{kill:?}: the killed {path} answered: {reply:?}");
    true
}

/// No path of the workspace has a version of origin `outside`, nor one found by a scan
/// (`offline`) after the first index's.
#[track_caller]
fn assert_nothing_outside(daemon: &Daemon, what: &str) {
    for i in 0..FILES {
        let history = daemon.history(&file(i));
        let mut all: Vec<&Value> = versions(&history).iter().collect();
        all.sort_by_key(|v| v["seq"].as_i64());
        let outside: Vec<&Value> = all
            .iter()
            .skip(1)
            .filter(|v| v["origin"] == "outside" || v["origin"] == "offline")
            .copied()
            .collect();
        assert!(
            outside.is_empty(),
            "{what}: {} has versions nobody wrote: {outside:#?}\n{history:#}",
            file(i)
        );
    }
}

/// The restart finished the rollback exactly, recorded nothing as anyone else's, and the
/// retry of the same request answers it, every action done.
fn check_restart(
    ws: &Workspace,
    kill: Kill,
    target: &Tree,
    retry: impl Fn(&Daemon) -> (u16, Value),
) -> Daemon {
    let what = format!("{kill:?}");
    let daemon = Daemon::start(ws);
    assert_tree_eq(
        target,
        &snapshot(ws.root()),
        &format!("{what}: after the restart"),
    );
    let recovery = &daemon.status()["recovery"];
    assert_eq!(recovery["left"], json!([]), "{what}: {recovery:#}");
    assert_nothing_outside(&daemon, &what);
    let again = expect(200, retry(&daemon));
    assert_eq!(actions(&again).len(), FILES, "{what}: {again:#}");
    all_done(&again);
    assert_tree_eq(target, &snapshot(ws.root()), &format!("{what}: after the retry"));
    daemon
}

const POINTS: [Kill; 5] = [
    Kill::WritingIn(0),
    Kill::WritingIn(2),
    Kill::AfterChanges(0),
    Kill::AfterChanges(1),
    Kill::AfterChanges(FILES - 1),
];

#[test]
fn an_undo_killed_at_any_point_is_retried_without_a_conflict() {
    for kill in POINTS {
        let ws = Workspace::new();
        let (before, after) = turn(&ws);
        let body = json!({"op_id": "the-undo"});
        if !kill_during(&ws, kill, "/v1/sessions/s1/undo", body.clone()) {
            return;
        }
        let daemon = check_restart(&ws, kill, &before, |d| d.undo("s1", body.clone()));
        // The recovered undo is the session's own: its redo and the next undo conflict with nothing.
        rollback_applied(daemon.redo("s1", json!({})));
        assert_tree_eq(&after, &snapshot(ws.root()), &format!("{kill:?}: after the redo"));
        rollback_applied(daemon.undo("s1", json!({})));
        assert_tree_eq(
            &before,
            &snapshot(ws.root()),
            &format!("{kill:?}: after the undo"),
        );
        assert_nothing_outside(&daemon, &format!("{kill:?}, at the end"));
    }
}

#[test]
fn a_redo_killed_at_any_point_is_retried_without_a_conflict() {
    for kill in POINTS {
        let ws = Workspace::new();
        let (before, after) = turn(&ws);
        let daemon = Daemon::start(&ws);
        rollback_applied(daemon.undo("s1", json!({})));
        drop(daemon);
        let body = json!({"op_id": "the-redo"});
        if !kill_during(&ws, kill, "/v1/sessions/s1/redo", body.clone()) {
            return;
        }
        let daemon = check_restart(&ws, kill, &after, |d| d.redo("s1", body.clone()));
        rollback_applied(daemon.undo("s1", json!({})));
        assert_tree_eq(
            &before,
            &snapshot(ws.root()),
            &format!("{kill:?}: after the undo"),
        );
        assert_nothing_outside(&daemon, &format!("{kill:?}, at the end"));
    }
}
