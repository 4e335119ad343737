//! Pins (docs/guarantees.md, "Words"): named points of the history, made at the end of a turn, at a
//! time or now; listed, refused when the name is taken or the point is bad, removed; a
//! rollback to one (`rollback --pin`, `POST /v1/rollback` with `pin`) sets the workspace
//! exactly to its state and marks the turns it took out undone until its redo (as a rollback
//! to a time does), and retention keeps every version a pin needs until it is unpinned.

use crate::common::*;
use serde_json::{Value, json};

/// A tree with files, an executable, a symlink and a directory.
fn seed(ws: &Workspace, config: &str) {
    ws.write(".filewatchd.toml", config);
    ws.write("keep.txt", "never changes\n");
    ws.write("m.txt", noise(1, 4096));
    ws.write("doc/a.md", "a\n");
    ws.write("run.sh", "#!/bin/sh\necho run\n");
    ws.sh("ln -s keep.txt link");
}

/// Turn `i` of s1: rewrites `m.txt`, adds `add/{i}.txt`, and now and then deletes, chmods or
/// retargets, so the workspace at a pin differs from the one after it in every way.
fn turn(ws: &Workspace, daemon: &Daemon, i: u64) {
    daemon.turn_start("s1", &format!("turn {i}"));
    ws.write("m.txt", noise(10 + i, 4096));
    ws.write(format!("add/{i}.txt"), noise(100 + i, 1024));
    match i {
        2 => {
            ws.remove("doc/a.md");
            ws.sh("chmod +x run.sh && ln -sfn m.txt link");
        }
        3 => ws.sh("rmdir doc && mkdir -p new/deep && echo x > new/deep/x.txt"),
        _ => {}
    }
    daemon.turn_end("s1");
}

fn seq_of(value: &Value) -> i64 {
    value["seq"]
        .as_i64()
        .unwrap_or_else(|| panic!("no seq: {value:#}"))
}

#[test]
fn pins_at_a_turn_at_a_time_and_now_are_listed_and_refused_when_bad() {
    let ws = Workspace::new();
    seed(&ws, "");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, 1);
    let between = time_mark();
    turn(&ws, &daemon, 2);
    let turns = daemon.turn_list("s1");
    let end_of = |n: usize| turns[n - 1]["end_seq"].as_i64().unwrap();

    let at_turn = expect(201, daemon.pin(json!({"name": "t1", "session": "s1", "turn": 1})));
    assert_eq!(
        (seq_of(&at_turn), &at_turn["session"], &at_turn["turn"]),
        (end_of(1), &json!("s1"), &json!(1))
    );
    let at_time = expect(201, daemon.pin(json!({"name": "mid", "at": between})));
    assert_eq!(
        seq_of(&at_time),
        end_of(1),
        "nothing was recorded between turn 1 and the mark: {at_time:#}"
    );
    assert_eq!(at_time["session"], Value::Null, "{at_time:#}");
    let now = expect(201, daemon.pin(json!({"name": "now"})));
    assert_eq!(
        seq_of(&now),
        daemon.status()["latest_seq"].as_i64().unwrap(),
        "{now:#}"
    );
    assert!(now["created_at"].is_string() && now["at"].is_null(), "{now:#}");

    let names: Vec<Value> = daemon.pins().iter().map(|p| p["name"].clone()).collect();
    assert_eq!(
        names,
        vec![json!("mid"), json!("t1"), json!("now")],
        "oldest point first, then by name"
    );

    assert_error(409, "pin_exists", daemon.pin(json!({"name": "t1"})));
    assert_error(400, "bad_pin", daemon.pin(json!({"name": "a b"})));
    assert_error(
        400,
        "bad_request",
        daemon.pin(json!({"name": "x", "session": "s1", "turn": 1, "at": between})),
    );
    assert_error(400, "bad_request", daemon.pin(json!({"name": "x", "turn": 1})));
    // A turn is a whole number (or a string), never a fraction read as another turn.
    for turn in [json!(1.5), json!(true), json!([1])] {
        let pin = json!({"name": "x", "session": "s1", "turn": turn});
        assert_error(400, "bad_request", daemon.pin(pin.clone()));
        let rollback = json!({"to": "before", "turn": turn});
        assert_error(400, "bad_request", daemon.rollback("s1", rollback));
    }
    assert_error(
        400,
        "bad_time",
        daemon.pin(json!({"name": "x", "at": "yesterday"})),
    );
    assert_error(
        400,
        "bad_time",
        daemon.pin(json!({"name": "x", "at": "2999-01-01T00:00:00Z"})),
    );
    assert_error(
        404,
        "not_found",
        daemon.pin(json!({"name": "x", "session": "s1", "turn": 9})),
    );
    assert_error(
        404,
        "not_found",
        daemon.pin(json!({"name": "x", "session": "nobody", "turn": 1})),
    );
    assert_error(
        409,
        "before_history",
        daemon.pin(json!({"name": "x", "at": "2000-01-01T00:00:00Z"})),
    );
    daemon.turn_start("s1", "open");
    assert_error(
        409,
        "turn_open",
        daemon.pin(json!({"name": "x", "session": "s1", "turn": "current"})),
    );
    daemon.turn_end("s1");
    assert_eq!(daemon.pins().len(), 3, "a refused pin was stored");

    let removed = expect(200, daemon.unpin("mid"));
    assert_eq!(removed["name"], "mid", "{removed:#}");
    assert_error(404, "not_found", daemon.unpin("mid"));
    assert_error(
        404,
        "not_found",
        daemon.rollback_in_time(json!({"pin": "mid", "dry_run": true})),
    );
    assert_eq!(daemon.pins().len(), 2);
}

