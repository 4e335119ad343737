//! Blame: `GET /v1/blame` and `filewatchd blame` attribute each line of a text
//! version to the version that introduced it: a turn (with its prompt) whatever wrote it in
//! the turn (a shell's `sed -i`, `echo >>`), an outside edit, a file found at start-up, a
//! write while two sessions had turns open; an older version by `seq` or `at`; a recreated
//! file starts over.

use crate::common::*;
use serde_json::{Value, json};

#[track_caller]
fn blame(daemon: &Daemon, query: &str) -> Value {
    expect(200, daemon.get(&format!("/v1/blame?{query}")))
}

/// Each line as (text, origin, session, turn, prompt).
fn attributed(answer: &Value) -> Vec<(String, String, Value, Value, Value)> {
    let lines = answer["lines"].as_array().cloned().unwrap_or_default();
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            assert_eq!(l["line"], json!(i + 1), "{answer:#}");
            (
                l["text"].as_str().unwrap_or("?").to_string(),
                l["origin"].as_str().unwrap_or("?").to_string(),
                l["session"].clone(),
                l["turn"].clone(),
                l["prompt"].clone(),
            )
        })
        .collect()
}

fn line(
    text: &str,
    origin: &str,
    session: Value,
    turn: Value,
    prompt: Value,
) -> (String, String, Value, Value, Value) {
    (text.to_string(), origin.to_string(), session, turn, prompt)
}

/// A file found at start-up, edited outside any turn, then by two turns through the shell:
/// each line names the turn and its prompt's first line, or `outside` / `offline`.
#[test]
fn each_line_names_the_turn_or_origin_that_wrote_it() {
    let ws = Workspace::new();
    ws.write("notes.txt", "found\nold\n");
    let daemon = Daemon::start(&ws);
    ws.write("notes.txt", "found\nold\nby the editor\n");
    daemon.turn_start("s1", "fix the old line\nwith details below");
    ws.sh("sed -i 's/^old$/new/' notes.txt");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "append a line");
    ws.sh("echo appended >> notes.txt");
    daemon.turn_end("s1");

    let answer = blame(&daemon, "path=notes.txt");
    assert_eq!(
        (answer["binary"].clone(), answer["too_large"].clone()),
        (json!(false), json!(false))
    );
    let (s1, none) = (json!("s1"), Value::Null);
    assert_eq!(
        attributed(&answer),
        vec![
            line("found", "offline", none.clone(), none.clone(), none.clone()),
            line("new", "turn", s1.clone(), json!(1), json!("fix the old line")),
            line(
                "by the editor",
                "outside",
                none.clone(),
                none.clone(),
                none.clone()
            ),
            line("appended", "turn", s1, json!(2), json!("append a line")),
        ],
        "{answer:#}"
    );
    let history = daemon.history("notes.txt");
    let latest = history["versions"]
        .as_array()
        .and_then(|v| v.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        answer["seq"], latest["seq"],
        "the latest version is the one blamed"
    );

    let text = String::from_utf8_lossy(&cli_state_ok(&ws, &["blame", "notes.txt"])).into_owned();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert!(
        rows[1].contains("s1#1") && rows[1].contains("fix the old line") && rows[1].ends_with("| new"),
        "{text}"
    );
    assert!(
        rows[2].contains("outside") && rows[2].ends_with("| by the editor"),
        "{text}"
    );
    assert!(rows[0].contains("offline") && rows[3].contains("s1#2"), "{text}");
}

/// `seq` and `at` blame an older version; the CLI's `--seq` too.
#[test]
fn an_older_version_is_blamed_by_seq_or_time() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "first");
    ws.write("a.txt", "one\n");
    daemon.turn_end("s1");
    let between = time_mark();
    daemon.turn_start("s1", "second");
    ws.write("a.txt", "one\ntwo\n");
    daemon.turn_end("s1");
    let history = daemon.history("a.txt");
    let first = history["versions"][0]["seq"].clone();

    let old = blame(&daemon, &format!("path=a.txt&seq={first}"));
    assert_eq!(old["seq"], first, "{old:#}");
    assert_eq!(
        attributed(&old),
        vec![line("one", "turn", json!("s1"), json!(1), json!("first"))]
    );
    let at = blame(&daemon, &format!("path=a.txt&at={}", percent_encode(&between)));
    assert_eq!(at["seq"], first, "{at:#}");
    assert_eq!(
        blame(&daemon, "path=a.txt")["lines"].as_array().map(Vec::len),
        Some(2)
    );

    let text = String::from_utf8_lossy(&cli_state_ok(
        &ws,
        &["blame", "a.txt", "--seq", &first.to_string()],
    ))
    .into_owned();
    assert_eq!(text.lines().count(), 1, "{text}");
    let json_out = cli_state_json(&ws, &["blame", "a.txt", "--json"]);
    assert_eq!(json_out["lines"][1]["turn"], 2, "{json_out:#}");
}

/// Deleted and made again, a file's lines are all the new file's; two sessions' open turns
/// make a line `ambiguous`.
#[test]
fn a_recreated_file_starts_over_and_concurrent_turns_are_ambiguous() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "make it");
    ws.write("f.txt", "same\n");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "delete it");
    ws.remove("f.txt");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "again");
    daemon.turn_start("s2", "meanwhile");
    ws.write("f.txt", "same\n");
    daemon.turn_end("s1");
    daemon.turn_end("s2");
    let answer = blame(&daemon, "path=f.txt");
    let lines = answer["lines"].as_array().cloned().unwrap_or_default();
    assert_eq!(lines.len(), 1, "{answer:#}");
    assert_eq!(lines[0]["origin"], "ambiguous", "{answer:#}");
    assert_ne!(
        lines[0]["turn"], 1,
        "the deleted file's turn is not blamed: {answer:#}"
    );
}

