//! G3 and G5: rollback, undo and redo set the tree exactly to a boundary, touch nothing else,
//! and are appended to the history. The seed scenarios T1-T5 and U1-U3 in our terms, then
//! whole bash turns undone and redone byte for byte, and the undo/redo chain.

mod common;

use common::*;
use serde_json::{Value, json};

/// Asserts a 200 answer that was applied, and returns it.
#[track_caller]
fn applied(reply: (u16, Value)) -> Value {
    let answer = expect(200, reply);
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(answer["conflicts"], json!([]), "{answer:#}");
    assert_eq!(answer["skipped"], json!([]), "{answer:#}");
    answer
}

/// Every action of an applied answer is `done`.
#[track_caller]
fn all_done(answer: &Value) {
    for a in actions(answer) {
        assert_eq!(a["status"], "done", "{a}");
    }
}

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

    let answer = applied(daemon.rollback("s1", json!({"to": "after", "turn": "e1"})));
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

    let answer = applied(daemon.rollback("s1", json!({"to": "before", "turn": 1})));
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

    let answer = applied(daemon.rollback("s1", json!({"to": "before", "turn": 2})));
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

    let answer = applied(daemon.undo("s1", json!({})));
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

    let answer = applied(daemon.undo("s1", json!({})));
    assert_eq!(answer["actions"], json!([]), "{answer:#}");
    assert_eq!(answer["target"]["turn"], 1);
    let answer = applied(daemon.rollback("s1", json!({"to": "before", "turn": 1, "on_conflict": "force"})));
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
    let answer = applied(daemon.undo("s1", json!({})));
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

// ---------------------------------------------------------------------------------------------
// Whole bash turns, undone and redone exactly

fn prepare_bash_tree(ws: &Workspace) {
    for i in 0..400 {
        ws.write(format!("many/f{i:03}.txt"), format!("hello {i}\nsecond line\n"));
    }
    for i in 0..20 {
        ws.write(format!("olddir/sub{}/g{i}.txt", i % 3), format!("old {i}\n"));
    }
    ws.write("olddir/empty/.keep", "");
    ws.write("a.txt", "moving file\n");
    ws.write("run.sh", "#!/bin/sh\necho run\n");
    ws.write("tool.sh", "#!/bin/sh\necho tool\n");
    ws.write("blob.bin", [0u8, 1, 2, 255, 254, 0, 10]);
    ws.write("target1.txt", "one\n");
    ws.write("target2.txt", "two\n");
    ws.write("untouched/deep/keep.txt", "keep\n");
    ws.sh("chmod 755 tool.sh && ln -s target1.txt link && ln -s olddir dirlink");
    ws.sh(r"printf 'latin-1 name\n' > $'caf\xe9.txt'");
}

const BASH_TURN: &str = r#"
sed -i 's/hello/bye/' many/f0*.txt many/f1*.txt many/f2*.txt
rm -rf olddir
mv a.txt b.txt
chmod +x run.sh
chmod -x tool.sh
ln -sfn target2.txt link
rm dirlink && ln -s many dirlink
printf '\x00\x01\x02' > blob.bin
mkdir -p newdir/sub/subsub && echo new > newdir/sub/subsub/n.txt && echo top > newdir/t.txt
printf 'latin-1 name, changed\n' > $'caf\xe9.txt'
printf 'new\n' > 'back\slash.txt'
"#;