#[test]
fn the_cli_pins_lists_and_unpins() {
    let ws = Workspace::new();
    seed(&ws, "");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, 1);
    turn(&ws, &daemon, 2);

    let text = cli_state_text(&ws, &["pin", "good", "--turn", "1", "--session", "s1"]);
    assert!(text.contains("pinned good: the end of turn 1 of s1"), "{text}");
    assert!(text.contains("filewatchd rollback --pin good"), "{text}");
    let made = cli_state_json(&ws, &["pin", "later", "--ago", "0s", "--json"]);
    assert_eq!(made["name"], "later", "{made:#}");

    let listed = cli_state_json(&ws, &["pins", "--json"]);
    assert_eq!(listed["pins"].as_array().map(Vec::len), Some(2), "{listed:#}");
    let text = cli_state_text(&ws, &["pins"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("good ") && lines[0].contains("the end of turn 1 of s1"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("later") && lines[1].contains("the state recorded at"),
        "{text}"
    );

    let taken = cli_state(&ws, &["pin", "good"]);
    let stderr = String::from_utf8_lossy(&taken.stderr);
    assert_eq!(taken.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("already exists") && stderr.contains("filewatchd unpin"),
        "{stderr}"
    );
    let both = cli_state(&ws, &["pin", "x", "--turn", "1", "--ago", "1m"]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "--turn and --ago together are a usage error"
    );

    let text = cli_state_text(&ws, &["unpin", "good"]);
    assert!(text.starts_with("unpinned good"), "{text}");
    let gone = cli_state(&ws, &["unpin", "good"]);
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert_eq!(gone.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("filewatchd pins"), "{stderr}");
    assert_eq!(daemon.pins().len(), 1);
}

#[test]
fn rollback_to_a_pin_restores_the_tree_exactly_and_redo_time_takes_it_back() {
    let ws = Workspace::new();
    seed(&ws, "");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, 1);
    let pinned = snapshot(ws.root());
    cli_state_ok(&ws, &["pin", "good", "--turn", "1", "--session", "s1"]);
    turn(&ws, &daemon, 2);
    turn(&ws, &daemon, 3);
    let latest = snapshot(ws.root());

    // The dry run: the plan, nothing changed.
    let dry = cli_state_json(&ws, &["rollback", "--pin", "good", "--dry-run", "--json"]);
    assert_eq!(
        (&dry["dry_run"], &dry["applied"]),
        (&json!(true), &json!(false)),
        "{dry:#}"
    );
    assert_eq!(
        (&dry["target"]["to"], &dry["target"]["pin"]),
        (&json!("pin"), &json!("good")),
        "{dry:#}"
    );
    assert!(action_paths(&dry).contains("add/2.txt"), "{dry:#}");
    assert_tree_eq(&latest, &snapshot(ws.root()), "after the dry run");
    let text = cli_state_text(&ws, &["rollback", "--pin", "good", "--dry-run"]);
    assert!(text.contains("back to pin good (seq"), "{text}");

    // The rollback: exactly the tree at the pin.
    let done = cli_state_json(&ws, &["rollback", "--pin", "good", "--json"]);
    assert_eq!(
        (&done["applied"], &done["session"]),
        (&json!(true), &Value::Null),
        "{done:#}"
    );
    assert_tree_eq(&pinned, &snapshot(ws.root()), "after rollback --pin");
    assert_eq!(seq_of(&done["target"]), seq_of(&daemon.pins()[0]), "{done:#}");

    // It is a rollback of the whole workspace: `redo --time` takes it back.
    rollback_applied(daemon.redo_in_time(json!({})));
    assert_tree_eq(&latest, &snapshot(ws.root()), "after redo --time");

    // One path back to the pin.
    cli_state_ok(&ws, &["restore", "m.txt", "--pin", "good"]);
    let mut expected = latest.clone();
    expected.insert("m.txt".into(), pinned["m.txt"].clone());
    assert_tree_eq(&expected, &snapshot(ws.root()), "after restore m.txt --pin");
    assert_error(
        400,
        "bad_request",
        daemon.rollback("s1", json!({"to": "before", "turn": 1, "pin": "good"})),
    );
}

