//! G3 and G5, the seed scenarios in our terms: rolling back to a boundary (T1-T5) restores
//! exactly the tracked state there, touches nothing untracked and is appended to the history;
//! a dry run shows the plan and changes nothing (U1-U3). Whole shell turns restored byte for
//! byte are in rollback_exact.rs, the undo/redo chain and the request's options in
//! undo_redo.rs.

use crate::common::*;
use serde_json::{Value, json};

fn start_turn_with_ref(daemon: &Daemon, session: &str, turn_ref: &str) -> Value {
    let path = format!("/v1/sessions/{session}/turns");
    expect(
        201,
        daemon.post(&path, json!({"ref": turn_ref, "label": turn_ref})),
    )
}

// ---------------------------------------------------------------------------------------------
// Seed T1-T5

/// T1: rolling back to an early boundary restores the old version (`foo.ts` v2 -> v1).
#[test]
fn t1_rollback_to_an_early_boundary_restores_the_old_version() {
    let ws = Workspace::new();
    ws.write("src/foo.ts", "export const v = 1;\n");
    let daemon = Daemon::start(&ws);

    start_turn_with_ref(&daemon, "s1", "e1");
    ws.write("src/foo.ts", "export const v = 2;\n");
    daemon.turn_end("s1");
    start_turn_with_ref(&daemon, "s1", "e2");
    ws.write("src/foo.ts", "export const v = 3;\n");
    daemon.turn_end("s1");

    let answer = rollback_applied(daemon.rollback("s1", json!({"to": "after", "turn": "e1"})));
    assert_eq!(answer["target"]["to"], "after");
    assert_eq!(answer["target"]["turn"], 1);
    assert_eq!(ws.read("src/foo.ts"), b"export const v = 2;\n");
    let foo = action(&answer, "src/foo.ts");
    assert_eq!(foo["action"], "restore", "{foo}");
    assert_eq!(foo["status"], "done", "{foo}");
    assert_eq!(
        (foo["lines_added"].as_u64(), foo["lines_removed"].as_u64()),
        (Some(1), Some(1))
    );

    let answer = rollback_applied(daemon.rollback("s1", json!({"to": "before", "turn": 1})));
    assert_eq!(answer["target"]["to"], "before");
    assert_eq!(answer["target"]["turn"], 1);
    assert_eq!(ws.read("src/foo.ts"), b"export const v = 1;\n");
    assert_eq!(action_paths(&answer), set(["src/foo.ts"]));
}

