//! G5: the undo/redo chain (consecutive undos walk back one turn each, redos walk forward, a
//! new turn ends the redo chain) and the options of a rollback request: a repeated `op_id`
//! applies once, `paths` restricts it, and the CLI's `rollback`, `undo` and `redo`.

use crate::common::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The undo/redo chain

/// Three turns, each with its own kind of change; the snapshot at each boundary.
fn three_turns(ws: &Workspace, daemon: &Daemon) -> [Tree; 4] {
    ws.write("a.txt", "a0\n");
    ws.write("b.txt", "b0\n");
    ws.write("d/c.txt", "c0\n");
    // Written after the daemon started: recorded (outside) before the first marker returns.
    let s0 = snapshot(ws.root());
    daemon.turn_start("s1", "t1");
    ws.sh("echo a1 > a.txt && echo new1 > n1.txt");
    daemon.turn_end("s1");
    let s1 = snapshot(ws.root());
    daemon.turn_start("s1", "t2");
    ws.sh("echo b2 > b.txt && rm d/c.txt && mkdir -p e/f && echo x > e/f/x.txt");
    daemon.turn_end("s1");
    let s2 = snapshot(ws.root());
    daemon.turn_start("s1", "t3");
    ws.sh("echo a3 > a.txt && chmod +x b.txt && ln -s a.txt l && mv n1.txt e/n1.txt");
    daemon.turn_end("s1");
    let s3 = snapshot(ws.root());
    [s0, s1, s2, s3]
}

/// Consecutive undos walk back one turn each; consecutive redos walk forward again; each
/// lands on the exact tree of its boundary.
#[test]
fn consecutive_undos_walk_back_and_redos_walk_forward() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let states = three_turns(&ws, &daemon);

    for turn in [3, 2, 1] {
        let answer = rollback_applied(daemon.undo("s1", json!({})));
        assert_eq!(answer["target"]["turn"], turn, "{answer:#}");
        assert_tree_eq(
            &states[turn - 1],
            &snapshot(ws.root()),
            &format!("after undoing turn {turn}"),
        );
    }
    assert_error(409, "nothing_to_undo", daemon.undo("s1", json!({})));

    for turn in [1, 2, 3] {
        let answer = rollback_applied(daemon.redo("s1", json!({})));
        assert_eq!(answer["operation"], "redo");
        assert_tree_eq(
            &states[turn],
            &snapshot(ws.root()),
            &format!("after redo number {turn}"),
        );
    }
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));

    // Having redone everything, undo starts again from the latest turn.
    let answer = rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(answer["target"]["turn"], 3, "{answer:#}");
    assert_tree_eq(&states[2], &snapshot(ws.root()), "undo after the redos");
}

/// Redo after a rollback to a boundary returns to the state just before that rollback.
#[test]
fn redo_after_a_rollback_returns_to_the_state_before_it() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let states = three_turns(&ws, &daemon);

    rollback_applied(daemon.rollback("s1", json!({"to": "before", "turn": 2})));
    assert_tree_eq(&states[1], &snapshot(ws.root()), "after the rollback");
    rollback_applied(daemon.redo("s1", json!({})));
    assert_tree_eq(&states[3], &snapshot(ws.root()), "after the redo");
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));
}

/// A new turn ends the redo chain; the undone states stay reachable as boundaries.
#[test]
fn a_new_turn_ends_the_redo_chain() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let states = three_turns(&ws, &daemon);

    rollback_applied(daemon.undo("s1", json!({})));
    assert_tree_eq(&states[2], &snapshot(ws.root()), "after the undo");
    daemon.turn_start("s1", "t4");
    ws.write("t4.txt", "four\n");
    daemon.turn_end("s1");
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));
    assert!(ws.path("t4.txt").exists(), "the refused redo changed the tree");

    // The state after the undone turn 3 is still a boundary anyone can roll back to.
    rollback_applied(daemon.rollback("s1", json!({"to": "after", "turn": 3})));
    assert_tree_eq(
        &states[3],
        &snapshot(ws.root()),
        "after rolling back to after turn 3",
    );
}

/// "Undo rolls back to before N, N the session's latest ended turn not yet undone": a turn
/// that was undone before a new turn is not undone a second time.
#[test]
fn undo_after_a_new_turn_skips_turns_already_undone() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let states = three_turns(&ws, &daemon);

    rollback_applied(daemon.undo("s1", json!({}))); // turn 3 undone: states[2]
    daemon.turn_start("s1", "t4");
    ws.write("t4.txt", "four\n");
    daemon.turn_end("s1");

    let answer = rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(answer["target"]["turn"], 4, "{answer:#}");
    assert_tree_eq(&states[2], &snapshot(ws.root()), "after undoing turn 4");

    let answer = rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(
        answer["target"]["turn"], 2,
        "turn 3 was already undone; the next undo is turn 2's: {answer:#}"
    );
    assert_tree_eq(&states[1], &snapshot(ws.root()), "after the next undo");
}