/// A binary version has no lines; an unknown path is 404 `not_found`, an ignored one 404
/// `ignored`; a path deleted at the point asked is 404 too.
#[test]
fn binary_unknown_and_ignored_paths() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.log\n");
    // Files a .gitignore rule names are recorded since issue 49 (docs/tracking.md, "Ignored
    // files"); here `*.log` stands for what is not recorded.
    ws.write(".filewatchd.toml", "[ignored_files]\nrecord = false\n");
    let daemon = Daemon::start(&ws);
    ws.write("blob.bin", [0u8, 159, 146, 150, 0, 1]);
    ws.write("gone.txt", "x\n");
    ws.write("app.log", "y\n");
    daemon.turn_start("s1", "remove");
    ws.remove("gone.txt");
    daemon.turn_end("s1");

    let answer = blame(&daemon, "path=blob.bin");
    assert_eq!(answer["binary"], true, "{answer:#}");
    assert_eq!(answer["lines"], json!([]), "{answer:#}");
    assert_error(404, "not_found", daemon.get("/v1/blame?path=never.txt"));
    assert_error(404, "not_found", daemon.get("/v1/blame?path=gone.txt"));
    assert_error(404, "ignored", daemon.get("/v1/blame?path=app.log"));
    assert_error(400, "bad_path", daemon.get("/v1/blame"));
    let out = cli_state(&ws, &["blame", "never.txt"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("filewatchd history PATH"), "{stderr}");
}

/// Each line as (text, session#turn or origin, prompt).
fn credited(answer: &Value) -> Vec<(String, String, String)> {
    attributed(answer)
        .into_iter()
        .map(|(text, origin, session, turn, prompt)| {
            let by = match (session.as_str(), turn.as_i64()) {
                (Some(s), Some(t)) => format!("{s}#{t}"),
                _ => origin,
            };
            (text, by, prompt.as_str().unwrap_or_default().to_string())
        })
        .collect()
}

fn credit(text: &str, by: &str, prompt: &str) -> (String, String, String) {
    (text.into(), by.into(), prompt.into())
}

/// Three turns, each adding a line to `a.txt` (the first writing `b.txt` too, the third
/// changing it).
fn three_turns() -> (Workspace, Daemon) {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    for (n, prompt) in ["write one", "add two", "add three"].iter().enumerate() {
        daemon.turn_start("s1", prompt);
        let lines: String = (1..=n + 1).map(|i| format!("line {i}\n")).collect();
        ws.write("a.txt", lines);
        if n != 1 {
            ws.write("b.txt", format!("b by turn {}\n", n + 1));
        }
        daemon.turn_end("s1");
    }
    (ws, daemon)
}

/// A redo brings back a turn's own content: blame names that turn and its prompt, not the
/// rollback (the API and the CLI); the undo before it gives the earlier turns' lines back too.
#[test]
fn after_undo_and_redo_each_line_names_the_turn_that_wrote_it() {
    let (ws, daemon) = three_turns();
    let written = vec![
        credit("line 1", "s1#1", "write one"),
        credit("line 2", "s1#2", "add two"),
        credit("line 3", "s1#3", "add three"),
    ];
    rollback_applied(daemon.undo("s1", json!({})));
    let undone = blame(&daemon, "path=a.txt");
    assert_eq!(credited(&undone), written[..2].to_vec(), "{undone:#}");
    rollback_applied(daemon.redo("s1", json!({})));
    let redone = blame(&daemon, "path=a.txt");
    assert_eq!(credited(&redone), written, "{redone:#}");
    let history = daemon.history("a.txt");
    assert_eq!(latest(&history)["origin"], "rollback", "{history:#}");
    assert_ne!(redone["lines"][2]["seq"], latest(&history)["seq"], "{redone:#}");

    let text = String::from_utf8_lossy(&cli_state_ok(&ws, &["blame", "a.txt"])).into_owned();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[2].contains("s1#3") && rows[2].contains("add three") && !rows[2].contains("rollback"),
        "{text}"
    );
}

/// The redo of a rollback of several turns gives each line back to its own turn; a redo
/// restricted to one path does so for that path, and the other keeps the lines of the state
/// the rollback brought back (the turn that wrote them).
#[test]
fn a_redo_of_several_turns_and_a_partial_redo_credit_each_line_to_its_turn() {
    let (_ws, daemon) = three_turns();
    rollback_applied(daemon.rollback("s1", json!({"to": "before", "turn": 2})));
    assert_eq!(
        credited(&blame(&daemon, "path=a.txt")),
        vec![credit("line 1", "s1#1", "write one")]
    );
    rollback_applied(daemon.redo("s1", json!({"paths": ["a.txt"]})));
    let a = blame(&daemon, "path=a.txt");
    assert_eq!(
        credited(&a),
        vec![
            credit("line 1", "s1#1", "write one"),
            credit("line 2", "s1#2", "add two"),
            credit("line 3", "s1#3", "add three"),
        ],
        "{a:#}"
    );
    let b = blame(&daemon, "path=b.txt");
    assert_eq!(
        credited(&b),
        vec![credit("b by turn 1", "s1#1", "write one")],
        "{b:#}"
    );
}

/// A file a turn deleted and an undo brought back keeps the lines of the turn that wrote it.
#[test]
fn an_undone_deletion_keeps_the_lines_of_the_turn_that_wrote_them() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "make it");
    ws.write("f.txt", "kept\n");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "delete it");
    ws.remove("f.txt");
    daemon.turn_end("s1");
    rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(ws.read("f.txt"), b"kept\n");
    assert_eq!(
        credited(&blame(&daemon, "path=f.txt")),
        vec![credit("kept", "s1#1", "make it")]
    );
}
