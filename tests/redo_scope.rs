//! A redo undoes exactly the rollback it names: it touches only the paths that
//! rollback changed, puts each back to its state just before it, and any of those paths changed
//! since by anything but the rollback itself is a conflict. Work done after the rollback on
//! other paths (an agent's turn, the user) is never touched. Session redos, time redos and
//! one-path restores alike; the dry run shows it.

use crate::common::*;
use serde_json::{Value, json};

/// `redo --time` as JSON with extra flags: the exit code and the answer.
fn redo_time(ws: &Workspace, flags: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["redo", "--time", "--json"];
    args.extend_from_slice(flags);
    let out = cli_state(ws, &args);
    let answer = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "redo {flags:?}: not JSON ({e}):\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), answer)
}

/// The case in which a redo deleted later work unchecked: `restore f.txt --at T`, then an agent
/// turn writes g.txt and the user creates h.txt. The redo plans f.txt alone, and leaves g.txt
/// and h.txt.
#[test]
fn a_time_redo_of_a_one_path_restore_touches_only_that_path() {
    let ws = Workspace::new();
    ws.write("f.txt", "f0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let t0 = time_mark();
    daemon.turn_start("s1", "edit f");
    ws.write("f.txt", "f1\n");
    daemon.turn_end("s1");

    cli_state_ok(&ws, &["restore", "f.txt", "--at", &t0]);
    assert_eq!(ws.read("f.txt"), b"f0\n");
    daemon.turn_start("s1", "later work");
    ws.write("g.txt", "the agent's later work\n");
    daemon.turn_end("s1");
    ws.write("h.txt", "the user's later work\n");

    let (code, plan) = redo_time(&ws, &["--dry-run"]);
    assert_eq!(code, Some(0), "{plan:#}");
    assert_eq!(action_paths(&plan), set(["f.txt"]), "{plan:#}");
    assert_eq!(plan["conflicts"], json!([]), "{plan:#}");

    let (code, answer) = redo_time(&ws, &[]);
    assert_eq!(code, Some(0), "{answer:#}");
    assert_eq!(action_paths(&answer), set(["f.txt"]), "{answer:#}");
    assert_eq!(ws.read("f.txt"), b"f1\n");
    assert_eq!(ws.read("g.txt"), b"the agent's later work\n");
    assert_eq!(ws.read("h.txt"), b"the user's later work\n");
}

/// A path the rollback changed and someone changed since is a conflict for its redo: the
/// dry run names it, the redo is refused (exit 3, nothing changed), `--force` redoes it.
#[test]
fn a_path_changed_since_the_rollback_is_a_conflict_for_its_redo() {
    let ws = Workspace::new();
    ws.write("f.txt", "f0\n");
    ws.write("k.txt", "k0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let t0 = time_mark();
    daemon.turn_start("s1", "edit both");
    ws.write("f.txt", "f1\n");
    ws.write("k.txt", "k1\n");
    daemon.turn_end("s1");

    cli_state_ok(&ws, &["rollback", "--at", &t0]);
    assert_eq!(ws.read("f.txt"), b"f0\n");
    daemon.turn_start("s2", "another agent edits f.txt");
    ws.write("f.txt", "s2's edit\n");
    daemon.turn_end("s2");
    let tree = snapshot(ws.root());

    let (code, plan) = redo_time(&ws, &["--dry-run"]);
    assert_eq!(code, Some(3), "{plan:#}");
    assert_eq!(listed_paths(&plan, "conflicts"), set(["f.txt"]), "{plan:#}");
    let (code, refused) = redo_time(&ws, &[]);
    assert_eq!(code, Some(3), "{refused:#}");
    assert_tree_eq(&tree, &snapshot(ws.root()), "after a refused redo");

    let (code, forced) = redo_time(&ws, &["--force"]);
    assert_eq!(code, Some(0), "{forced:#}");
    assert_eq!(ws.read("f.txt"), b"f1\n");
    assert_eq!(ws.read("k.txt"), b"k1\n");
}

/// A session's redo returns exactly what its undo changed: another session's new file and the
/// user's new file stay, whatever `on_conflict` says.
#[test]
fn a_session_redo_leaves_work_made_after_the_undo() {
    let ws = Workspace::new();
    ws.write("base.txt", "base\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "write a");
    ws.write("a.txt", "a1\n");
    ws.write("base.txt", "base, edited\n");
    daemon.turn_end("s1");
    rollback_applied(daemon.undo("s1", json!({})));
    assert!(!ws.path("a.txt").exists());

    daemon.turn_start("s2", "another agent");
    ws.write("b.txt", "s2's work\n");
    daemon.turn_end("s2");
    ws.write("c.txt", "the user's work\n");

    let plan = expect(200, daemon.redo("s1", json!({"dry_run": true})));
    assert_eq!(action_paths(&plan), set(["a.txt", "base.txt"]), "{plan:#}");
    assert_eq!(plan["conflicts"], json!([]), "{plan:#}");

    let answer = rollback_applied(daemon.redo("s1", json!({"on_conflict": "force"})));
    assert_eq!(action_paths(&answer), set(["a.txt", "base.txt"]), "{answer:#}");
    assert_eq!(ws.read("a.txt"), b"a1\n");
    assert_eq!(ws.read("base.txt"), b"base, edited\n");
    assert_eq!(ws.read("b.txt"), b"s2's work\n");
    assert_eq!(ws.read("c.txt"), b"the user's work\n");
}