// ---------------------------------------------------------------------------------------------
// op_id

/// A repeated `op_id` returns the stored answer and never applies twice, even when the tree
/// has moved on since.
#[test]
fn a_repeated_op_id_returns_the_same_answer_and_applies_once() {
    let ws = Workspace::new();
    ws.write("a.txt", "v1\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.write("a.txt", "v2\n");
    daemon.turn_end("s1");

    let first = rollback_applied(daemon.undo("s1", json!({"op_id": "undo-once"})));
    assert!(first["rollback_id"].as_u64().is_some(), "{first:#}");
    assert_eq!(ws.read("a.txt"), b"v1\n");

    daemon.turn_start("s1", "t2");
    ws.write("a.txt", "v3\n");
    daemon.turn_end("s1");
    let history_before = daemon.history("a.txt");

    let second = expect(200, daemon.undo("s1", json!({"op_id": "undo-once"})));
    assert_eq!(second, first, "a repeated op_id got another answer");
    let again = expect(
        200,
        daemon.rollback("s1", json!({"to": "before", "turn": 1, "op_id": "undo-once"})),
    );
    assert_eq!(again, first, "a repeated op_id got another answer");
    // The same id on another session, or for a redo, is another request: refused, not
    // answered with this one's result.
    daemon.turn_start("s2", "t1 of s2");
    daemon.turn_end("s2");
    assert_error(
        409,
        "op_id_reused",
        daemon.undo("s2", json!({"op_id": "undo-once"})),
    );
    assert_error(
        409,
        "op_id_reused",
        daemon.redo("s1", json!({"op_id": "undo-once"})),
    );
    assert_eq!(ws.read("a.txt"), b"v3\n", "the repeated op_id was applied again");
    assert_eq!(
        daemon.history("a.txt"),
        history_before,
        "the repeated op_id recorded versions"
    );
    let rollbacks = versions(&history_before)
        .iter()
        .filter(|v| v["origin"] == "rollback")
        .count();
    assert_eq!(rollbacks, 1, "{history_before:#}");

    // The CLI passes --op-id through.
    let state_dir = ws.state_dir().to_str().unwrap().to_string();
    let out = ws.cli(
        ".",
        &[
            "undo",
            "--session",
            "s1",
            "--op-id",
            "undo-once",
            "--json",
            "--state-dir",
            &state_dir,
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, first);
    assert_eq!(ws.read("a.txt"), b"v3\n");
}

// ---------------------------------------------------------------------------------------------
// Restricting to paths, and the CLI

/// `paths` restricts the rollback to those paths and what lies beneath them.
#[test]
fn paths_restrict_the_rollback() {
    let ws = Workspace::new();
    ws.write("src/a.rs", "a1\n");
    ws.write("src/sub/b.rs", "b1\n");
    ws.write("docs/c.md", "c1\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.sh("echo a2 > src/a.rs && echo b2 > src/sub/b.rs && echo c2 > docs/c.md && echo n > src/new.rs");
    daemon.turn_end("s1");

    let answer = rollback_applied(daemon.undo("s1", json!({"paths": ["src/sub", "docs/c.md"]})));
    assert_eq!(action_paths(&answer), set(["src/sub/b.rs", "docs/c.md"]));
    assert_eq!(ws.read("src/sub/b.rs"), b"b1\n");
    assert_eq!(ws.read("docs/c.md"), b"c1\n");
    assert_eq!(ws.read("src/a.rs"), b"a2\n");
    assert_eq!(ws.read("src/new.rs"), b"n\n");
}

/// The CLI: `rollback --before N`, `undo`, `redo` with `--dry-run` and `--json`; exit 0.
#[test]
fn cli_rollback_undo_and_redo() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());
    daemon.turn_start("s1", "t1");
    ws.sh("echo two > a.txt && mkdir -p n && echo n > n/n.txt");
    daemon.turn_end("s1");
    let after = snapshot(ws.root());
    let state_dir = ws.state_dir().to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--session", "s1", "--state-dir", &state_dir]);
        let out = ws.cli(".", &all);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{all:?}: stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };

    let plan: Value =
        serde_json::from_str(&run(&["rollback", "--before", "1", "--dry-run", "--json"])).unwrap();
    assert_eq!(plan["dry_run"], true);
    assert_eq!(action_paths(&plan), set(["a.txt", "n", "n/n.txt"]));
    assert_tree_eq(&after, &snapshot(ws.root()), "after a CLI dry run");

    let text = run(&["undo", "--diff"]);
    assert!(text.contains("a.txt"), "undo output:\n{text}");
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the CLI undo");

    let redone: Value = serde_json::from_str(&run(&["redo", "--json"])).unwrap();
    assert_eq!(redone["operation"], "redo");
    assert_tree_eq(&after, &snapshot(ws.root()), "after the CLI redo");

    run(&["rollback", "--before", "1"]);
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the CLI rollback");
    drop(daemon);
}
