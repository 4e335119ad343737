//! The timeline: `GET /v1/timeline` and `filewatchd log` put turns, undos, redos,
//! rollbacks, time rollbacks and restores in time order, mark undone turns, page, and print
//! one line per entry; `turn end` prints one line; `show` groups many paths.

use std::process::{Command, Stdio};

use crate::common::*;
use serde_json::{Value, json};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn entries(page: &Value) -> &Vec<Value> {
    page["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("a timeline without entries: {page:#}"))
}

/// Each entry as `kind` (`turn 3` for a turn), newest first.
fn kinds(page: &Value) -> Vec<String> {
    entries(page)
        .iter()
        .map(|e| match e["kind"].as_str() {
            Some("turn") => format!("turn {}", e["turn"]),
            other => other.unwrap_or("?").to_string(),
        })
        .collect()
}

fn turn(ws: &Workspace, daemon: &Daemon, session: &str, label: &str, file: &str) {
    daemon.turn_start(session, label);
    ws.write(file, format!("{label}\n"));
    daemon.turn_end(session);
}

/// Three turns; undo, redo, undo, a rollback to before turn 2, a time rollback of a file the
/// user edited outside any turn, a one-path restore, and a fourth turn.
fn every_operation(ws: &Workspace, daemon: &Daemon) {
    ws.write("notes.md", "mine\n");
    turn(ws, daemon, "s", "one", "a.txt");
    turn(ws, daemon, "s", "two", "b.txt");
    turn(ws, daemon, "s", "three", "c.txt");
    rollback_applied(daemon.undo("s", json!({})));
    rollback_applied(daemon.redo("s", json!({})));
    rollback_applied(daemon.undo("s", json!({})));
    rollback_applied(daemon.rollback("s", json!({"to": "before", "turn": 2})));
    daemon.turn_start("s", "sync");
    daemon.turn_end("s");
    let before_edit = time_mark();
    ws.write("notes.md", "edited outside any turn\n");
    daemon.turn_start("s", "sync again");
    daemon.turn_end("s");
    rollback_applied(daemon.rollback_in_time(json!({"at": before_edit})));
    let restored =
        rollback_applied(daemon.rollback("s", json!({"to": "before", "turn": 1, "paths": ["a.txt"]})));
    assert_eq!(action_paths(&restored), set(["a.txt"]), "{restored:#}");
    turn(ws, daemon, "s", "four\nwith a second line", "d.txt");
}

#[test]
fn every_operation_is_in_its_place_and_undone_turns_are_marked() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    every_operation(&ws, &daemon);

    let page = expect(200, daemon.get("/v1/timeline?session=s"));
    assert_eq!(page["order"], "newest_first");
    assert_eq!(page["next_before"], Value::Null);
    assert_eq!(
        kinds(&page),
        [
            "turn 6",
            "restore",
            "time_rollback",
            "turn 5",
            "outside",
            "turn 4",
            "rollback",
            "undo",
            "redo",
            "undo",
            "turn 3",
            "turn 2",
            "turn 1",
            "outside"
        ],
        "{page:#}"
    );
    let all = entries(&page);
    let undone: Vec<(Value, Value)> = all
        .iter()
        .filter(|e| e["kind"] == "turn")
        .map(|e| (e["turn"].clone(), e["undone"].clone()))
        .collect();
    // The time rollback went back to before turn 5 started: it took turn 5 out.
    let expected = [
        (6, false),
        (5, true),
        (4, false),
        (3, true),
        (2, true),
        (1, false),
    ];
    assert_eq!(undone, expected.map(|(t, u)| (json!(t), json!(u))), "{page:#}");

    // What each one changed.
    let counts = |i: usize| &all[i]["counts"];
    assert_eq!(all[0]["prompt"], "four", "{:#}", all[0]);
    assert_eq!(counts(0)["added"], 1);
    assert_eq!(
        (&all[1]["paths"], &counts(1)["deleted"]),
        (&json!(["a.txt"]), &json!(1))
    );
    assert_eq!(
        (&all[2]["session"], &counts(2)["modified"]),
        (&Value::Null, &json!(1))
    );
    assert_eq!(counts(4)["modified"], 1, "the edit of notes.md: {:#}", all[4]);
    assert_eq!(counts(13)["added"], 1, "notes.md written first: {:#}", all[13]);
    assert_eq!(
        all[6]["target"],
        json!({"to": "before", "turn": 2, "seq": all[11]["start_seq"]})
    );
    assert_eq!(counts(6)["deleted"], 1, "b.txt: {:#}", all[6]);
    assert_eq!(
        (&all[7]["operation"], &counts(7)["deleted"]),
        (&json!("undo"), &json!(1))
    );
    assert_eq!(
        (&all[8]["redo_of"], &counts(8)["added"]),
        (&all[9]["rollback_id"], &json!(1))
    );
    let times: Vec<&str> = all.iter().filter_map(|e| e["time"].as_str()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first: {times:?}");

    // `log` prints the same, one line each, newest first.
    let log = cli_state_text(&ws, &["log"]);
    let lines: Vec<&str> = log.lines().collect();
    let starts = [
        "turn 6  +1 ~0 -0 R0  four",
        "restore #",
        "time rollback #",
        "turn 5  +0 ~0 -0 R0  sync again  (undone)",
        "outside  1 path +0 ~1 -0  (you / an editor)",
        "turn 4  +0 ~0 -0 R0  sync",
        "rollback #",
        "undo #",
        "redo #",
        "undo #",
        "turn 3  +1 ~0 -0 R0  three  (undone)",
        "turn 2  +1 ~0 -0 R0  two  (undone)",
        "turn 1  +1 ~0 -0 R0  one",
        "outside  1 path +1 ~0 -0  (you / an editor)",
    ];
    assert_eq!(lines.len(), starts.len(), "{log}");
    for (line, start) in lines.iter().zip(starts) {
        // `2026-11-30 10:05:01+00:00  ` first (local time with its offset).
        let rest = line.get(27..).unwrap_or_default();
        assert!(rest.starts_with(start), "{start:?} in:\n{log}");
    }
    assert!(lines[1].contains("a.txt to before turn 1: +0 ~0 -1"), "{log}");
    assert!(lines[2].ends_with(": +0 ~1 -0"), "{log}");
    assert!(lines[6].contains("to before turn 2: +0 ~0 -1"), "{log}");
    let json = cli_state_json(&ws, &["log", "--json"]);
    assert_eq!(
        json["entries"], page["entries"],
        "log --json is the API's entries"
    );
}

#[test]
fn a_write_outside_any_turn_between_two_turns_is_between_them() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, "s", "one", "a.txt");
    ws.write("a.txt", "mine\n");
    ws.write("new.txt", "mine too\n");
    daemon.turn_start("s", "two");
    ws.write("b.txt", "two\n");
    daemon.turn_end("s");

    let page = expect(200, daemon.get("/v1/timeline?paths=true"));
    assert_eq!(kinds(&page), ["turn 2", "outside", "turn 1"], "{page:#}");
    let run = &entries(&page)[1];
    assert_eq!(run["session"], Value::Null);
    assert_eq!(run["paths"], 2, "{run:#}");
    assert_eq!(
        (
            &run["counts"]["added"],
            &run["counts"]["modified"],
            &run["counts"]["deleted"]
        ),
        (&json!(1), &json!(1), &json!(0)),
        "{run:#}"
    );
    let paths: Vec<&Value> = run["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| &c["path"])
        .collect();
    assert_eq!(paths, [&json!("a.txt"), &json!("new.txt")], "{run:#}");
    let older = expect(
        200,
        daemon.get(&format!(
            "/v1/timeline?limit=1&before={}",
            entries(&page)[0]["cursor"].as_str().expect("cursor")
        )),
    );
    assert_eq!(kinds(&older), ["outside"], "the cursor pages over it: {older:#}");

    let log = cli_state_text(&ws, &["log", "--all"]);
    let lines: Vec<&str> = log.lines().map(|l| l.get(27..).unwrap_or_default()).collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines[0].starts_with("turn 2"), "{log}");
    assert_eq!(lines[1], "outside  2 paths +1 ~1 -0  (you / an editor)", "{log}");
    assert!(lines[2].starts_with("turn 1"), "{log}");
}

