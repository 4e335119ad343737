//! Forks (docs/rollback.md, "Forks"): a fork after turn N is a new session whose history up to `after N`
//! is its parent's. Inherited boundaries keep their numbers and roll back exactly; the child's
//! own turns are numbered from N+1; the fork itself changes nothing of the parent; a turn of
//! either session after the fork is another session's work for the other one.

use crate::common::*;
use serde_json::{Value, json};

/// The parent `trunk` with two turns; the tree at `before 1`, `after 1`, `after 2`.
fn trunk_with_two_turns(ws: &Workspace, daemon: &Daemon) -> [Tree; 3] {
    let s0 = snapshot(ws.root());
    daemon.turn_start("trunk", "t1");
    ws.sh(
        "echo one > x.txt && echo new > n1.txt && mkdir -p d/e && echo deep > d/e/f.txt && chmod +x run.sh",
    );
    daemon.turn_end("trunk");
    let s1 = snapshot(ws.root());
    daemon.turn_start("trunk", "t2");
    ws.sh("echo two > y.txt && rm gone.txt && ln -sfn x.txt link && mv n1.txt d/n1.txt");
    daemon.turn_end("trunk");
    let s2 = snapshot(ws.root());
    [s0, s1, s2]
}

fn seed(ws: &Workspace) {
    ws.write("x.txt", "x0\n");
    ws.write("y.txt", "y0\n");
    ws.write("gone.txt", "gone\n");
    ws.write("run.sh", "#!/bin/sh\n");
    ws.write("keep.txt", "keep\n");
    ws.sh("ln -s y.txt link");
}

/// The child rolls back to each inherited boundary (`before 1` ... `after 2`) and lands on the
/// exact tree of that boundary, with no conflict: the parent's turns up to the fork are its own.
#[test]
fn the_child_rolls_back_to_inherited_boundaries_exactly() {
    let ws = Workspace::new();
    seed(&ws);
    let daemon = Daemon::start(&ws);
    let [s0, s1, s2] = trunk_with_two_turns(&ws, &daemon);
    let trunk_turns = daemon.turn_list("trunk");

    let forked = expect(201, daemon.fork("trunk", "branch", json!(2)));
    assert_eq!(forked["session"], "branch", "{forked:#}");
    assert_eq!(forked["parent"], "trunk", "{forked:#}");
    assert_eq!(forked["fork_turn"], 2, "{forked:#}");
    assert_eq!(
        forked["fork_seq"], trunk_turns[1]["end_seq"],
        "fork_seq is after 2: {forked:#}"
    );

    // The child's turns are the parent's, with the same numbers.
    assert_eq!(
        daemon.turn_list("branch"),
        trunk_turns,
        "the child's inherited turns"
    );
    assert_eq!(
        daemon.turn("branch", 1, false),
        daemon.turn("trunk", 1, false),
        "turn 1 seen from the child"
    );

    for (to, turn, tree) in [
        ("before", 1, &s0),
        ("after", 1, &s1),
        ("before", 2, &s1),
        ("after", 2, &s2),
        ("before", 1, &s0),
    ] {
        let answer = rollback_applied(daemon.rollback("branch", json!({"to": to, "turn": turn})));
        assert_eq!(answer["target"]["to"], to, "{answer:#}");
        assert_eq!(answer["target"]["turn"], turn, "{answer:#}");
        assert_tree_eq(
            tree,
            &snapshot(ws.root()),
            &format!("after the child's rollback to {to} {turn}"),
        );
    }
    // And its redo returns to the state before its latest rollback.
    rollback_applied(daemon.redo("branch", json!({})));
    assert_tree_eq(&s2, &snapshot(ws.root()), "after the child's redo");
}