/// The history of `path`, as seq numbers.
fn seqs(daemon: &Daemon, path: &str) -> Vec<i64> {
    versions(&daemon.history(path)).iter().map(seq_of).collect()
}

/// keep_turns = 1: without the pin, gc would collapse turn 1's state; with it, every version
/// the pin needs stays and the rollback to it is exact; after unpin the next gc removes them.
#[test]
fn gc_keeps_what_a_pin_needs_until_it_is_unpinned() {
    let ws = Workspace::new();
    seed(&ws, "keep_days = 0\nkeep_turns = 1\n");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, 1);
    let pinned = snapshot(ws.root());
    let after_one = time_mark();
    let m_at_pin = *seqs(&daemon, "m.txt").last().unwrap();
    let doc_at_pin = *seqs(&daemon, "doc/a.md").last().unwrap();
    for i in 2..=4 {
        turn(&ws, &daemon, i);
    }
    let latest = snapshot(ws.root());

    let unpinned = daemon.gc(true);
    expect(
        201,
        daemon.pin(json!({"name": "good", "session": "s1", "turn": 1})),
    );
    let with_pin = daemon.gc(true);
    assert!(
        with_pin["versions_removed"].as_i64() < unpinned["versions_removed"].as_i64(),
        "the pin kept nothing:\nwithout {unpinned:#}\nwith {with_pin:#}"
    );
    let report = daemon.gc(false);
    assert!(report["versions_removed"].as_i64() > Some(0), "{report:#}");
    assert!(
        seqs(&daemon, "m.txt").contains(&m_at_pin),
        "the pinned m.txt went"
    );
    assert!(
        seqs(&daemon, "doc/a.md").contains(&doc_at_pin),
        "the pinned doc/a.md went"
    );
    assert_eq!(seqs(&daemon, "m.txt").len(), 3, "pinned, at the cutoff, after it");
    // Turn 2 starts where the pin stands (nothing was written between), so its `before` is
    // exact; turn 3's is not.
    expect(
        200,
        daemon.rollback("s1", json!({"to": "before", "turn": 2, "dry_run": true})),
    );
    assert_error(
        410,
        "expired",
        daemon.rollback("s1", json!({"to": "before", "turn": 3})),
    );
    // A time rollback to the pinned state is exact too.
    let dry = expect(
        200,
        daemon.rollback_in_time(json!({"at": after_one, "dry_run": true})),
    );
    assert_eq!(seq_of(&dry["target"]), seq_of(&daemon.pins()[0]), "{dry:#}");

    rollback_applied(daemon.rollback_in_time(json!({"pin": "good"})));
    assert_tree_eq(
        &pinned,
        &snapshot(ws.root()),
        "after rollback --pin past the cutoff",
    );
    rollback_applied(daemon.redo_in_time(json!({})));
    assert_tree_eq(&latest, &snapshot(ws.root()), "after redo --time");

    expect(200, daemon.unpin("good"));
    daemon.gc(false);
    assert!(
        !seqs(&daemon, "m.txt").contains(&m_at_pin),
        "unpinned, yet m.txt's version stayed"
    );
    assert_error(
        410,
        "expired",
        daemon.rollback_in_time(json!({"at": after_one, "dry_run": true})),
    );
    assert_error(
        410,
        "expired",
        daemon.pin(json!({"name": "again", "at": after_one})),
    );
}

