//! Untracked is not absent: history records when a path leaves the tracked set
//! (an ignore rule added) and enters it (a rule lifted), as versions of kind `untracked`, and
//! every rollback leaves a path alone at a moment it was untracked: turn boundaries, time
//! rollbacks, one-path restores.

use crate::common::*;
use serde_json::json;

/// A file an ignore rule hid at T and that came into view later is not deleted by a rollback
/// to T: neither by the dry run's plan nor by the rollback itself.
#[test]
fn a_time_rollback_to_when_a_path_was_ignored_leaves_it_alone() {
    let ws = Workspace::new();
    ws.write(".gitignore", "build/\n");
    ws.write("build/out.bin", "artifact\n");
    ws.write("src.txt", "s0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let t0 = time_mark();

    daemon.turn_start("s1", "edit and stop ignoring build/");
    ws.write("src.txt", "s1\n");
    ws.write(".gitignore", "");
    daemon.turn_end("s1");

    let plan = expect(200, daemon.rollback_in_time(json!({"at": t0, "dry_run": true})));
    assert_eq!(action_paths(&plan), set([".gitignore", "src.txt"]), "{plan:#}");
    cli_state_ok(&ws, &["rollback", "--at", &t0]);
    assert_eq!(ws.read("src.txt"), b"s0\n");
    assert_eq!(ws.read(".gitignore"), b"build/\n");
    assert_eq!(ws.read("build/out.bin"), b"artifact\n");
    let found = daemon.history("build/out.bin");
    let kinds: Vec<_> = versions(&found).iter().map(|v| v["kind"].clone()).collect();
    assert_eq!(
        kinds,
        [json!("untracked"), json!("file"), json!("untracked")],
        "{found:#}"
    );

    // A one-path restore of it to that time has nothing to do either.
    let answer = cli_state_json(
        &ws,
        &["restore", "build/out.bin", "--at", &t0, "--dry-run", "--json"],
    );
    assert_eq!(answer["actions"], json!([]), "{answer:#}");
}

/// A tracked file that an ignore rule hides gets an `untracked` version; edited while hidden
/// and shown again, a rollback to a moment it was hidden keeps the edit (history has no
/// content for it then) and changes only what it recorded.
#[test]
fn a_path_hidden_then_shown_again_is_left_alone_by_a_rollback_to_while_it_was_hidden() {
    let ws = Workspace::new();
    // A file a .gitignore rule names is recorded since issue 49 (docs/tracking.md, "Ignored
    // files"); this test is about what an ignore rule hides.
    ws.write(".filewatchd.toml", "[ignored_files]\nrecord = false\n");
    ws.write("notes.txt", "n0\n");
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "hide notes.txt");
    ws.write(".gitignore", "notes.txt\n");
    daemon.turn_end("s1");
    let hidden = daemon.history("notes.txt");
    assert_eq!(latest(&hidden)["kind"], "untracked", "{hidden:#}");
    assert_eq!(latest(&hidden)["origin"], "offline", "{hidden:#}");
    ws.write("notes.txt", "n1, written while ignored\n");
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let hidden_at = time_mark();

    daemon.turn_start("s1", "show it again");
    ws.write(".gitignore", "");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");
    let shown = daemon.history("notes.txt");
    assert_eq!(
        latest(&shown)["hash"],
        blake3_hex(b"n1, written while ignored\n"),
        "{shown:#}"
    );

    let answer = rollback_applied(daemon.rollback_in_time(json!({"at": hidden_at})));
    assert_eq!(action_paths(&answer), set([".gitignore", "a.txt"]), "{answer:#}");
    assert_eq!(ws.read("notes.txt"), b"n1, written while ignored\n");
    assert_eq!(ws.read("a.txt"), b"a0\n");
}

/// Undoing the turn that lifted an ignore rule brings the rule back and leaves what it had
/// hidden on disk, with no conflict: it was untracked before the turn, not absent.
#[test]
fn undoing_the_turn_that_lifted_a_rule_leaves_what_it_hid() {
    let ws = Workspace::new();
    ws.write(".gitignore", "cache/\n");
    ws.write("cache/model.bin", "weights\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "stop ignoring cache/");
    ws.write(".gitignore", "");
    ws.write("new.txt", "made by the turn\n");
    daemon.turn_end("s1");
    assert_eq!(latest(&daemon.history("cache/model.bin"))["kind"], "file");

    let answer = rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(
        action_paths(&answer),
        set([".gitignore", "new.txt"]),
        "{answer:#}"
    );
    assert_eq!(ws.read(".gitignore"), b"cache/\n");
    assert!(!ws.path("new.txt").exists());
    assert_eq!(ws.read("cache/model.bin"), b"weights\n");
}

/// A redo leaves alone a path its rollback changed that an ignore rule hides now: its content
/// now was never recorded, and it is not the redo's to overwrite.
#[test]
fn a_redo_leaves_a_path_that_is_untracked_now() {
    let ws = Workspace::new();
    // A file a .gitignore rule names is recorded since issue 49 (docs/tracking.md, "Ignored
    // files"); this test is about what an ignore rule hides.
    ws.write(".filewatchd.toml", "[ignored_files]\nrecord = false\n");
    ws.write("f.txt", "f0\n");
    ws.write("g.txt", "g0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let t0 = time_mark();
    daemon.turn_start("s1", "edit both");
    ws.write("f.txt", "f1\n");
    ws.write("g.txt", "g1\n");
    daemon.turn_end("s1");
    cli_state_ok(&ws, &["rollback", "--at", &t0]);

    ws.write(".gitignore", "f.txt\n");
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    ws.write("f.txt", "private, while ignored\n");
    let out = cli_state(&ws, &["redo", "--time", "--json"]);
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the redo as JSON");
    assert_eq!(out.status.code(), Some(0), "{answer:#}");
    assert_eq!(action_paths(&answer), set(["g.txt"]), "{answer:#}");
    assert_eq!(ws.read("f.txt"), b"private, while ignored\n");
    assert_eq!(ws.read("g.txt"), b"g1\n");
}