/// Forking changes nothing of the parent: its turns, its rollbacks, the tree and the history
/// are as they were, its undo/redo chain works as before, and its next turn keeps its numbering.
#[test]
fn the_fork_itself_leaves_the_parent_unaffected() {
    let ws = Workspace::new();
    seed(&ws);
    let daemon = Daemon::start(&ws);
    let [s0, _, s2] = trunk_with_two_turns(&ws, &daemon);
    daemon.turn_start("trunk", "t3");
    ws.write("z.txt", "three\n");
    daemon.turn_end("trunk");
    let s3 = snapshot(ws.root());
    // One rollback and its redo, so the parent has rollbacks to compare.
    rollback_applied(daemon.undo("trunk", json!({})));
    rollback_applied(daemon.redo("trunk", json!({})));
    assert_tree_eq(&s3, &snapshot(ws.root()), "after the parent's redo");

    let listing = expect(200, daemon.get("/v1/sessions/trunk/turns"));
    let (stat, seq) = (marks(ws.root()), daemon.status()["latest_seq"].clone());
    let entry = |daemon: &Daemon, name: &str| -> Value {
        let all = expect(200, daemon.get("/v1/sessions"));
        all["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {all:#}"))
            .clone()
    };
    let trunk_before = entry(&daemon, "trunk");

    expect(201, daemon.fork("trunk", "branch", json!(2)));

    assert_eq!(
        expect(200, daemon.get("/v1/sessions/trunk/turns")),
        listing,
        "the parent's turns and rollbacks changed"
    );
    assert_tree_eq(&s3, &snapshot(ws.root()), "after the fork");
    assert_eq!(marks(ws.root()), stat, "the fork rewrote files");
    assert_eq!(daemon.status()["latest_seq"], seq, "the fork recorded versions");
    let trunk_after = entry(&daemon, "trunk");
    for key in ["turns", "open_turn", "parent", "fork_turn", "created_at"] {
        assert_eq!(trunk_after[key], trunk_before[key], "the parent's {key}");
    }
    let branch = entry(&daemon, "branch");
    assert_eq!(branch["parent"], "trunk", "{branch}");
    assert_eq!(branch["fork_turn"], 2, "{branch}");
    assert_eq!(branch["open_turn"], Value::Null, "{branch}");

    // The parent's undo/redo chain: undo takes back turn 3 (no conflict), then turn 2.
    let answer = rollback_applied(daemon.undo("trunk", json!({})));
    assert_eq!(answer["target"]["turn"], 3, "{answer:#}");
    assert_tree_eq(&s2, &snapshot(ws.root()), "after the parent's undo of turn 3");
    rollback_applied(daemon.rollback("trunk", json!({"to": "before", "turn": 1})));
    assert_tree_eq(
        &s0,
        &snapshot(ws.root()),
        "after the parent's rollback to before 1",
    );
    rollback_applied(daemon.redo("trunk", json!({})));
    assert_tree_eq(&s2, &snapshot(ws.root()), "after the parent's redo");

    // A new turn of the parent is its turn 4, whatever the child did.
    let started = daemon.turn_start("trunk", "t4");
    assert_eq!(started["turn"], 4, "{started:#}");
    daemon.turn_end("trunk");
}

/// A turn of the parent made after the fork is another session's work for the child (a
/// conflict naming the parent and its turn), and the child's own turn after the fork is one for
/// the parent. Each session's own turns stay free of conflicts.
#[test]
fn turns_after_the_fork_are_the_other_sessions_work() {
    let ws = Workspace::new();
    seed(&ws);
    let daemon = Daemon::start(&ws);
    trunk_with_two_turns(&ws, &daemon);
    expect(201, daemon.fork("trunk", "branch", json!(2)));

    // After the fork: the parent's turn 3, then the child's first own turn.
    daemon.turn_start("trunk", "trunk after the fork");
    ws.write("x.txt", "trunk 3\n");
    ws.write("p3.txt", "trunk 3\n");
    daemon.turn_end("trunk");
    let started = daemon.turn_start("branch", "branch after the fork");
    assert_eq!(
        started["turn"], 3,
        "the child's first own turn is N+1: {started:#}"
    );
    ws.write("c3.txt", "branch 3\n");
    ws.write("keep.txt", "branch 3\n");
    daemon.turn_end("branch");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    // The child plans a rollback to an inherited boundary: the parent's turn 3 after the fork
    // is another session's work (issue 48): not touched, and no conflict.
    let dry = json!({"to": "after", "turn": 1, "dry_run": true});
    let plan = expect(200, daemon.rollback("branch", dry));
    assert_eq!(
        listed_paths(&plan, "conflicts"),
        set::<[&str; 0], &str>([]),
        "{plan:#}"
    );
    let planned = action_paths(&plan);
    // The parent's turn 2 (inherited) and the child's own turn 3 are its own to take back.
    for path in ["y.txt", "gone.txt", "link", "c3.txt", "keep.txt"] {
        assert!(planned.contains(path), "{path} not planned: {plan:#}");
    }
    for path in ["x.txt", "p3.txt"] {
        assert!(
            !planned.contains(path),
            "{path}, the parent's after the fork, is planned: {plan:#}"
        );
    }

    // The parent plans a rollback to before its turn 2, and an undo of its turn 3: the
    // child's turn 3 is the child's, left alone.
    let dry = json!({"to": "before", "turn": 2, "dry_run": true});
    let plan = expect(200, daemon.rollback("trunk", dry));
    assert_eq!(
        listed_paths(&plan, "conflicts"),
        set::<[&str; 0], &str>([]),
        "{plan:#}"
    );
    let planned = action_paths(&plan);
    assert!(
        !planned.contains("c3.txt") && !planned.contains("keep.txt"),
        "{plan:#}"
    );
    assert!(planned.contains("x.txt") && planned.contains("y.txt"), "{plan:#}");
    let plan = expect(200, daemon.undo("trunk", json!({"dry_run": true})));
    assert_eq!(
        action_paths(&plan),
        set(["x.txt", "p3.txt"]),
        "the parent's undo of turn 3: {plan:#}"
    );

    assert_tree_eq(&tree, &snapshot(ws.root()), "after the dry runs");
    assert_eq!(marks(ws.root()), stat, "a dry run rewrote files");

    // The child's undo of its own turn 3 has no conflict and takes back only that turn.
    let answer = rollback_applied(daemon.undo("branch", json!({})));
    assert_eq!(answer["target"]["turn"], 3, "{answer:#}");
    assert_eq!(action_paths(&answer), set(["c3.txt", "keep.txt"]), "{answer:#}");
    assert!(!ws.path("c3.txt").exists());
    assert_eq!(ws.read("keep.txt"), b"keep\n");
    assert_eq!(ws.read("x.txt"), b"trunk 3\n", "the parent's turn 3 was touched");
}