#[test]
fn files_changed_while_the_daemon_was_stopped_are_found_at_start_up() {
    let ws = Workspace::new();
    ws.write("before.txt", "there first\n");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, "s", "one", "a.txt");
    let page = expect(200, daemon.get("/v1/timeline"));
    assert_eq!(kinds(&page), ["turn 1", "found"], "{page:#}");
    assert_eq!(entries(&page)[1]["counts"]["added"], 1, "{page:#}");
    let log = cli_state_text(&ws, &["log"]);
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.ends_with("found    1 path +1 ~0 -0  (found at start-up)"),
        "{log}"
    );
}

#[test]
fn log_takes_all_limit_since_paths_and_stat() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("alpha", "many files");
    for i in 0..30 {
        ws.write(format!("src/f{i:02}.rs"), "fn f() {}\n");
    }
    daemon.turn_end("alpha");
    let between = time_mark();
    turn(&ws, &daemon, "beta", "one file", "beta.txt");
    turn(&ws, &daemon, "beta", "another", "beta2.txt");

    // The latest session by default, every session's with --all.
    let log = cli_state_text(&ws, &["log"]);
    assert_eq!(log.lines().count(), 2, "{log}");
    let all = cli_state_text(&ws, &["log", "--all"]);
    let in_env = cli_state_with_env(&ws, &["log", "--all"], &[("FILEWATCHD_SESSION", "alpha")]);
    assert_eq!(text(&in_env.stdout), all, "--all wins over $FILEWATCHD_SESSION");
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 3, "{all}");
    assert!(lines[0].contains("turn 2 of beta  +1 ~0 -0 R0  another"), "{all}");
    assert!(
        lines[2].contains("turn 1 of alpha  +31 ~0 -0 R0  many files"), // 30 files, their directory
        "{all}"
    );

    // No paths unless asked for.
    assert!(!all.contains("src/"), "{all}");
    let paths = cli_state_text(&ws, &["log", "--all", "--paths"]);
    assert_eq!(paths.lines().count(), 3 + 31 + 1 + 1, "{paths}");
    assert!(paths.contains("\n    A src/f07.rs\n"), "{paths}");
    let stat = cli_state_text(&ws, &["log", "--session", "alpha", "--stat"]);
    assert!(stat.contains("\n    A src/f07.rs  10 B\n"), "{stat}");

    let limited = cli_state_json(&ws, &["log", "--all", "--limit", "2", "--json"]);
    assert_eq!(kinds(&limited), ["turn 2", "turn 1"], "{limited:#}");
    assert_eq!(entries(&limited)[1]["session"], "beta");
    assert!(limited["next_before"].is_string(), "{limited:#}");
    let since = cli_state_json(&ws, &["log", "--all", "--since", &between, "--json"]);
    assert_eq!(entries(&since).len(), 2, "{since:#}");
    let recent = cli_state_json(&ws, &["log", "--all", "--since", "1h", "--json"]);
    assert_eq!(entries(&recent).len(), 3, "{recent:#}");
    let none = cli_state_text(&ws, &["log", "--all", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(none, "nothing since 2999-01-01T00:00:00.000Z\n");
    let bad = cli_state(&ws, &["log", "--since", "yesterday-ish"]);
    assert_eq!(bad.status.code(), Some(2), "a usage error: {bad:?}");
}

#[test]
fn the_api_pages_through_the_timeline_with_its_cursor() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    for i in 1..=5 {
        turn(&ws, &daemon, "s", &format!("turn {i}"), &format!("f{i}.txt"));
    }
    rollback_applied(daemon.undo("s", json!({})));
    let whole = expect(200, daemon.get("/v1/timeline?session=s&limit=100"));
    assert_eq!(entries(&whole).len(), 6);

    let mut paged = Vec::new();
    let mut query = "/v1/timeline?session=s&limit=4".to_string();
    loop {
        let page = expect(200, daemon.get(&query));
        assert!(entries(&page).len() <= 4, "{page:#}");
        paged.extend(entries(&page).iter().cloned());
        let Some(next) = page["next_before"].as_str() else {
            break;
        };
        query = format!("/v1/timeline?session=s&limit=4&before={}", percent_encode(next));
    }
    assert_eq!(Value::Array(paged), whole["entries"], "two pages make the whole");
    let first = expect(200, daemon.get("/v1/timeline?limit=1"));
    assert_eq!(kinds(&first), ["undo"], "{first:#}");
    assert_eq!(first["next_before"], entries(&first)[0]["cursor"]);
    let with_paths = expect(200, daemon.get("/v1/timeline?limit=2&paths=true"));
    assert_eq!(entries(&with_paths)[0]["changes"][0]["path"], "f5.txt");
    assert_eq!(
        entries(&with_paths)[1]["changes"],
        json!([{"path": "f5.txt", "change": "added", "kind": "file", "size": 7}])
    );
    assert_eq!(
        entries(&whole)[0].get("changes"),
        None,
        "paths only when asked for"
    );

    assert_error(404, "not_found", daemon.get("/v1/timeline?session=nobody"));
    assert_error(400, "bad_request", daemon.get("/v1/timeline?before=later"));
    assert_error(400, "bad_request", daemon.get("/v1/timeline?limit=0"));
    assert_error(400, "bad_request", daemon.get("/v1/timeline?limit=many"));
    assert_error(400, "bad_request", daemon.get("/v1/timeline?sesion=s"));
    assert_error(400, "bad_request", daemon.get("/v1/timeline?limit=1001"));
    assert_error(400, "bad_time", daemon.get("/v1/timeline?since=noon"));
    assert_error(400, "bad_session", daemon.get("/v1/timeline?session=a%20b"));
}

