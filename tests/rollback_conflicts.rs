//! G4 and G5: a change the rollback was not asked to undo is a conflict. `abort` changes
//! nothing and lists every conflict with its reason, `skip` leaves conflicting paths exactly as
//! they are, `force` rolls them back with what they held kept in history. The seed scenarios
//! C1-C4 in our terms, over HTTP and through the CLI (exit 3 when refused).

use std::process::Output;

use crate::common::*;
use serde_json::{Value, json};

/// Three files a turn edits, then the user edits one of them between turns.
struct Edited {
    ws: Workspace,
    daemon: Daemon,
    /// The tree at `before 1`.
    boundary: Tree,
}

const USER_EDIT: &str = "b: the user's own edit, never undone silently\n";

fn user_edit_between_turns() -> Edited {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("b.txt", "b0\n");
    ws.write("c/c.txt", "c0\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());
    daemon.turn_start("s1", "agent edits");
    ws.sh("echo a1 > a.txt && echo b1 > b.txt && echo c1 > c/c.txt && echo n1 > n.txt");
    daemon.turn_end("s1");
    ws.write("b.txt", USER_EDIT); // no turn open: the user's editor
    Edited { ws, daemon, boundary }
}

/// Asserts the answer lists exactly `paths` as conflicts, each with its code and a reason.
#[track_caller]
fn assert_conflicts(answer: &Value, code: &str, paths: &[&str]) {
    assert_eq!(
        listed_paths(answer, "conflicts"),
        set(paths.iter().copied()),
        "{answer:#}"
    );
    for path in paths {
        let c = listed(answer, "conflicts", path);
        assert_eq!(c["code"], code, "{c}");
        assert!(c["reason"].as_str().is_some_and(|r| !r.is_empty()), "{c}");
    }
}

/// Asserts a refusal because of conflicts: 409, code `conflicts`, nothing applied, every
/// action only planned.
#[track_caller]
fn refused(reply: (u16, Value)) -> Value {
    let (status, answer) = reply;
    assert_eq!(status, 409, "{answer:#}");
    assert_eq!(answer["error"]["code"], "conflicts", "{answer:#}");
    assert!(
        answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{answer:#}"
    );
    assert_eq!(answer["applied"], false, "{answer:#}");
    for a in actions(&answer) {
        assert_eq!(a["status"], "planned", "{a}");
    }
    answer
}

fn cli(ws: &Workspace, args: &[&str]) -> Output {
    let state_dir = ws.state_dir().to_str().unwrap().to_string();
    let mut all = args.to_vec();
    all.extend(["--session", "s1", "--state-dir", &state_dir]);
    ws.cli(".", &all)
}

#[track_caller]
fn assert_exit(code: i32, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// C1: an edit made between turns is detected; `abort` (the default) changes nothing and says
/// why; the dry run shows the same conflict; the CLI exits 3.
#[test]
fn c1_user_edit_is_a_conflict_and_abort_changes_nothing() {
    let Edited { ws, daemon, .. } = user_edit_between_turns();
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    let answer = refused(daemon.undo("s1", json!({})));
    // The user's edit is recorded now (the undo's barrier): nothing after this may add versions.
    let seq = daemon.status()["latest_seq"].clone();
    assert_conflicts(&answer, "changed_by_other", &["b.txt"]);
    let reason = listed(&answer, "conflicts", "b.txt")["reason"].as_str().unwrap();
    assert!(reason.contains("outside any turn"), "reason: {reason}");
    assert_eq!(answer["on_conflict"], "abort");
    assert_eq!(answer["rollback_id"], Value::Null, "{answer:#}");

    let plan = expect(200, daemon.undo("s1", json!({"dry_run": true})));
    assert_conflicts(&plan, "changed_by_other", &["b.txt"]);
    assert_eq!(action_paths(&plan), set(["a.txt", "b.txt", "c/c.txt", "n.txt"]));

    let explicit = refused(daemon.rollback("s1", json!({"to": "before", "turn": 1, "on_conflict": "abort"})));
    assert_conflicts(&explicit, "changed_by_other", &["b.txt"]);

    let out = cli(&ws, &["undo"]);
    let text = assert_exit(3, &out);
    assert!(
        text.contains("b.txt"),
        "the CLI does not name the conflict:\n{text}"
    );
    let out = cli(&ws, &["undo", "--json"]);
    let printed: Value = serde_json::from_str(&assert_exit(3, &out)).unwrap();
    assert_conflicts(&printed, "changed_by_other", &["b.txt"]);

    assert_tree_eq(&tree, &snapshot(ws.root()), "after refused undos");
    assert_eq!(marks(ws.root()), stat, "a refused undo rewrote files");
    assert_eq!(
        daemon.status()["latest_seq"],
        seq,
        "a refused undo recorded versions"
    );
    for path in ["a.txt", "b.txt", "c/c.txt", "n.txt"] {
        let history = daemon.history(path);
        assert!(
            versions(&history).iter().all(|v| v["origin"] != "rollback"),
            "{path}: {history:#}"
        );
    }
    // Refused, so not an undo: the same undo is still to be done.
    assert_eq!(
        expect(200, daemon.undo("s1", json!({"dry_run": true})))["target"]["turn"],
        1
    );
}

/// C2: `skip` rolls back everything else and leaves the edited file exactly as it is.
#[test]
fn c2_skip_leaves_the_edited_file_and_restores_the_rest() {
    let Edited { ws, daemon, boundary } = user_edit_between_turns();
    let b_mark = marks(ws.root())["b.txt"];

    let answer = expect(200, daemon.undo("s1", json!({"on_conflict": "skip"})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_conflicts(&answer, "changed_by_other", &["b.txt"]);
    assert_eq!(listed_paths(&answer, "skipped"), set(["b.txt"]), "{answer:#}");
    assert_eq!(listed(&answer, "skipped", "b.txt")["code"], "changed_by_other");
    assert_eq!(action(&answer, "b.txt")["status"], "skipped");
    for path in ["a.txt", "c/c.txt", "n.txt"] {
        assert_eq!(action(&answer, path)["status"], "done", "{answer:#}");
    }

    let mut expected = boundary.clone();
    expected.insert(
        "b.txt".into(),
        Entry::File {
            bytes: USER_EDIT.into(),
            exec: false,
        },
    );
    assert_tree_eq(&expected, &snapshot(ws.root()), "after undo with skip");
    assert_eq!(
        marks(ws.root())["b.txt"],
        b_mark,
        "the skipped file was rewritten"
    );
    assert!(
        versions(&daemon.history("b.txt"))
            .iter()
            .all(|v| v["origin"] != "rollback"),
        "a rollback version for the skipped file"
    );

    // The CLI's --skip-conflicts is the same and exits 0 (nothing left to do here: a redo).
    let out = cli(&ws, &["redo", "--skip-conflicts"]);
    assert_exit(0, &out);
    assert_eq!(ws.read("a.txt"), b"a1\n");
    assert_eq!(ws.read("b.txt"), USER_EDIT.as_bytes());
}

/// C3: `force` restores the edited file too; the user's edit stays in history, so redo gives
/// it back.
#[test]
fn c3_force_restores_the_edited_file_and_keeps_the_edit_in_history() {
    let Edited { ws, daemon, boundary } = user_edit_between_turns();

    let answer = expect(200, daemon.undo("s1", json!({"on_conflict": "force"})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_conflicts(&answer, "changed_by_other", &["b.txt"]);
    assert_eq!(answer["skipped"], json!([]), "{answer:#}");
    for a in actions(&answer) {
        assert_eq!(a["status"], "done", "{a}");
    }
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after undo with force");

    let history = daemon.history("b.txt");
    let outside: Vec<&Value> = versions(&history)
        .iter()
        .filter(|v| v["origin"] == "outside")
        .collect();
    assert_eq!(outside.len(), 1, "the user's edit is not in history: {history:#}");
    assert_eq!(outside[0]["size"], USER_EDIT.len(), "{history:#}");
    assert_eq!(
        outside[0]["hash"],
        blake3_hex(USER_EDIT.as_bytes()),
        "{history:#}"
    );
    assert_eq!(latest(&history)["origin"], "rollback", "{history:#}");
    let edit_hash = outside[0]["hash"].clone();

    // Nothing lost: the state before the forced undo, the edit included, comes back.
    let answer = expect(200, daemon.redo("s1", json!({})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(ws.read("b.txt"), USER_EDIT.as_bytes());
    assert_eq!(latest(&daemon.history("b.txt"))["hash"], edit_hash);
    assert_eq!(ws.read("a.txt"), b"a1\n");
}

/// C3 through the CLI: `--force` exits 0 and restores.
#[test]
fn c3_cli_force() {
    let Edited { ws, daemon, boundary } = user_edit_between_turns();
    assert_exit(3, &cli(&ws, &["rollback", "--before", "1"]));
    assert_exit(0, &cli(&ws, &["rollback", "--before", "1", "--force"]));
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after rollback --force");
    drop(daemon);
}

/// C4: every changed file was edited by someone else and the user aborts: nothing changes,
/// and every conflict is listed.
#[test]
fn c4_all_files_conflict_and_abort_leaves_the_disk_unchanged() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("d/b.txt", "b0\n");
    ws.write("gone.txt", "gone\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edits");
    ws.sh("echo a1 > a.txt && echo b1 > d/b.txt && rm gone.txt && echo n > n.txt");
    daemon.turn_end("s1");
    // The user touches every one of them: edits, re-creates the deleted one, deletes the new one.
    ws.sh("echo mine > a.txt && echo mine > d/b.txt && echo mine > gone.txt && rm n.txt && echo x > n.txt");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    let answer = refused(daemon.undo("s1", json!({})));
    assert_conflicts(
        &answer,
        "changed_by_other",
        &["a.txt", "d/b.txt", "gone.txt", "n.txt"],
    );
    let answer = expect(200, daemon.undo("s1", json!({"on_conflict": "skip"})));
    assert_eq!(
        listed_paths(&answer, "skipped"),
        set(["a.txt", "d/b.txt", "gone.txt", "n.txt"])
    );
    assert_tree_eq(&tree, &snapshot(ws.root()), "after abort and skip");
    assert_eq!(marks(ws.root()), stat, "files rewritten");
}

/// Edits made after the turn to files the turn never touched are not the turn's (issue 48):
/// the undo takes back the turn's own file, leaves them exactly as they are, and lists them
/// nowhere.
#[test]
fn edits_to_files_the_turn_did_not_touch_are_left_alone_without_a_conflict() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("z.txt", "z0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edits a");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");
    ws.write("z.txt", "the user's z\n");
    ws.write("fresh.txt", "the user's new file\n");
    let user = marks(ws.root());

    let answer = expect(200, daemon.undo("s1", json!({})));
    assert_eq!(
        listed_paths(&answer, "conflicts"),
        set::<[&str; 0], &str>([]),
        "{answer:#}"
    );
    assert_eq!(action_paths(&answer), set(["a.txt"]), "{answer:#}");
    assert_eq!(ws.read("a.txt"), b"a0\n");
    assert_eq!(ws.read("z.txt"), b"the user's z\n");
    assert_eq!(ws.read("fresh.txt"), b"the user's new file\n");
    let now = marks(ws.root());
    for path in ["z.txt", "fresh.txt"] {
        assert_eq!(now[path], user[path], "{path} rewritten");
    }
}

/// A user edit after an undo makes the redo conflict: refused with abort, kept with skip.
#[test]
fn redo_after_a_new_user_edit_conflicts() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("b.txt", "b0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edits");
    ws.sh("echo a1 > a.txt && echo b1 > b.txt");
    daemon.turn_end("s1");
    expect(200, daemon.undo("s1", json!({})));
    ws.write("a.txt", "the user's a\n");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    let answer = refused(daemon.redo("s1", json!({})));
    assert_conflicts(&answer, "changed_by_other", &["a.txt"]);
    assert_eq!(answer["operation"], "redo");
    assert_tree_eq(&tree, &snapshot(ws.root()), "after the refused redo");
    assert_eq!(marks(ws.root()), stat, "the refused redo rewrote files");
    assert_exit(3, &cli(&ws, &["redo"]));

    let answer = expect(200, daemon.redo("s1", json!({"on_conflict": "skip"})));
    assert_eq!(listed_paths(&answer, "skipped"), set(["a.txt"]), "{answer:#}");
    assert_eq!(ws.read("a.txt"), b"the user's a\n");
    assert_eq!(ws.read("b.txt"), b"b1\n");
}

/// Another session's turn since the boundary is a conflict, and the reason names it.
#[test]
fn another_sessions_turn_is_a_conflict() {
    let ws = Workspace::new();
    ws.write("shared.txt", "0\n");
    ws.write("mine.txt", "0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "s1 edits");
    ws.sh("echo s1 > shared.txt && echo s1 > mine.txt");
    daemon.turn_end("s1");
    daemon.turn_start("s2", "s2 edits");
    ws.write("shared.txt", "s2\n");
    daemon.turn_end("s2");

    let answer = refused(daemon.undo("s1", json!({})));
    assert_conflicts(&answer, "changed_by_other", &["shared.txt"]);
    let reason = listed(&answer, "conflicts", "shared.txt")["reason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("s2"),
        "the reason does not name session s2: {reason}"
    );
    assert_eq!(ws.read("shared.txt"), b"s2\n");
    assert_eq!(ws.read("mine.txt"), b"s1\n");

    // s2 may undo its own turn: s1's earlier turn is before s2's boundary.
    let answer = expect(200, daemon.undo("s2", json!({})));
    assert_eq!(answer["conflicts"], json!([]), "{answer:#}");
    assert_eq!(ws.read("shared.txt"), b"s1\n");
}

/// A file deleted by the turn and re-created by the user: a conflict; force puts the turn's
/// boundary state back and keeps the user's file in history.
#[test]
fn a_deleted_file_recreated_by_the_user_conflicts() {
    let ws = Workspace::new();
    ws.write("x.txt", "original\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "delete");
    ws.remove("x.txt");
    daemon.turn_end("s1");
    ws.write("x.txt", "recreated by the user\n");

    let answer = refused(daemon.undo("s1", json!({})));
    assert_conflicts(&answer, "changed_by_other", &["x.txt"]);
    assert_eq!(ws.read("x.txt"), b"recreated by the user\n");

    expect(200, daemon.undo("s1", json!({"on_conflict": "force"})));
    assert_eq!(ws.read("x.txt"), b"original\n");
    let history = daemon.history("x.txt");
    assert!(
        versions(&history)
            .iter()
            .any(|v| v["origin"] == "outside" && v["hash"] == blake3_hex(b"recreated by the user\n")),
        "{history:#}"
    );
}

/// G9: a file known only by size and hash (over `max_file_size`) cannot be restored, and
/// every mode says so for that path: abort refuses, skip and force restore the rest and leave
/// it exactly as it is. One whose content now was never stored is a conflict: a rollback
/// would lose that content for good.
#[test]
fn a_too_large_file_is_not_restorable_and_said_so() {
    for (mode, outcome) in ON_CONFLICT {
        let ws = Workspace::new();
        ws.write(".filewatchd.toml", "max_file_size = 1000\n");
        ws.write("big.bin", vec![b'x'; 5000]);
        ws.write("small.txt", "small before\n");
        ws.write("grown.bin", "small\n");
        let daemon = Daemon::start(&ws);
        daemon.turn_start("s1", "edits a big file");
        ws.write("grown.bin", vec![b'g'; 3000]);
        ws.write("big.bin", vec![b'y'; 6000]);
        ws.write("small.txt", "small after\n");
        ws.write("big_new.bin", vec![b'z'; 7000]);
        daemon.turn_end("s1");
        let big_mark = marks(ws.root())["big.bin"];

        let (status, answer) = daemon.undo("s1", json!({"on_conflict": mode}));
        assert_eq!(
            listed_paths(&answer, "not_restorable"),
            set(["big.bin"]),
            "{mode}: {answer:#}"
        );
        assert_eq!(
            listed(&answer, "not_restorable", "big.bin")["code"],
            "too_large",
            "{answer:#}"
        );
        assert_eq!(ws.read("big.bin"), vec![b'y'; 6000], "{mode}: big.bin changed");
        assert_eq!(marks(ws.root())["big.bin"], big_mark, "{mode}: big.bin rewritten");
        assert_eq!(status, outcome.status(), "{mode}: {answer:#}");
        if outcome == OnConflict::Refused {
            assert_eq!(answer["error"]["code"], "conflicts", "{answer:#}");
            assert_eq!(ws.read("small.txt"), b"small after\n");
            assert!(ws.path("big_new.bin").exists());
        } else {
            assert_eq!(action(&answer, "big.bin")["status"], "skipped", "{answer:#}");
            assert_eq!(ws.read("small.txt"), b"small before\n", "{mode}");
            // The file the turn created was never stored either: deleting it could not be
            // redone, so it is a conflict. Skip leaves it; only force deletes it.
            let note = listed(&answer, "conflicts", "big_new.bin");
            assert_eq!(note["code"], "content_not_stored", "{answer:#}");
            let skipped = outcome == OnConflict::Skipped;
            assert_eq!(ws.path("big_new.bin").exists(), skipped, "{mode}");
            let grown = if skipped {
                vec![b'g'; 3000]
            } else {
                b"small\n".to_vec()
            };
            assert_eq!(ws.read("grown.bin"), grown, "{mode}");
        }
    }
}

/// A change made while the daemon was down is found at restart (origin `offline`) and is a
/// conflict like any other foreign change.
#[test]
fn an_edit_made_while_the_daemon_was_down_conflicts() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("b.txt", "b0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edits");
    ws.sh("echo a1 > a.txt && echo b1 > b.txt");
    daemon.turn_end("s1");
    daemon.kill9();
    ws.write("b.txt", "edited while the daemon was down\n");
    let daemon = Daemon::start(&ws);

    let answer = refused(daemon.undo("s1", json!({})));
    assert_conflicts(&answer, "changed_by_other", &["b.txt"]);
    let reason = listed(&answer, "conflicts", "b.txt")["reason"].as_str().unwrap();
    assert!(reason.contains("not running"), "reason: {reason}");
    assert_eq!(ws.read("a.txt"), b"a1\n");
    assert_eq!(ws.read("b.txt"), b"edited while the daemon was down\n");
}