/// Over `max_store_bytes` the days rule gives way, and with `keep_turns = 0` nothing else
/// holds history: only the pin keeps its state.
#[test]
fn a_pin_outlasts_the_store_budget() {
    let ws = Workspace::new();
    seed(&ws, "keep_days = 30\nkeep_turns = 0\nmax_store_bytes = 1\n");
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, 1);
    let pinned = snapshot(ws.root());
    cli_state_ok(&ws, &["pin", "release", "--ago", "0s"]);
    turn(&ws, &daemon, 2);
    turn(&ws, &daemon, 3);

    let report = daemon.gc(false);
    assert!(report["versions_removed"].as_i64() > Some(0), "{report:#}");
    assert_eq!(report["cutoff_seq"], daemon.status()["latest_seq"], "{report:#}");
    rollback_applied(daemon.rollback_in_time(json!({"pin": "release"})));
    assert_tree_eq(
        &pinned,
        &snapshot(ws.root()),
        "after rollback --pin over the budget",
    );
}

/// One turn of session `s` writing `file` with its label.
fn labelled_turn(ws: &Workspace, daemon: &Daemon, label: &str, file: &str) {
    daemon.turn_start("s", label);
    ws.write(file, format!("{label}\n"));
    daemon.turn_end("s");
}

/// Each turn as (number, undone), newest first, in a timeline page.
fn marks(page: &Value) -> Vec<(i64, bool)> {
    let entries = page["entries"].as_array().map_or(&[][..], Vec::as_slice);
    entries
        .iter()
        .filter(|e| e["kind"] == "turn")
        .map(|e| (e["turn"].as_i64().unwrap_or(-1), e["undone"] == true))
        .collect()
}

/// The turns `log` marks `(undone)`, newest first.
fn undone_in_log(ws: &Workspace) -> Vec<String> {
    let log = cli_state_text(ws, &["log", "--session", "s"]);
    let undone = log.lines().filter(|l| l.ends_with("(undone)"));
    let turn = |l: &str| l.split("  ").nth(1).unwrap_or_default().to_string();
    undone.map(turn).collect()
}

/// `rollback --pin` and `rollback --at` take the turns after their point out of effect: `log`
/// and the timeline (a session's and everyone's) mark them undone, as an undo does; `redo
/// --time` brings them back and the marks go.
#[test]
fn a_rollback_to_a_pin_or_a_time_marks_the_turns_it_took_out_until_redone() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    labelled_turn(&ws, &daemon, "one", "a.txt");
    expect(201, daemon.pin(json!({"name": "p1", "session": "s", "turn": 1})));
    labelled_turn(&ws, &daemon, "two", "b.txt");
    let after_two = time_mark();
    labelled_turn(&ws, &daemon, "three", "c.txt");
    let none = vec![(3, false), (2, false), (1, false)];
    let session_page = || expect(200, daemon.get("/v1/timeline?session=s"));
    let all_page = || expect(200, daemon.get("/v1/timeline"));

    cli_state_ok(&ws, &["rollback", "--pin", "p1"]);
    assert!(!ws.path("b.txt").exists() && !ws.path("c.txt").exists());
    let pinned = vec![(3, true), (2, true), (1, false)];
    assert_eq!(marks(&session_page()), pinned, "{:#}", session_page());
    assert_eq!(marks(&all_page()), pinned, "{:#}", all_page());
    assert_eq!(undone_in_log(&ws), ["turn 3", "turn 2"]);
    cli_state_ok(&ws, &["redo", "--time"]);
    assert_eq!(ws.read("c.txt"), b"three\n");
    assert_eq!(marks(&session_page()), none, "{:#}", session_page());
    assert!(undone_in_log(&ws).is_empty());

    cli_state_ok(&ws, &["rollback", "--at", &after_two]);
    assert!(ws.path("b.txt").exists() && !ws.path("c.txt").exists());
    assert_eq!(
        marks(&session_page()),
        vec![(3, true), (2, false), (1, false)],
        "{:#}",
        session_page()
    );
    assert_eq!(undone_in_log(&ws), ["turn 3"]);
    cli_state_ok(&ws, &["redo", "--time"]);
    assert_eq!(marks(&all_page()), none, "{:#}", all_page());
    assert!(undone_in_log(&ws).is_empty());
}
