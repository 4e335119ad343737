//! Reviewed marks: `PUT /v1/sessions/{s}/turns/{n}/review` and `filewatchd review`
//! mark a turn or one file of it reviewed; the turn's answer, its changes and the timeline say
//! so; `?unreviewed=true` lists only the turns not reviewed; `--undo` takes a mark away.

use crate::common::*;
use serde_json::{Value, json};

fn mark(daemon: &Daemon, turn: u64, body: Value) -> (u16, Value) {
    daemon.put(&format!("/v1/sessions/s1/turns/{turn}/review"), body)
}

/// The turn entries of the timeline as (turn, reviewed), newest first.
fn timeline_turns(daemon: &Daemon, query: &str) -> Vec<(i64, bool)> {
    let page = expect(200, daemon.get(&format!("/v1/timeline?session=s1{query}")));
    let entries = page["entries"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|e| e["kind"] == "turn")
        .map(|e| (e["turn"].as_i64().unwrap_or(-1), e["reviewed"] == true))
        .collect()
}

fn two_turns() -> (Workspace, Daemon) {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "one");
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "two");
    ws.write("c.txt", "c\n");
    daemon.turn_end("s1");
    (ws, daemon)
}

#[test]
fn a_turn_and_a_file_are_marked_seen_filtered_and_unmarked() {
    let (ws, daemon) = two_turns();
    let turn = daemon.turn("s1", 1, false);
    assert_eq!(turn["reviewed"], false, "{turn:#}");
    assert_eq!(change(&turn, "a.txt")["reviewed"], false, "{turn:#}");
    assert_eq!(timeline_turns(&daemon, ""), vec![(2, false), (1, false)]);

    let marked = expect(200, mark(&daemon, 1, json!({"reviewed": true, "path": "a.txt"})));
    assert_eq!(
        marked,
        json!({"session": "s1", "turn": 1, "reviewed": false, "reviewed_paths": ["a.txt"]})
    );
    let turn = daemon.turn("s1", 1, false);
    assert_eq!(
        turn["reviewed"], false,
        "a file's mark is not the turn's: {turn:#}"
    );
    assert_eq!(change(&turn, "a.txt")["reviewed"], true, "{turn:#}");
    assert_eq!(change(&turn, "b.txt")["reviewed"], false, "{turn:#}");

    let marked = expect(200, mark(&daemon, 2, json!({"reviewed": true})));
    assert_eq!(marked["reviewed"], true, "{marked:#}");
    assert_eq!(daemon.turn("s1", 2, false)["reviewed"], true);
    assert_eq!(change(&daemon.turn("s1", 2, false), "c.txt")["reviewed"], true);
    assert_eq!(timeline_turns(&daemon, ""), vec![(2, true), (1, false)]);
    assert_eq!(timeline_turns(&daemon, "&unreviewed=true"), vec![(1, false)]);

    let unmarked = expect(200, mark(&daemon, 2, json!({"reviewed": false})));
    assert_eq!(unmarked["reviewed"], false, "{unmarked:#}");
    assert_eq!(
        timeline_turns(&daemon, "&unreviewed=true"),
        vec![(2, false), (1, false)]
    );

    // The CLI: the turn, a file, and --undo.
    let text = String::from_utf8_lossy(&cli_state_ok(&ws, &["review", "--turn", "1", "--session", "s1"]))
        .into_owned();
    assert!(text.contains("turn 1 of s1: reviewed"), "{text}");
    assert_eq!(daemon.turn("s1", 1, false)["reviewed"], true);
    let log =
        String::from_utf8_lossy(&cli_state_ok(&ws, &["log", "--session", "s1", "--no-pager"])).into_owned();
    let marked: Vec<&str> = log.lines().filter(|l| l.contains("(reviewed)")).collect();
    assert_eq!(marked.len(), 1, "{log}");
    assert!(marked[0].contains("turn 1"), "{log}");
    let log = String::from_utf8_lossy(&cli_state_ok(
        &ws,
        &["log", "--session", "s1", "--no-pager", "--unreviewed"],
    ))
    .into_owned();
    assert!(log.contains("turn 2") && !log.contains("turn 1"), "{log}");
    cli_state_ok(&ws, &["review", "--turn", "1", "--session", "s1", "--undo"]);
    let turn = daemon.turn("s1", 1, false);
    assert_eq!(turn["reviewed"], false, "{turn:#}");
    assert_eq!(
        change(&turn, "a.txt")["reviewed"],
        false,
        "unmarking a turn clears its files: {turn:#}"
    );
    let json_out = cli_state_json(
        &ws,
        &["review", "--turn", "2", "c.txt", "--session", "s1", "--json"],
    );
    assert_eq!(json_out["reviewed_paths"], json!(["c.txt"]), "{json_out:#}");
}

#[test]
fn marks_of_unknown_turns_paths_and_bad_bodies_are_refused() {
    let (_ws, daemon) = two_turns();
    assert_error(404, "not_found", mark(&daemon, 9, json!({"reviewed": true})));
    assert_error(
        404,
        "not_found",
        mark(&daemon, 1, json!({"reviewed": true, "path": "c.txt"})),
    );
    assert_error(400, "bad_request", mark(&daemon, 1, json!({})));
    assert_error(
        400,
        "bad_path",
        mark(&daemon, 1, json!({"reviewed": true, "path": "../x"})),
    );
    let (status, _) = daemon.put("/v1/sessions/nobody/turns/1/review", json!({"reviewed": true}));
    assert_eq!(status, 404);
}