/// G3 on a real shell turn: the undo restores content, executable bits, symlink targets and
/// deleted trees exactly; paths the turn did not change are not even rewritten; redo gives
/// back the turn's tree exactly.
#[test]
fn undo_of_a_bash_turn_restores_the_tree_exactly_and_redo_gives_it_back() {
    let ws = Workspace::new();
    prepare_bash_tree(&ws);
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());

    daemon.turn_start("s1", "bash storm");
    ws.sh(BASH_TURN);
    let turn = daemon.turn_end("s1");
    assert_eq!(
        changed_files(&turn)
            .iter()
            .filter(|p| p.starts_with("many/"))
            .count(),
        300,
        "the turn's sed"
    );
    let after_turn = snapshot(ws.root());
    let before_undo = marks(ws.root());

    let answer = applied(daemon.undo("s1", json!({})));
    all_done(&answer);
    assert_eq!(answer["operation"], "undo");
    assert_eq!(answer["target"]["to"], "before");
    assert_eq!(answer["target"]["turn"], 1);
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the undo");
    for (path, kind) in [
        ("many/f042.txt", "restore"),
        ("a.txt", "create"),
        ("b.txt", "delete"),
        ("run.sh", "set_mode"),
        ("tool.sh", "set_mode"),
        ("link", "relink"),
        ("dirlink", "relink"),
        ("blob.bin", "restore"),
        ("olddir", "create"),
        ("olddir/sub1/g4.txt", "create"),
        ("newdir", "remove_dir"),
        ("newdir/sub/subsub", "remove_dir"),
        (r"caf\xe9.txt", "restore"),
        (r"back\\slash.txt", "delete"),
    ] {
        assert_eq!(action(&answer, path)["action"], kind, "{path}");
    }

    // Nothing the turn left alone was rewritten, and nothing of it is in the plan.
    let after_undo = marks(ws.root());
    let planned = action_paths(&answer);
    let mut untouched = 0;
    for i in 300..400 {
        let path = format!("many/f{i:03}.txt");
        assert!(!planned.contains(&path), "{path} planned");
        assert_eq!(after_undo[&path], before_undo[&path], "{path} rewritten");
        untouched += 1;
    }
    for path in ["target1.txt", "target2.txt", "untouched/deep/keep.txt"] {
        assert!(!planned.contains(path), "{path} planned");
        assert_eq!(after_undo[path], before_undo[path], "{path} rewritten");
    }
    assert_eq!(untouched, 100);
    assert_eq!(
        versions(&daemon.history("many/f350.txt")).len(),
        1,
        "many/f350.txt got versions"
    );

    let answer = applied(daemon.redo("s1", json!({})));
    all_done(&answer);
    assert_eq!(answer["operation"], "redo");
    assert_tree_eq(&after_turn, &snapshot(ws.root()), "after the redo");
    let after_redo = marks(ws.root());
    for i in 300..400 {
        let path = format!("many/f{i:03}.txt");
        assert_eq!(
            after_redo[&path], before_undo[&path],
            "{path} rewritten by the redo"
        );
    }
}

/// Rolling back to before turn 1 removes everything the turns created, directories too, and
/// gives back everything they deleted.
#[test]
fn rollback_to_before_turn_one_removes_everything_the_turns_created() {
    let ws = Workspace::new();
    ws.write("keep/a.txt", "a\n");
    ws.write("keep/b.txt", "b\n");
    ws.write("top.txt", "top\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());

    daemon.turn_start("s1", "t1");
    ws.sh("mkdir -p x/y/z && echo 1 > x/y/z/one.txt && echo changed > keep/a.txt && mkdir emptydir");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "t2");
    ws.sh("mkdir -p x/y/w && echo 2 > x/y/w/two.txt && rm keep/b.txt && ln -s x/y linked && mv top.txt x/");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "t3");
    ws.sh("rm -rf x/y/z && mkdir -p q/r && echo 3 > q/r/three.txt && chmod +x keep/a.txt && mv keep kept");
    daemon.turn_end("s1");

    let answer = applied(daemon.rollback("s1", json!({"to": "before", "turn": 1})));
    all_done(&answer);
    assert_eq!(answer["kept"], json!([]), "{answer:#}");
    assert_tree_eq(
        &boundary,
        &snapshot(ws.root()),
        "after rolling back to before turn 1",
    );
}

/// A turn that replaced a file by a directory: undo gives the file back, redo the directory.
#[test]
fn a_file_replaced_by_a_directory_is_undone_and_redone() {
    let ws = Workspace::new();
    ws.write("swap", "a file\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());
    daemon.turn_start("s1", "file to dir");
    ws.sh("rm swap && mkdir swap && echo inside > swap/f.txt");
    daemon.turn_end("s1");
    let after_turn = snapshot(ws.root());

    applied(daemon.undo("s1", json!({})));
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the undo");
    applied(daemon.redo("s1", json!({})));
    assert_tree_eq(&after_turn, &snapshot(ws.root()), "after the redo");
}

/// A turn that replaced a directory by a file: undo gives the directory back, redo the file.
#[test]
fn a_directory_replaced_by_a_file_is_undone_and_redone() {
    let ws = Workspace::new();
    ws.write("swap/f.txt", "inside\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());
    daemon.turn_start("s1", "dir to file");
    ws.sh("rm -rf swap && echo 'a file' > swap");
    daemon.turn_end("s1");
    let after_turn = snapshot(ws.root());

    applied(daemon.undo("s1", json!({})));
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the undo");
    applied(daemon.redo("s1", json!({})));
    assert_tree_eq(&after_turn, &snapshot(ws.root()), "after the redo");
}

/// After an undo re-created directories, changes inside them are captured like any other
/// (the daemon watches what it re-created), and undone in turn.
#[test]
fn changes_inside_directories_an_undo_recreated_are_captured() {
    let ws = Workspace::new();
    ws.write("olddir/sub/a.txt", "a\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.sh("rm -rf olddir");
    daemon.turn_end("s1");
    applied(daemon.undo("s1", json!({})));
    assert_eq!(ws.read("olddir/sub/a.txt"), b"a\n");
    let restored = snapshot(ws.root());

    daemon.turn_start("s1", "t2");
    ws.sh("echo b > olddir/sub/b.txt && echo changed > olddir/sub/a.txt && mkdir olddir/sub/deeper && echo c > olddir/sub/deeper/c.txt");
    let turn = daemon.turn_end("s1");
    assert_eq!(
        changed_files(&turn),
        set(["olddir/sub/a.txt", "olddir/sub/b.txt", "olddir/sub/deeper/c.txt"]),
        "{turn:#}"
    );
    applied(daemon.undo("s1", json!({})));
    assert_tree_eq(
        &restored,
        &snapshot(ws.root()),
        "after undoing the turn inside re-created dirs",
    );
}

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
        let answer = applied(daemon.undo("s1", json!({})));
        assert_eq!(answer["target"]["turn"], turn, "{answer:#}");
        assert_tree_eq(
            &states[turn - 1],
            &snapshot(ws.root()),
            &format!("after undoing turn {turn}"),
        );
    }
    assert_error(409, "nothing_to_undo", daemon.undo("s1", json!({})));

    for turn in [1, 2, 3] {
        let answer = applied(daemon.redo("s1", json!({})));
        assert_eq!(answer["operation"], "redo");
        assert_tree_eq(
            &states[turn],
            &snapshot(ws.root()),
            &format!("after redo number {turn}"),
        );
    }
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));

    // Having redone everything, undo starts again from the latest turn.
    let answer = applied(daemon.undo("s1", json!({})));
    assert_eq!(answer["target"]["turn"], 3, "{answer:#}");
    assert_tree_eq(&states[2], &snapshot(ws.root()), "undo after the redos");
}