#[test]
fn turn_end_says_one_line_and_show_groups_many_paths_with_the_totals() {
    let ws = Workspace::new();
    ws.write("docs/old.md", "old\n");
    let _daemon = Daemon::start(&ws);
    cli_state_ok(&ws, &["turn", "start", "--session", "s", "--label", "big"]);
    for i in 0..25 {
        ws.write(format!("src/f{i:02}.rs"), "fn f() {}\n");
    }
    ws.write("docs/a.md", "a\n");
    ws.write("docs/b.md", "b\n");
    ws.remove("docs/old.md");
    ws.write("top.txt", "top\n");
    ws.write("lib/only.rs", "only\n");
    let ended = cli_state_text(&ws, &["turn", "end", "--session", "s"]);
    // 29 files, 2 directories (src, lib), 1 deletion.
    assert_eq!(ended, "turn 1 of s ended: +31 ~0 -1 R0, 32 paths\n");
    let json = cli_state_json(&ws, &["show", "1", "--json"]);
    assert_eq!(changes(&json).len(), 32, "--json still lists every path");

    let shown = cli_state_text(&ws, &["show", "1"]);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        &lines[2..],
        [
            "  A top.txt  (file, 4 B)",
            "  docs/  3 paths  +2 ~0 -1 R0",
            "  lib/  2 paths  +2 ~0 -0 R0",
            "  src/  26 paths  +26 ~0 -0 R0",
            "  (32 paths in 3 directories)",
            "  (`filewatchd show 1 --session s --all` lists every path)",
            "+31 ~0 -1 R0, 32 paths",
        ],
        "{shown}"
    );
    let every = cli_state_text(&ws, &["show", "1", "--all"]);
    assert_eq!(every.lines().count(), 2 + 32 + 1, "{every}");
    assert!(every.contains("  D docs/old.md  (file)\n"), "{every}");
    assert!(every.ends_with("+31 ~0 -1 R0, 32 paths\n"), "{every}");

    // A small turn lists each path, then the totals.
    cli_state_ok(&ws, &["turn", "start", "--session", "s"]);
    ws.write("top.txt", "changed\n");
    assert_eq!(
        cli_state_text(&ws, &["turn", "end"]),
        "turn 2 of s ended: +0 ~1 -0 R0, 1 path\n"
    );
    let small = cli_state_text(&ws, &["show"]);
    assert!(
        small.ends_with("  M top.txt  (file, 8 B)\n+0 ~1 -0 R0, 1 path\n"),
        "{small}"
    );
}