/// The child's own turns are numbered from N+1, listed after the inherited ones; the parent's
/// numbering goes on independently. Forking a fork inherits both histories.
#[test]
fn the_childs_own_turns_are_numbered_from_the_fork_turn_plus_one() {
    let ws = Workspace::new();
    seed(&ws);
    let daemon = Daemon::start(&ws);
    let [s0, ..] = trunk_with_two_turns(&ws, &daemon);
    daemon.turn_start("trunk", "t3");
    ws.write("t3.txt", "3\n");
    daemon.turn_end("trunk");
    let trunk_turns = daemon.turn_list("trunk");
    assert_eq!(trunk_turns.len(), 3);

    // Forked after turn 1 while the parent already has three turns.
    let forked = expect(201, daemon.fork("trunk", "branch", json!(1)));
    assert_eq!(forked["fork_turn"], 1, "{forked:#}");
    let started = daemon.turn_start("branch", "branch own");
    assert_eq!(started["turn"], 2, "{started:#}");
    ws.write("b2.txt", "b\n");
    let ended = daemon.turn_end("branch");
    assert_eq!(ended["turn"], 2, "{ended:#}");
    assert_eq!(changed_files(&ended), set(["b2.txt"]), "{ended:#}");

    let branch_turns = daemon.turn_list("branch");
    let numbers: Vec<_> = branch_turns.iter().map(|t| t["turn"].clone()).collect();
    assert_eq!(numbers, [json!(1), json!(2)], "{branch_turns:#?}");
    assert_eq!(branch_turns[0], trunk_turns[0], "the inherited turn 1");
    assert_eq!(branch_turns[1]["label"], "branch own", "{branch_turns:#?}");
    assert_eq!(daemon.turn("branch", 2, false)["label"], "branch own");
    assert_eq!(daemon.turn("trunk", 2, false)["label"], "t2");
    assert_eq!(
        daemon.turn_list("trunk"),
        trunk_turns,
        "the parent's turns changed"
    );
    assert_error(404, "not_found", daemon.get("/v1/sessions/branch/turns/3"));

    let started = daemon.turn_start("trunk", "t4");
    assert_eq!(started["turn"], 4, "{started:#}");
    daemon.turn_end("trunk");

    // A fork of the fork (with the CLI): turn 1 from trunk, turn 2 from branch, its own from 3.
    let printed = cli_state_text(&ws, &["fork", "--session", "branch", "--turn", "2", "leaf"]);
    assert!(printed.contains("leaf"), "fork output: {printed}");
    let listed_sessions = cli_state_json(&ws, &["sessions", "--json"]);
    let leaf = listed_sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session"] == "leaf")
        .unwrap_or_else(|| panic!("leaf not listed: {listed_sessions:#}"))
        .clone();
    assert_eq!(
        (&leaf["parent"], &leaf["fork_turn"]),
        (&json!("branch"), &json!(2)),
        "{leaf}"
    );
    let leaf_turns = daemon.turn_list("leaf");
    assert_eq!(leaf_turns, branch_turns, "the grandchild's inherited turns");
    let started = daemon.turn_start("leaf", "leaf own");
    assert_eq!(started["turn"], 3, "{started:#}");
    daemon.turn_end("leaf");
    // The grandchild's timeline has its own turn and the ones it inherits, each under the
    // session that made it; the timeline of every session lists each turn once.
    let timeline = cli_state_json(&ws, &["log", "--session", "leaf", "--json"]);
    let turns: Vec<(Value, Value)> = timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "turn")
        .map(|e| (e["session"].clone(), e["turn"].clone()))
        .collect();
    let expected = [("leaf", 3), ("branch", 2), ("trunk", 1)].map(|(s, t)| (json!(s), json!(t)));
    assert_eq!(turns, expected, "{timeline:#}");
    let log = cli_state_text(&ws, &["log", "--session", "leaf"]);
    assert!(
        log.contains("leaf own") && log.contains("branch own") && !log.contains("t2"),
        "{log}"
    );
    let all = cli_state_json(&ws, &["log", "--all", "--json"]);
    let all_turns = all["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "turn");
    assert_eq!(all_turns.count(), 6, "{all:#}");

    // The grandchild's `before 1` is the grandparent's: its own lineage's writes (trunk's turn
    // 1, branch's turn 2) go back to the tree before trunk's turn 1; what trunk's turns 2 to 4
    // did after branch forked is another session's, and stays (issue 48).
    let answer = expect(200, daemon.rollback("leaf", json!({"to": "before", "turn": 1})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(
        listed_paths(&answer, "conflicts"),
        set::<[&str; 0], &str>([]),
        "{answer:#}"
    );
    assert_eq!(
        ws.read("x.txt"),
        b"x0\n",
        "trunk's turn 1, inherited, is taken back"
    );
    assert!(
        !ws.path("b2.txt").exists(),
        "branch's turn 2, inherited, is taken back"
    );
    assert_eq!(ws.read("y.txt"), b"two\n", "trunk's turn 2 after the fork stays");
    assert_eq!(ws.read("t3.txt"), b"3\n", "trunk's turn 3 after the fork stays");
    assert_eq!(s0.get("x.txt"), snapshot(ws.root()).get("x.txt"));
}

/// Refused forks: unknown parent or turn (404), a name that exists (409 `session_exists`), an
/// open turn (409 `turn_open`), a bad name (400). None of them creates a session.
#[test]
fn refused_forks() {
    let ws = Workspace::new();
    seed(&ws);
    let daemon = Daemon::start(&ws);
    trunk_with_two_turns(&ws, &daemon);
    daemon.turn_start("other", "o1");
    daemon.turn_end("other");

    assert_error(404, "not_found", daemon.fork("nobody", "child", json!(1)));
    assert_error(404, "not_found", daemon.fork("trunk", "child", json!(9)));
    assert_error(
        404,
        "not_found",
        daemon.fork("trunk", "child", json!("no-such-ref")),
    );
    assert_error(409, "session_exists", daemon.fork("trunk", "other", json!(1)));
    assert_error(409, "session_exists", daemon.fork("trunk", "trunk", json!(1)));
    assert_error(400, "bad_session", daemon.fork("trunk", "bad/name", json!(1)));

    daemon.turn_start("trunk", "t3 open");
    assert_error(409, "turn_open", daemon.fork("trunk", "child", json!(3)));
    assert_error(409, "turn_open", daemon.fork("trunk", "child", json!("current")));

    let all = expect(200, daemon.get("/v1/sessions"));
    let names: Vec<_> = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        set(names),
        set(["trunk", "other"]),
        "a refused fork created a session"
    );

    // An ended turn of a session with an open one can still be forked.
    let forked = expect(201, daemon.fork("trunk", "child", json!(2)));
    assert_eq!(forked["fork_turn"], 2, "{forked:#}");
    daemon.turn_end("trunk");

    // The CLI says so with exit 1.
    let out = cli_state(&ws, &["fork", "--session", "trunk", "--turn", "1", "other"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