/// Redo after a rollback to a boundary returns to the state just before that rollback.
#[test]
fn redo_after_a_rollback_returns_to_the_state_before_it() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let states = three_turns(&ws, &daemon);

    applied(daemon.rollback("s1", json!({"to": "before", "turn": 2})));
    assert_tree_eq(&states[1], &snapshot(ws.root()), "after the rollback");
    applied(daemon.redo("s1", json!({})));
    assert_tree_eq(&states[3], &snapshot(ws.root()), "after the redo");
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));
}

/// A new turn ends the redo chain; the undone states stay reachable as boundaries.
#[test]
fn a_new_turn_ends_the_redo_chain() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let states = three_turns(&ws, &daemon);

    applied(daemon.undo("s1", json!({})));
    assert_tree_eq(&states[2], &snapshot(ws.root()), "after the undo");
    daemon.turn_start("s1", "t4");
    ws.write("t4.txt", "four\n");
    daemon.turn_end("s1");
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));
    assert!(ws.path("t4.txt").exists(), "the refused redo changed the tree");

    // The state after the undone turn 3 is still a boundary anyone can roll back to.
    applied(daemon.rollback("s1", json!({"to": "after", "turn": 3})));
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

    applied(daemon.undo("s1", json!({}))); // turn 3 undone: states[2]
    daemon.turn_start("s1", "t4");
    ws.write("t4.txt", "four\n");
    daemon.turn_end("s1");

    let answer = applied(daemon.undo("s1", json!({})));
    assert_eq!(answer["target"]["turn"], 4, "{answer:#}");
    assert_tree_eq(&states[2], &snapshot(ws.root()), "after undoing turn 4");

    let answer = applied(daemon.undo("s1", json!({})));
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

    let first = applied(daemon.undo("s1", json!({"op_id": "undo-once"})));
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

    let answer = applied(daemon.undo("s1", json!({"paths": ["src/sub", "docs/c.md"]})));
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

/// A rollback of more files than the daemon may hold open at once: each file is written
/// without keeping a descriptor per file until the end.
#[test]
fn an_undo_of_more_files_than_open_descriptors_allowed_restores_them_all() {
    let ws = Workspace::new();
    for i in 0..400 {
        ws.write(format!("d{}/f{i}.txt", i % 8), format!("before {i}\n"));
    }
    let daemon = Daemon::start(&ws);
    let limited = std::process::Command::new("prlimit")
        .args(["--pid", &daemon.pid.to_string(), "--nofile=200:200"])
        .status()
        .expect("run prlimit");
    assert!(limited.success(), "prlimit failed");
    daemon.turn_start("s", "edit 400 files");
    for i in 0..400 {
        ws.write(format!("d{}/f{i}.txt", i % 8), format!("after {i}\n"));
    }
    daemon.turn_end("s");
    let answer = applied(daemon.undo("s", json!({})));
    all_done(&answer);
    for i in 0..400 {
        assert_eq!(
            ws.read(format!("d{}/f{i}.txt", i % 8)),
            format!("before {i}\n").into_bytes()
        );
    }
}
