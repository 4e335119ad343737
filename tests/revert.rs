//! Revert one file of a turn, or one hunk of it: `POST
//! /v1/sessions/{s}/turns/{n}/revert` and `filewatchd revert`. A rollback of the session
//! restricted to that path, with the rollback's conflict checks and answer, that `redo` takes
//! back exactly; a dry run changes nothing.

use crate::common::*;
use serde_json::{Value, json};

fn revert(daemon: &Daemon, turn: u64, body: Value) -> (u16, Value) {
    daemon.post(&format!("/v1/sessions/s1/turns/{turn}/revert"), body)
}

/// Twelve numbered lines: far enough apart, an edit of line 2 and one of line 11 are two hunks.
fn numbered() -> String {
    (1..=12).map(|i| format!("line {i}\n")).collect()
}

fn edited(edits: &[(usize, &str)]) -> String {
    let mut lines: Vec<String> = (1..=12).map(|i| format!("line {i}\n")).collect();
    for (n, text) in edits {
        lines[n - 1] = format!("{text}\n");
    }
    lines.concat()
}

/// A turn that edits `a.txt` in two hunks (lines 2 and 11) and rewrites `b.txt`.
fn two_files_two_hunks() -> (Workspace, Daemon) {
    let ws = Workspace::new();
    ws.write("a.txt", numbered());
    ws.write("b.txt", "b before\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edit both");
    ws.write("a.txt", edited(&[(2, "TWO"), (11, "ELEVEN")]));
    ws.write("b.txt", "b after\n");
    daemon.turn_end("s1");
    (ws, daemon)
}

#[test]
fn one_file_of_a_turn_is_reverted_and_the_other_untouched_and_redo_restores_it() {
    let (ws, daemon) = two_files_two_hunks();
    let dry = expect(200, revert(&daemon, 1, json!({"path": "a.txt", "dry_run": true})));
    assert_eq!(action_paths(&dry), set(["a.txt"]), "{dry:#}");
    assert_eq!(
        ws.read("a.txt"),
        edited(&[(2, "TWO"), (11, "ELEVEN")]).as_bytes(),
        "a dry run changes nothing"
    );

    let answer = rollback_applied(revert(&daemon, 1, json!({"path": "a.txt"})));
    assert_eq!(action_paths(&answer), set(["a.txt"]), "{answer:#}");
    assert_eq!(action(&answer, "a.txt")["action"], "restore", "{answer:#}");
    assert_eq!(ws.read("a.txt"), numbered().as_bytes());
    assert_eq!(
        ws.read("b.txt"),
        b"b after\n",
        "the other file of the turn is untouched"
    );

    rollback_applied(daemon.redo("s1", json!({})));
    assert_eq!(ws.read("a.txt"), edited(&[(2, "TWO"), (11, "ELEVEN")]).as_bytes());
    assert_eq!(ws.read("b.txt"), b"b after\n");
}