#[test]
fn restore_seq_puts_one_path_back_to_a_version_history_lists() {
    let ws = Workspace::new();
    ws.write("a.txt", "indexed\n");
    ws.write("b.txt", "other\n");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, "s", "second", "a.txt");
    turn(&ws, &daemon, "s", "third", "a.txt");
    let history = daemon.history("a.txt");
    let seqs: Vec<i64> = versions(&history)
        .iter()
        .filter_map(|v| v["seq"].as_i64())
        .collect();
    assert_eq!(seqs.len(), 3, "{history:#}");

    let seq = seqs[1].to_string();
    let out = cli_state_json(&ws, &["restore", "a.txt", "--seq", &seq, "--json"]);
    assert_eq!(
        out["target"],
        json!({"to": "seq", "turn": null, "seq": seqs[1]}),
        "{out:#}"
    );
    assert_eq!(ws.read("a.txt"), b"second\n");
    // The first index's version too (recorded before the record of the workspace begins).
    let first = seqs[0].to_string();
    cli_state_ok(&ws, &["restore", "a.txt", "--seq", &first]);
    assert_eq!(ws.read("a.txt"), b"indexed\n");
    assert_eq!(ws.read("b.txt"), b"other\n");
    // It is a restore of no session: `redo --time` takes it back.
    cli_state_ok(&ws, &["redo", "--time"]);
    assert_eq!(ws.read("a.txt"), b"second\n");
    let log = cli_state_json(&ws, &["log", "--json"]);
    let restores: Vec<&Value> = entries(&log).iter().filter(|e| e["kind"] == "restore").collect();
    assert_eq!(restores.len(), 2, "{log:#}");
    assert_eq!(restores[0]["target"]["seq"], seqs[0]);

    assert_error(
        400,
        "bad_request",
        daemon.rollback_in_time(json!({"seq": seqs[1]})),
    );
    assert_error(
        400,
        "bad_request",
        daemon.rollback_in_time(json!({"seq": 1_000_000, "paths": ["a.txt"]})),
    );
    assert_error(
        400,
        "bad_request",
        daemon.rollback_in_time(json!({"seq": 1, "at": "2026-11-30T10:00:00Z", "paths": ["a.txt"]})),
    );
    // A directory as recorded while the first index ran is not known whole.
    ws.write("dir/x.txt", "x\n");
    daemon.turn_start("s", "sync");
    daemon.turn_end("s");
    assert_error(
        409,
        "before_history",
        daemon.rollback_in_time(json!({"seq": 1, "paths": ["dir"]})),
    );
}

