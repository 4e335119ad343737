//! Per-path history and content, single-path restore, and time rollback (docs/api.md,
//! docs/cli.md): `history` lists every version with its origin; `show PATH --at` and `GET /v1/content`
//! give back exactly what a path held at a boundary, a sequence number or a time; `restore`
//! puts back one path and nothing else, conflict-checked; `rollback --at` sets the whole tree
//! to its recorded state at a time, and `redo --time` returns.

use crate::common::*;
use serde_json::{Value, json};

/// Binary content with bytes that are not valid UTF-8, a NUL and no final newline.
fn binary(version: u8) -> Vec<u8> {
    let mut bytes = vec![0xff, 0xfe, 0x00, version, b'\n', 0x80, 0xc3];
    bytes.extend(std::iter::repeat_n(version, 300));
    bytes.extend_from_slice(b"tail\r\nno newline");
    bytes
}

#[track_caller]
fn time_of(version: &Value) -> std::time::SystemTime {
    let text = version["time"]
        .as_str()
        .unwrap_or_else(|| panic!("version without time: {version}"));
    humantime::parse_rfc3339_weak(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// `history` lists every version of a path, in order, each with seq, time, origin,
/// session/turn, kind, size and hash: found at start-up, written outside any turn, in two turns
/// (one deletes it), and put back by a rollback.
#[test]
fn history_lists_every_version_with_its_origin() {
    let ws = Workspace::new();
    ws.write("note.txt", "v0 before the daemon\n");
    let daemon = Daemon::start(&ws);

    ws.write("note.txt", "v1 from an editor\n");
    daemon.turn_start("s1", "t1"); // barrier: v1 is recorded before the turn starts
    ws.write("note.txt", "v2 by turn 1\n");
    ws.sh("chmod +x note.txt");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "t2");
    ws.remove("note.txt");
    daemon.turn_end("s1");
    rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(ws.read("note.txt"), b"v2 by turn 1\n");

    let history = daemon.history("note.txt");
    assert_eq!(history["path"], "note.txt", "{history:#}");
    let all = versions(&history);
    let summary: Vec<(String, String, Value, Value)> = all
        .iter()
        .map(|v| {
            (
                v["origin"].as_str().unwrap_or("?").to_string(),
                v["kind"].as_str().unwrap_or("?").to_string(),
                v["session"].clone(),
                v["turn"].clone(),
            )
        })
        .collect();
    let s = |text: &str| text.to_string();
    // Turn 1 writes the content and then sets the executable bit: one or two versions.
    let expected_with = |turn1: usize| {
        let mut out = vec![
            (s("offline"), s("file"), Value::Null, Value::Null),
            (s("outside"), s("file"), Value::Null, Value::Null),
        ];
        out.extend(std::iter::repeat_n(
            (s("turn"), s("file"), json!("s1"), json!(1)),
            turn1,
        ));
        out.push((s("turn"), s("absent"), json!("s1"), json!(2)));
        out.push((s("rollback"), s("file"), Value::Null, Value::Null));
        out
    };
    assert!(
        summary == expected_with(1) || summary == expected_with(2),
        "versions (origin, kind, session, turn): {summary:#?}"
    );

    for pair in all.windows(2) {
        assert!(
            pair[0]["seq"].as_u64() < pair[1]["seq"].as_u64(),
            "seq order: {history:#}"
        );
        assert!(time_of(&pair[0]) <= time_of(&pair[1]), "time order: {history:#}");
    }
    let first = &all[0];
    let v1 = &all[1];
    let last_of_turn1 = &all[all.len() - 3];
    let rollback = &all[all.len() - 1];
    for (version, bytes, exec) in [
        (first, &b"v0 before the daemon\n"[..], false),
        (v1, b"v1 from an editor\n", false),
        (last_of_turn1, b"v2 by turn 1\n", true),
        (rollback, b"v2 by turn 1\n", true),
    ] {
        assert_eq!(version["size"], bytes.len(), "{version}");
        assert_eq!(version["hash"], blake3_hex(bytes), "{version}");
        assert_eq!(version["executable"], exec, "{version}");
    }

    // The CLI: --json is the API's answer; the text names every version.
    let printed = cli_state_json(&ws, &["history", "note.txt", "--json"]);
    assert_eq!(printed, history, "`history --json` differs from GET /v1/history");
    let text = cli_state_text(&ws, &["history", "note.txt"]);
    for v in all {
        let seq = v["seq"].to_string();
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next().map(|w| w.trim_start_matches('#')) == Some(seq.as_str()))
            .unwrap_or_else(|| panic!("no line for seq {seq}:\n{text}"));
        let origin = v["origin"].as_str().unwrap();
        assert!(
            line.contains(origin),
            "the line of seq {seq} lacks {origin}:\n{text}"
        );
    }

    assert_error(404, "not_found", daemon.history_reply("never-there.txt"));
    assert_error(400, "bad_path", daemon.history_reply("../outside.txt"));
}