#[test]
fn the_second_hunk_is_taken_back_and_the_first_stays() {
    let (ws, daemon) = two_files_two_hunks();
    let turn = daemon.turn("s1", 1, true);
    let diff = change(&turn, "a.txt")["diff"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(diff.matches("@@ -").count(), 2, "two hunks: {diff}");
    // The user appends a line after the turn: the hunk's lines are unchanged, so it applies.
    ws.sh("echo 'by the user' >> a.txt");
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");

    let before_dry = ws.read("a.txt");
    let dry = expect(
        200,
        revert(&daemon, 1, json!({"path": "a.txt", "hunk": 1, "dry_run": true})),
    );
    assert_eq!(action_paths(&dry), set(["a.txt"]), "{dry:#}");
    assert_eq!(ws.read("a.txt"), before_dry, "a dry run changes nothing");
    let answer = rollback_applied(revert(&daemon, 1, json!({"path": "a.txt", "hunk": 1})));
    assert_eq!(action_paths(&answer), set(["a.txt"]), "{answer:#}");
    let expected = format!("{}by the user\n", edited(&[(2, "TWO")]));
    assert_eq!(String::from_utf8_lossy(&ws.read("a.txt")), expected);
    assert_eq!(ws.read("b.txt"), b"b after\n");
    let latest = latest(&daemon.history("a.txt")).clone();
    assert_eq!(latest["origin"], "rollback", "{latest:#}");

    rollback_applied(daemon.redo("s1", json!({})));
    let back = format!("{}by the user\n", edited(&[(2, "TWO"), (11, "ELEVEN")]));
    assert_eq!(
        String::from_utf8_lossy(&ws.read("a.txt")),
        back,
        "redo takes the revert back exactly"
    );

    assert_error(
        404,
        "not_found",
        revert(&daemon, 1, json!({"path": "a.txt", "hunk": 2})),
    );
    assert_error(
        404,
        "not_recorded",
        revert(&daemon, 1, json!({"path": "never.txt"})),
    );
    assert_error(404, "not_found", revert(&daemon, 2, json!({"path": "b.txt"})));
    assert_error(400, "bad_path", revert(&daemon, 1, json!({})));
}

#[test]
fn a_hunk_whose_lines_were_edited_since_is_a_conflict_under_every_policy() {
    let (ws, daemon) = two_files_two_hunks();
    let user = edited(&[(2, "TWO"), (11, "eleven, by the user")]);
    ws.write("a.txt", &user);
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");

    let (status, answer) = revert(&daemon, 1, json!({"path": "a.txt", "hunk": 1}));
    assert_eq!(status, 409, "{answer:#}");
    assert_eq!(answer["error"]["code"], "conflicts", "{answer:#}");
    let conflict = listed(&answer, "conflicts", "a.txt").clone();
    assert_eq!(conflict["code"], "changed_by_other", "{conflict:#}");
    assert!(
        conflict["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("line 11"),
        "{conflict:#}"
    );
    assert_eq!(
        String::from_utf8_lossy(&ws.read("a.txt")),
        user,
        "nothing changed"
    );

    for policy in ["skip", "force"] {
        let answer = expect(
            200,
            revert(
                &daemon,
                1,
                json!({"path": "a.txt", "hunk": 1, "on_conflict": policy}),
            ),
        );
        assert_eq!(
            listed_paths(&answer, "skipped"),
            set(["a.txt"]),
            "{policy}: {answer:#}"
        );
        assert_eq!(
            String::from_utf8_lossy(&ws.read("a.txt")),
            user,
            "{policy}: nothing changed"
        );
    }
    // The first hunk's line is untouched by the user: it still reverts.
    rollback_applied(revert(&daemon, 1, json!({"path": "a.txt", "hunk": 0})));
    assert_eq!(
        String::from_utf8_lossy(&ws.read("a.txt")),
        edited(&[(11, "eleven, by the user")])
    );
}

/// A file changed since the turn: abort refuses, skip leaves it, force reverts it; the CLI too.
#[test]
fn a_file_changed_since_the_turn_conflicts_and_skip_and_force_behave() {
    let (ws, daemon) = two_files_two_hunks();
    ws.write("b.txt", "b by the user\n");
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");

    let (status, refused) = revert(&daemon, 1, json!({"path": "b.txt"}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(listed(&refused, "conflicts", "b.txt")["code"], "changed_by_other");
    let skipped = expect(
        200,
        revert(&daemon, 1, json!({"path": "b.txt", "on_conflict": "skip"})),
    );
    assert_eq!(listed_paths(&skipped, "skipped"), set(["b.txt"]), "{skipped:#}");
    assert_eq!(ws.read("b.txt"), b"b by the user\n");

    let out = cli_state(&ws, &["revert", "--turn", "1", "b.txt", "--session", "s1"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ws.read("b.txt"), b"b by the user\n");
    cli_state_ok(
        &ws,
        &["revert", "--turn", "1", "b.txt", "--session", "s1", "--force"],
    );
    assert_eq!(ws.read("b.txt"), b"b before\n");
    assert_eq!(ws.read("a.txt"), edited(&[(2, "TWO"), (11, "ELEVEN")]).as_bytes());
    cli_state_ok(
        &ws,
        &["revert", "--turn", "1", "a.txt", "--hunk", "0", "--session", "s1"],
    );
    assert_eq!(ws.read("a.txt"), edited(&[(11, "ELEVEN")]).as_bytes());
}

/// A hunk another session may have written is never taken back as the turn's: while turns of
/// two sessions were open the file is `ambiguous`, which refuses the hunk under every policy,
/// and nothing on disk changes. (A write during a turn by no agent is the turn's by position:
/// the daemon cannot tell who made it.)
#[test]
fn a_hunk_another_session_may_have_written_during_the_turn_is_refused() {
    type Scenario = fn(&Workspace, &Daemon);
    let both_open: Scenario = |ws, daemon| {
        daemon.turn_start("s2", "the other agent");
        ws.write("a.txt", edited(&[(2, "TWO"), (11, "ELEVEN")]));
        daemon.turn_end("s2");
    };
    for (what, scenario) in [("two sessions' turns open", both_open)] {
        let ws = Workspace::new();
        ws.write("a.txt", numbered());
        let daemon = Daemon::start(&ws);
        daemon.turn_start("s1", "this agent");
        scenario(&ws, &daemon);
        daemon.turn_end("s1");
        for policy in ["abort", "skip", "force"] {
            let (status, answer) = revert(
                &daemon,
                1,
                json!({"path": "a.txt", "hunk": 1, "on_conflict": policy}),
            );
            let refused = if policy == "abort" { 409 } else { 200 };
            assert_eq!(status, refused, "{what}, {policy}: {answer:#}");
            let conflicts = listed_paths(&answer, "conflicts");
            assert!(conflicts.contains("a.txt"), "{what}, {policy}: {answer:#}");
            assert_eq!(
                ws.read("a.txt"),
                edited(&[(2, "TWO"), (11, "ELEVEN")]).as_bytes(),
                "{what}, {policy}: the file changed"
            );
        }
    }
}

/// After undo and redo of the turn, its file holds what the turn left: the session's own
/// undo and redo are not another's change, so the file reverts (and the CLI says so too); an
/// outside write after the redo still is a conflict.
#[test]
fn a_file_of_a_turn_undone_and_redone_reverts_and_an_outside_write_still_conflicts() {
    let (ws, daemon) = two_files_two_hunks();
    rollback_applied(daemon.undo("s1", json!({})));
    rollback_applied(daemon.redo("s1", json!({})));
    assert_eq!(ws.read("b.txt"), b"b after\n");

    let answer = rollback_applied(revert(&daemon, 1, json!({"path": "b.txt"})));
    assert_eq!(action_paths(&answer), set(["b.txt"]), "{answer:#}");
    assert_eq!(ws.read("b.txt"), b"b before\n");
    cli_state_ok(&ws, &["revert", "--turn", "1", "a.txt", "--session", "s1"]);
    assert_eq!(ws.read("a.txt"), numbered().as_bytes());

    // Both reverts taken back; then someone else edits a.txt.
    rollback_applied(daemon.redo("s1", json!({})));
    rollback_applied(daemon.redo("s1", json!({})));
    assert_eq!(ws.read("a.txt"), edited(&[(2, "TWO"), (11, "ELEVEN")]).as_bytes());
    ws.write("a.txt", "a by the user\n");
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let (status, refused) = revert(&daemon, 1, json!({"path": "a.txt"}));
    assert_eq!(status, 409, "{refused:#}");
    let conflict = listed(&refused, "conflicts", "a.txt");
    assert_eq!(conflict["code"], "changed_by_other", "{conflict:#}");
    assert!(
        conflict["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("outside any turn"),
        "{conflict:#}"
    );
    assert_eq!(ws.read("a.txt"), b"a by the user\n");
}