#[test]
fn an_ignored_path_is_named_as_ignored_with_its_rule() {
    let ws = Workspace::new();
    ws.write(".gitignore", "# dependencies\nnode_modules/\n*.log\n");
    // A file a .gitignore rule names is recorded since issue 49 (docs/tracking.md, "Ignored
    // files"); this test is about what an ignore rule hides.
    ws.write(".filewatchd.toml", "[ignored_files]\nrecord = false\n");
    ws.write("node_modules/pkg/index.js", "module.exports = 1;\n");
    ws.write("a.txt", "a\n");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, "s", "write", "a.txt");
    ws.write("debug.log", "noise\n");

    let (status, body) = daemon.history_reply("node_modules/pkg/index.js");
    assert_eq!(status, 404, "{body:#}");
    let error = &body["error"];
    assert_eq!(error["code"], "ignored", "{body:#}");
    assert_eq!(
        error["message"],
        "node_modules/pkg/index.js is ignored by `node_modules/` (.gitignore line 2, which matches its directory node_modules/): ignored paths are never recorded"
    );
    assert_eq!(
        (
            &error["ignored_path"],
            &error["rule"],
            &error["source"],
            &error["line"]
        ),
        (
            &json!("node_modules"),
            &json!("node_modules/"),
            &json!(".gitignore"),
            &json!(2)
        )
    );
    let content = daemon.get_bytes("/v1/content?path=debug.log&seq=1");
    assert_eq!(content.0, 404);
    let body: Value = serde_json::from_slice(&content.1).unwrap();
    assert_eq!(
        (&body["error"]["code"], &body["error"]["rule"]),
        (&json!("ignored"), &json!("*.log"))
    );
    let (status, body) = daemon.rollback("s", json!({"to": "before", "turn": 1, "paths": ["debug.log"]}));
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("ignored")),
        "{body:#}"
    );
    // A path nothing hides and nothing recorded is not found, as before.
    assert_error(404, "not_found", daemon.history_reply("never.txt"));
    assert_error(
        404,
        "not_recorded",
        daemon.rollback("s", json!({"to": "before", "turn": 1, "paths": ["never.txt"]})),
    );

    // The CLI says the same.
    for args in [
        &["history", "node_modules/pkg/index.js"][..],
        &["restore", "node_modules/pkg/index.js", "--before", "1"],
        &["show", "node_modules/pkg/index.js", "--at", "seq:1"],
    ] {
        let out = cli_state(&ws, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("node_modules/pkg/index.js is ignored by `node_modules/` (.gitignore line 2"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn the_legend_is_in_the_help_of_log_show_and_turn() {
    let ws = Workspace::new();
    for command in ["log", "show", "turn"] {
        let help = text(&ws.cli(".", &[command, "--help"]).stdout);
        assert!(
            help.contains("+N added, ~N modified, -N deleted, RN renamed"),
            "{command}: {help}"
        );
        assert!(
            help.contains("A added, M modified, D deleted, R renamed"),
            "{command}: {help}"
        );
    }
}

/// `script` gives the command a terminal of 6 rows: `log` shows a screenful (4 entries and a
/// line saying there are more) without a pager, and with `--limit` pages through `$PAGER`.
#[test]
fn on_a_terminal_log_shows_a_screenful_and_pages_longer_output() {
    if Command::new("script").arg("--version").output().is_err() {
        skip("no `script` (util-linux) to give the command a terminal");
        return;
    }
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    for i in 1..=8 {
        turn(&ws, &daemon, "s", &format!("turn {i}"), "f.txt");
    }
    let paged = ws.state_dir().join("paged.txt");
    let run = |args: &str| {
        let line = format!(
            "stty rows 6 cols 100; {BIN} log --state-dir {} {args}",
            ws.state_dir().display()
        );
        let mut script = Command::new("script");
        script.args(["-qec", &line, "/dev/null"]);
        for var in ["FILEWATCHD_URL", "FILEWATCHD_TOKEN", "FILEWATCHD_SESSION", "LESS"] {
            script.env_remove(var);
        }
        script
            .current_dir(ws.root())
            .env("FILEWATCHD_HOME", ws.home())
            .env("NO_COLOR", "1")
            .env("PAGER", format!("cat > {}", paged.display()))
            .stdin(Stdio::null());
        let out = run_to_completion(script);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).replace('\r', "")
    };
    let screen = run("");
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines.len(), 5, "{screen}");
    assert!(lines[0].contains("turn 8"), "{screen}");
    assert_eq!(lines[4], "(older entries: --limit N shows more)", "{screen}");
    assert!(!paged.exists(), "a screenful needs no pager");

    let out = run("--limit 8");
    assert_eq!(out, "", "the pager had it");
    let through = std::fs::read_to_string(&paged).unwrap();
    assert_eq!(through.lines().count(), 8, "{through}");
    assert!(
        through.lines().last().is_some_and(|l| l.contains("turn 1")),
        "{through}"
    );
}