/// `show PATH --at before:N | after:N | seq:S | TIME` prints exactly the bytes the path held
/// then, the same as `GET /v1/content`; a path that did not exist then is a 404 (exit 1).
#[test]
fn show_at_prints_exactly_the_old_content() {
    let ws = Workspace::new();
    ws.write("data.bin", binary(0));
    ws.write("other.txt", "other\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "t1");
    ws.write("data.bin", binary(1));
    daemon.turn_end("s1");
    let between = time_mark();
    daemon.turn_start("s1", "t2");
    ws.write("data.bin", binary(2));
    ws.write("born.txt", "born in turn 2\n");
    ws.write("other.txt", "other 2\n");
    daemon.turn_end("s1");

    let show = |at: &str| cli_state_ok(&ws, &["show", "data.bin", "--at", at, "--session", "s1"]);
    let content = |query: &str| {
        let (status, bytes) = daemon.get_bytes(&format!("/v1/content?path=data.bin&{query}"));
        assert_eq!(status, 200, "{query}: {}", String::from_utf8_lossy(&bytes));
        bytes
    };
    for (at, query, want) in [
        ("before:1", "session=s1&before=1", binary(0)),
        ("after:1", "session=s1&after=1", binary(1)),
        ("before:2", "session=s1&before=2", binary(1)),
        ("after:2", "session=s1&after=2", binary(2)),
    ] {
        let shown = show(at);
        assert!(
            shown == want,
            "show --at {at}: wrong bytes: {:?}",
            String::from_utf8_lossy(&shown)
        );
        assert!(content(query) == want, "GET /v1/content?{query}: wrong bytes");
    }
    // The only session is the default.
    let out = cli_state_ok(&ws, &["show", "data.bin", "--at", "before:1"]);
    assert!(out == binary(0), "show --at before:1 without --session");

    // Every recorded version by its seq.
    let history = daemon.history("data.bin");
    let seqs: Vec<u64> = versions(&history)
        .iter()
        .map(|v| v["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs.len(), 3, "{history:#}");
    for (seq, n) in seqs.iter().zip(0u8..) {
        assert!(show(&format!("seq:{seq}")) == binary(n), "show --at seq:{seq}");
        assert!(content(&format!("seq={seq}")) == binary(n), "content seq={seq}");
    }
    // A duration ago: 0s is now, the latest content.
    assert!(show("0s") == binary(2), "show --at 0s");
    // By time: between the turns, the content of turn 1.
    assert!(show(&between) == binary(1), "show --at {between}");
    assert!(
        content(&format!("at={}", percent_encode(&between))) == binary(1),
        "content at={between}"
    );

    // born.txt did not exist before turn 2: 404 JSON, and the CLI fails.
    let (status, body) = daemon.get_bytes("/v1/content?path=born.txt&session=s1&before=2");
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
    let error: Value = serde_json::from_slice(&body).expect("a JSON error");
    assert_eq!(error["error"]["code"], "not_found", "{error:#}");
    let (status, bytes) = daemon.get_bytes("/v1/content?path=born.txt&session=s1&after=2");
    assert_eq!((status, bytes), (200, b"born in turn 2\n".to_vec()));
    let out = cli_state(&ws, &["show", "born.txt", "--at", "before:2", "--session", "s1"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "content printed for a path that did not exist"
    );
    let (status, _) = daemon.get_bytes("/v1/content?path=data.bin&session=s1&before=7");
    assert_eq!(status, 404, "unknown turn");
}

/// `restore PATH --before N` puts back that path only: every other file keeps its content and
/// is not even rewritten; `--dry-run` changes nothing; a path someone else changed since is
/// refused (exit 3, disk unchanged) unless `--force`.
#[test]
fn restore_puts_back_one_path_and_nothing_else() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("b.txt", "b0\n");
    ws.write("c/d.txt", "d0\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "t1");
    let t0 = time_mark();
    ws.sh("echo a1 > a.txt && echo b1 > b.txt && echo d1 > c/d.txt && echo n > n.txt");
    daemon.turn_end("s1");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    let plan = cli_state_json(
        &ws,
        &[
            "restore",
            "a.txt",
            "--before",
            "1",
            "--session",
            "s1",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(plan["dry_run"], true, "{plan:#}");
    assert_eq!(action_paths(&plan), set(["a.txt"]), "{plan:#}");
    assert_tree_eq(&tree, &snapshot(ws.root()), "after restore --dry-run");
    assert_eq!(marks(ws.root()), stat, "restore --dry-run rewrote files");

    let answer = cli_state_json(
        &ws,
        &["restore", "a.txt", "--before", "1", "--session", "s1", "--json"],
    );
    assert_eq!(action_paths(&answer), set(["a.txt"]), "{answer:#}");
    let mut want = tree.clone();
    want.insert(
        "a.txt".into(),
        Entry::File {
            bytes: b"a0\n".to_vec(),
            exec: false,
        },
    );
    assert_tree_eq(&want, &snapshot(ws.root()), "after restoring a.txt");
    let now = marks(ws.root());
    for path in ["b.txt", "c/d.txt", "n.txt"] {
        assert_eq!(
            now[path], stat[path],
            "{path} was rewritten by the restore of a.txt"
        );
    }

    // A path created by the turn: restoring it to before the turn removes it (the only
    // session is the default).
    let stat = marks(ws.root());
    cli_state_ok(&ws, &["restore", "n.txt", "--before", "1"]);
    want.remove("n.txt");
    assert_tree_eq(&want, &snapshot(ws.root()), "after restoring n.txt");
    let now = marks(ws.root());
    for path in ["a.txt", "b.txt", "c/d.txt"] {
        assert_eq!(
            now[path], stat[path],
            "{path} was rewritten by the restore of n.txt"
        );
    }

    // Someone edits b.txt after the turn: restoring it is refused and changes nothing.
    ws.write("b.txt", "edited by the user\n");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));
    let out = cli_state(
        &ws,
        &["restore", "b.txt", "--before", "1", "--session", "s1", "--json"],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let refused: Value = serde_json::from_slice(&out.stdout).expect("the refused plan as JSON");
    assert_eq!(listed_paths(&refused, "conflicts"), set(["b.txt"]), "{refused:#}");
    assert_tree_eq(&tree, &snapshot(ws.root()), "after a refused restore");
    assert_eq!(marks(ws.root()), stat, "a refused restore rewrote files");

    // --force restores it; the user's edit stays in history.
    cli_state_ok(
        &ws,
        &["restore", "b.txt", "--before", "1", "--session", "s1", "--force"],
    );
    assert_eq!(ws.read("b.txt"), b"b0\n");
    assert_eq!(ws.read("c/d.txt"), b"d1\n");
    let history = daemon.history("b.txt");
    assert!(
        versions(&history)
            .iter()
            .any(|v| v["hash"] == blake3_hex(b"edited by the user\n") && v["origin"] == "outside"),
        "{history:#}"
    );

    // By time, no session needed: c/d.txt as it was when turn 1 started; nothing else moves.
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));
    cli_state_ok(&ws, &["restore", "c/d.txt", "--at", &t0]);
    let mut want = tree.clone();
    want.insert(
        "c/d.txt".into(),
        Entry::File {
            bytes: b"d0\n".to_vec(),
            exec: false,
        },
    );
    assert_tree_eq(&want, &snapshot(ws.root()), "after restore c/d.txt --at t0");
    let now = marks(ws.root());
    for path in ["a.txt", "b.txt"] {
        assert_eq!(
            now[path], stat[path],
            "{path} was rewritten by the restore of c/d.txt"
        );
    }
}

/// `rollback --at TIME` (no session) sets the whole tree to what was recorded at that time,
/// whoever made the changes since (sessions, the user: no conflict, the disk matches the
/// record), exactly; `redo --time` returns; `POST /v1/rollback` and `/v1/redo` do the same.
#[test]
fn time_rollback_restores_the_tree_at_that_time_and_redo_returns() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("gone.txt", "gone\n");
    ws.write("run.sh", "#!/bin/sh\n");
    ws.write("dir/keep.txt", "keep\n");
    ws.sh("ln -s a.txt link");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("alpha", "barrier");
    daemon.turn_end("alpha");
    let s0 = snapshot(ws.root());
    let t0 = time_mark();

    daemon.turn_start("alpha", "t1");
    ws.sh("echo a1 > a.txt && rm gone.txt && chmod +x run.sh && mkdir -p new/deep && echo n > new/deep/n.txt && ln -sfn run.sh link");
    daemon.turn_end("alpha");
    let s1 = snapshot(ws.root());
    let t1 = time_mark();

    daemon.turn_start("beta", "t1 of beta");
    ws.sh("echo beta > a.txt && mv dir/keep.txt kept.txt && rm -rf new");
    daemon.turn_end("beta");
    ws.write("user.txt", "the user's file\n");
    daemon.turn_start("alpha", "t2");
    ws.write("b.txt", "b\n");
    daemon.turn_end("alpha");
    let s2 = snapshot(ws.root());

    // A dry run through the API: the plan, no conflict, nothing changed.
    let stat = marks(ws.root());
    let plan = expect(200, daemon.rollback_in_time(json!({"at": t1, "dry_run": true})));
    assert_eq!(plan["dry_run"], true, "{plan:#}");
    assert_eq!(plan["conflicts"], json!([]), "{plan:#}");
    assert!(action_paths(&plan).contains("user.txt"), "{plan:#}");
    assert_tree_eq(&s2, &snapshot(ws.root()), "after a time-rollback dry run");
    assert_eq!(marks(ws.root()), stat, "a dry run rewrote files");

    // The CLI, no session: the tree at t1, exactly.
    cli_state_ok(&ws, &["rollback", "--at", &t1]);
    assert_tree_eq(&s1, &snapshot(ws.root()), "after rollback --at t1");
    let a = latest(&daemon.history("a.txt")).clone();
    assert_eq!(a["origin"], "rollback", "{a}");

    // redo --time: back to the tree before the time rollback.
    cli_state_ok(&ws, &["redo", "--time"]);
    assert_tree_eq(&s2, &snapshot(ws.root()), "after redo --time");

    // The API: back to t0, and /v1/redo returns.
    let answer = rollback_applied(daemon.rollback_in_time(json!({"at": t0})));
    assert_eq!(answer["target"]["to"], "time", "{answer:#}");
    assert_tree_eq(&s0, &snapshot(ws.root()), "after POST /v1/rollback at t0");
    rollback_applied(daemon.redo_in_time(json!({})));
    assert_tree_eq(&s2, &snapshot(ws.root()), "after POST /v1/redo");

    // The chain of time redos is exhausted; a bad time is refused and changes nothing.
    assert_error(409, "nothing_to_redo", daemon.redo_in_time(json!({})));
    let out = cli_state(&ws, &["rollback", "--at", "not a time"]);
    assert_ne!(out.status.code(), Some(0), "a bad time was accepted");
    assert_tree_eq(&s2, &snapshot(ws.root()), "after a refused time rollback");
}

/// The same instant written with a UTC offset (RFC 3339 allows `+01:00`, `-05:00`) names the
/// same recorded state as with `Z`: for content, for `show --at` and for a time rollback.
#[test]
fn a_time_with_a_utc_offset_names_the_same_instant() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    let t0 = time_mark();
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");

    // t0 as local time in UTC+01:00 and in UTC-05:00, with the offset said.
    let instant = humantime::parse_rfc3339_weak(&t0).unwrap();
    let with_offset = |shift_secs: i64, offset: &str| {
        let local = if shift_secs >= 0 {
            instant + std::time::Duration::from_secs(shift_secs as u64)
        } else {
            instant - std::time::Duration::from_secs((-shift_secs) as u64)
        };
        let text = humantime::format_rfc3339_millis(local).to_string();
        format!("{}{offset}", text.trim_end_matches('Z'))
    };
    let plus_one = with_offset(3600, "+01:00");
    let minus_five = with_offset(-5 * 3600, "-05:00");

    let (status, bytes) = daemon.get_bytes(&format!("/v1/content?path=a.txt&at={}", percent_encode(&t0)));
    assert_eq!((status, bytes), (200, b"a0\n".to_vec()), "content at {t0}");
    for at in [&plus_one, &minus_five] {
        let (status, bytes) = daemon.get_bytes(&format!("/v1/content?path=a.txt&at={}", percent_encode(at)));
        assert_eq!(
            (status, String::from_utf8_lossy(&bytes).into_owned()),
            (200, "a0\n".to_string()),
            "GET /v1/content at={at} (the instant {t0})"
        );
        let plan = expect(200, daemon.rollback_in_time(json!({"at": at, "dry_run": true})));
        assert_eq!(
            action_paths(&plan),
            set(["a.txt"]),
            "a time rollback to {at} (the instant {t0}): {plan:#}"
        );
    }
    let shown = cli_state_ok(&ws, &["show", "a.txt", "--at", &plus_one]);
    assert_eq!(String::from_utf8_lossy(&shown), "a0\n", "show --at {plus_one}");
}

/// The CLI's account of a time rollback says which time it went back to (not a turn).
#[test]
fn cli_time_rollback_output_names_the_time() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    let t0 = time_mark();
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");

    let text = cli_state_text(&ws, &["rollback", "--at", &t0, "--dry-run"]);
    assert!(
        text.contains(&t0) && !text.contains("null"),
        "`rollback --at {t0} --dry-run` does not say where it goes:\n{text}"
    );
    assert!(text.contains("a.txt"), "{text}");
    cli_state_ok(&ws, &["rollback", "--at", &t0]);
    assert_eq!(ws.read("a.txt"), b"a0\n");
    let text = cli_state_text(&ws, &["redo", "--time"]);
    assert!(!text.contains("null"), "`redo --time` output:\n{text}");
    assert!(
        text.contains("back to the state before the latest time rollback"),
        "`redo --time` output:\n{text}"
    );
    assert_eq!(ws.read("a.txt"), b"a1\n");
}

/// Before the first index finished nothing is known of the workspace: a time then is refused,
/// not taken for an empty workspace (which would delete every file).
#[test]
fn a_time_before_the_first_index_is_refused_not_taken_for_an_empty_workspace() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("src/lib.rs", "lib\n");
    let before = time_mark();
    let daemon = Daemon::start(&ws);
    let tree = snapshot(ws.root());

    for dry_run in [true, false] {
        let (status, body) = daemon.rollback_in_time(json!({"at": before, "dry_run": dry_run}));
        assert_error(409, "before_history", (status, body.clone()));
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("history begins at"), "{message}");
    }
    let path = format!("/v1/content?path=a.txt&at={}", percent_encode(&before));
    assert_eq!(daemon.get_bytes(&path).0, 409, "content at {before}");
    let out = cli_state(&ws, &["restore", "a.txt", "--ago", "1h"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "restore --ago 1h before the first index"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("when filewatchd first indexed it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_tree_eq(&tree, &snapshot(ws.root()), "after refused time rollbacks");

    // The first index's own state is a valid time: nothing to change.
    daemon.turn_start("s", "barrier");
    daemon.turn_end("s");
    let indexed = time_mark();
    let plan = expect(
        200,
        daemon.rollback_in_time(json!({"at": indexed, "dry_run": true})),
    );
    assert_eq!(plan["actions"], json!([]), "{plan:#}");
}

/// History and content pass the barrier: a write made just before the request is in the answer.
#[test]
fn history_and_content_see_a_write_made_just_before_the_request() {
    let ws = Workspace::new();
    ws.write("a.txt", "v0\n");
    let daemon = Daemon::start(&ws);
    for n in 1..=5 {
        let text = format!("v{n}\n");
        ws.write("a.txt", &text);
        let history = daemon.history("a.txt");
        assert_eq!(latest(&history)["size"], text.len(), "{history:#}");
        ws.write("a.txt", format!("w{n}\n"));
        let (status, bytes) = daemon.get_bytes("/v1/content?path=a.txt");
        assert_eq!((status, bytes), (200, format!("w{n}\n").into_bytes()));
    }
}

/// An index made before the start of its record was kept (an older filewatchd) gets it at
/// the end of its first index, even when everything was deleted since: the time before the
/// deletion can still be rolled back to.
#[test]
fn an_index_without_the_mark_of_its_first_index_gets_it_at_restart() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    ws.write("src/b.txt", "b\n");
    let before = time_mark();
    let daemon = Daemon::start(&ws);
    let indexed = time_mark();
    ws.sh("rm -r a.txt src");
    daemon.turn_start("s", "barrier");
    daemon.turn_end("s");
    daemon.stop();
    let db = ws.state_dir().join("index.sqlite");
    let conn = rusqlite::Connection::open(&db).expect("open the index");
    let removed = conn
        .execute("DELETE FROM meta WHERE key = 'history_begins'", [])
        .expect("remove the mark");
    assert_eq!(removed, 1, "the first start marked where the record begins");
    drop(conn);

    let daemon = Daemon::start(&ws);
    let plan = expect(
        200,
        daemon.rollback_in_time(json!({"at": indexed, "dry_run": true})),
    );
    assert_eq!(
        action_paths(&plan),
        set(["a.txt", "src", "src/b.txt"]),
        "{plan:#}"
    );
    assert_error(
        409,
        "before_history",
        daemon.rollback_in_time(json!({"at": before, "dry_run": true})),
    );
}