/// T2: files (and the directories holding them) added after the boundary are deleted.
#[test]
fn t2_files_added_after_the_boundary_are_deleted() {
    let ws = Workspace::new();
    ws.write("src/foo.ts", "v1\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "e1");
    ws.write("src/foo.ts", "v2\n");
    daemon.turn_end("s1");
    let after_e1 = snapshot(ws.root());
    daemon.turn_start("s1", "e2");
    ws.write("src/bar.ts", "bar\n");
    ws.write("src/new/deep/baz.ts", "baz\n");
    daemon.turn_end("s1");

    let answer = rollback_applied(daemon.rollback("s1", json!({"to": "before", "turn": 2})));
    all_done(&answer);
    assert_eq!(action(&answer, "src/bar.ts")["action"], "delete");
    assert_eq!(action(&answer, "src/new/deep/baz.ts")["action"], "delete");
    assert_eq!(action(&answer, "src/new")["action"], "remove_dir");
    assert_eq!(action(&answer, "src/new/deep")["action"], "remove_dir");
    assert_tree_eq(
        &after_e1,
        &snapshot(ws.root()),
        "after rolling back to before turn 2",
    );
    // The removed directories' own entries needed no sync of their own: no error was seen.
    let status = daemon.status();
    assert_eq!(status["watcher"]["last_error"], json!(null), "{status:#}");
}

/// T3: paths outside the tracked set (ignored, `.git/`) are never touched, and a directory
/// the turn created is kept (and reported) when it still holds untracked files.
#[test]
fn t3_untracked_paths_are_not_touched() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.log\nbuild/\n");
    // Files a .gitignore rule names are recorded since issue 49 (docs/tracking.md, "Ignored
    // files"); here `*.log` stands for what is not recorded.
    ws.write(".filewatchd.toml", "[ignored_files]\nrecord = false\n");
    ws.write(".git/HEAD", "ref: refs/heads/main\n");
    ws.write("untracked.log", "before\n");
    ws.write("tracked.txt", "before\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "mixed");
    ws.sh("echo during >> untracked.log
         echo during >> tracked.txt
         mkdir -p build gen/sub && echo out > build/out.bin
         echo gen > gen/a.txt && echo cache > gen/sub/cache.log
         echo 'ref: refs/heads/topic' > .git/HEAD");
    daemon.turn_end("s1");
    let untracked_before = marks(ws.root());

    // The dry run already says which directories the apply will keep.
    let plan = expect(200, daemon.undo("s1", json!({"dry_run": true})));
    for dir in ["gen", "gen/sub"] {
        assert_eq!(listed(&plan, "kept", dir)["code"], "not_empty", "{plan:#}");
        assert_eq!(action(&plan, dir)["status"], "kept", "{plan:#}");
    }

    let answer = expect(200, daemon.undo("s1", json!({})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(ws.read("tracked.txt"), b"before\n");
    assert!(
        !ws.path("gen/a.txt").exists(),
        "gen/a.txt was created by the turn"
    );
    // Untracked content stays exactly as the turn left it, not even rewritten.
    assert_eq!(ws.read("untracked.log"), b"before\nduring\n");
    assert_eq!(ws.read("build/out.bin"), b"out\n");
    assert_eq!(ws.read("gen/sub/cache.log"), b"cache\n");
    assert_eq!(ws.read(".git/HEAD"), b"ref: refs/heads/topic\n");
    let now = marks(ws.root());
    for path in ["untracked.log", "build/out.bin", "gen/sub/cache.log", ".git/HEAD"] {
        assert_eq!(now[path], untracked_before[path], "{path} was rewritten");
    }
    let touched = action_paths(&answer);
    for path in [
        "untracked.log",
        "build",
        "build/out.bin",
        "gen/sub/cache.log",
        ".git/HEAD",
    ] {
        assert!(!touched.contains(path), "{path} in the plan: {touched:?}");
    }
    // The directories the turn created still hold an ignored file: kept, and said so.
    for dir in ["gen", "gen/sub"] {
        assert!(
            ws.path(dir).is_dir(),
            "{dir} removed with an untracked file in it"
        );
        assert_eq!(listed(&answer, "kept", dir)["code"], "not_empty", "{answer:#}");
        assert_eq!(action(&answer, dir)["status"], "kept");
    }
}

/// T4: a rollback is appended to the history as versions of origin `rollback`; the older
/// versions and the turns stay as they were.
#[test]
fn t4_rollback_is_appended_to_the_history() {
    let ws = Workspace::new();
    ws.write("foo.ts", "v1\n");
    let daemon = Daemon::start(&ws);
    let v1_hash = latest(&daemon.history("foo.ts"))["hash"].clone();

    daemon.turn_start("s1", "e1");
    ws.write("foo.ts", "v2\n");
    ws.write("bar.ts", "bar\n");
    daemon.turn_end("s1");
    let foo_before = versions(&daemon.history("foo.ts")).clone();
    let bar_before = versions(&daemon.history("bar.ts")).clone();
    let turn_before = daemon.turn("s1", 1, true);

    let answer = rollback_applied(daemon.undo("s1", json!({})));
    let rollback_id = answer["rollback_id"].as_u64().expect("rollback_id");

    for (path, before) in [("foo.ts", &foo_before), ("bar.ts", &bar_before)] {
        let after = versions(&daemon.history(path)).clone();
        assert_eq!(
            after.len(),
            before.len() + 1,
            "{path}: one new version: {after:#?}"
        );
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "{path}: older versions rewritten"
        );
        let new = after.last().unwrap();
        assert_eq!(new["origin"], "rollback", "{new}");
        assert!(new["seq"].as_u64() > before.last().unwrap()["seq"].as_u64());
    }
    let foo_new = latest(&daemon.history("foo.ts")).clone();
    assert_eq!(foo_new["hash"], v1_hash, "foo.ts restored to v1 in the history");
    assert_eq!(latest(&daemon.history("bar.ts"))["kind"], "absent");
    assert_eq!(
        daemon.turn("s1", 1, true),
        turn_before,
        "the turn's record changed"
    );

    let listing = expect(200, daemon.get("/v1/sessions/s1/turns"));
    let rollbacks = listing["rollbacks"].as_array().expect("rollbacks listed");
    assert!(
        rollbacks.iter().any(|r| r["rollback_id"] == rollback_id),
        "rollback {rollback_id} not listed: {listing:#}"
    );
}

/// T5: rolling back a turn that changed nothing does not fail and changes nothing.
#[test]
fn t5_undo_of_a_turn_without_changes_changes_nothing() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    ws.write("d/b.txt", "b\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "only reads");
    ws.sh("cat a.txt d/b.txt > /dev/null");
    daemon.turn_end("s1");
    let (tree, stat, seq) = (
        snapshot(ws.root()),
        marks(ws.root()),
        daemon.status()["latest_seq"].clone(),
    );

    let answer = rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(answer["actions"], json!([]), "{answer:#}");
    assert_eq!(answer["target"]["turn"], 1);
    let answer =
        rollback_applied(daemon.rollback("s1", json!({"to": "before", "turn": 1, "on_conflict": "force"})));
    assert_eq!(answer["actions"], json!([]), "{answer:#}");

    assert_tree_eq(&tree, &snapshot(ws.root()), "after undoing an empty turn");
    assert_eq!(marks(ws.root()), stat, "files rewritten");
    assert_eq!(daemon.status()["latest_seq"], seq, "versions recorded");
}

// ---------------------------------------------------------------------------------------------
// Seed U1-U3

/// U1: a dry run shows the plan and changes nothing; U2: applying it restores the files.
#[test]
fn u1_u2_dry_run_changes_nothing_and_apply_restores() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\nthree\n");
    ws.write("gone.txt", "gone\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());
    daemon.turn_start("s1", "edit");
    ws.sh("sed -i 's/two/TWO/' a.txt && rm gone.txt && echo n > new.txt");
    daemon.turn_end("s1");
    let (tree, stat, seq) = (
        snapshot(ws.root()),
        marks(ws.root()),
        daemon.status()["latest_seq"].clone(),
    );

    let plan = expect(200, daemon.undo("s1", json!({"dry_run": true, "diff": true})));
    assert_eq!(plan["dry_run"], true);
    assert_eq!(plan["applied"], false);
    assert_eq!(plan["rollback_id"], Value::Null);
    assert_eq!(action_paths(&plan), set(["a.txt", "gone.txt", "new.txt"]));
    for (path, kind) in [
        ("a.txt", "restore"),
        ("gone.txt", "create"),
        ("new.txt", "delete"),
    ] {
        let a = action(&plan, path);
        assert_eq!(a["action"], kind, "{a}");
        assert_eq!(a["status"], "planned", "{a}");
    }
    let diff = action(&plan, "a.txt")["diff"]
        .as_str()
        .unwrap_or_else(|| panic!("no diff: {plan:#}"));
    assert!(
        diff.contains("-TWO\n") && diff.contains("+two\n"),
        "diff:\n{diff}"
    );
    assert_tree_eq(&tree, &snapshot(ws.root()), "after a dry run");
    assert_eq!(marks(ws.root()), stat, "a dry run rewrote files");
    assert_eq!(daemon.status()["latest_seq"], seq, "a dry run recorded versions");

    // The dry run is not an undo: undo then applies the same plan.
    let answer = rollback_applied(daemon.undo("s1", json!({})));
    all_done(&answer);
    assert_eq!(action_paths(&answer), action_paths(&plan));
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the undo");
}

/// U3: a rollback to the state the tree is already in has no actions.
#[test]
fn u3_rollback_without_changes_has_no_actions() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edit");
    ws.write("a.txt", "b\n");
    daemon.turn_end("s1");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    for dry_run in [true, false] {
        let answer = expect(
            200,
            daemon.rollback("s1", json!({"to": "after", "turn": 1, "dry_run": dry_run})),
        );
        assert_eq!(answer["actions"], json!([]), "{answer:#}");
        assert_eq!(answer["conflicts"], json!([]), "{answer:#}");
    }
    assert_tree_eq(&tree, &snapshot(ws.root()), "after an empty rollback");
    assert_eq!(marks(ws.root()), stat, "files rewritten");
}
