//! Several sessions (docs/guarantees.md, "Words", G4): another session's turn, and a write made while turns
//! of several sessions were open (`ambiguous`), are conflicts for a rollback; `abort` changes
//! nothing, `skip` leaves those paths as they are, `force` rolls them back and keeps what they
//! held in history. `GET /v1/sessions` and `filewatchd sessions` list the sessions.

use crate::common::*;
use serde_json::{Value, json};

/// The versions of a history answer made by `session`'s turn `turn`.
fn made_by<'a>(history: &'a Value, session: &str, turn: u64) -> Vec<&'a Value> {
    versions(history)
        .iter()
        .filter(|v| v["origin"] == "turn" && v["session"] == session && v["turn"] == turn)
        .collect()
}

/// alpha's turn 1 edits `shared.txt` (and its own files), then beta's turn 1 edits
/// `shared.txt` again. alpha's undo: abort refuses and changes nothing, naming beta's turn;
/// skip rolls back alpha's other files and leaves `shared.txt` as beta wrote it; force rolls
/// `shared.txt` back too, and beta's content stays in history.
#[test]
fn another_sessions_turn_is_a_conflict_for_abort_skip_and_force() {
    let ws = Workspace::new();
    ws.write("shared.txt", "base\n");
    ws.write("alpha_only.txt", "alpha 0\n");
    ws.write("untouched.txt", "nobody\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());

    daemon.turn_start("alpha", "alpha edits");
    ws.write("shared.txt", "alpha 1\n");
    ws.write("alpha_only.txt", "alpha 1\n");
    ws.write("alpha_new.txt", "made by alpha\n");
    daemon.turn_end("alpha");
    daemon.turn_start("beta", "beta edits");
    ws.write("shared.txt", "beta 1\n");
    daemon.turn_end("beta");
    let (tree, stat, seq) = (
        snapshot(ws.root()),
        marks(ws.root()),
        daemon.status()["latest_seq"].clone(),
    );

    // beta's own undo sees no conflict: only alpha's undo must.
    let plan = expect(200, daemon.undo("beta", json!({"dry_run": true})));
    assert_eq!(
        plan["conflicts"],
        json!([]),
        "beta's undo of its own turn: {plan:#}"
    );
    assert_eq!(action_paths(&plan), set(["shared.txt"]), "{plan:#}");

    // abort (the default): 409, every conflict with its reason, nothing changed.
    let (status, refused) = daemon.undo("alpha", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(refused["error"]["code"], "conflicts", "{refused:#}");
    assert_eq!(refused["applied"], false, "{refused:#}");
    assert_eq!(
        listed_paths(&refused, "conflicts"),
        set(["shared.txt"]),
        "{refused:#}"
    );
    let conflict = listed(&refused, "conflicts", "shared.txt");
    assert_eq!(conflict["code"], "changed_by_other", "{conflict}");
    let reason = conflict["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("beta") && reason.contains("turn 1"),
        "the reason must name session beta and its turn 1: {reason:?}"
    );
    assert_eq!(
        action_paths(&refused),
        set(["shared.txt", "alpha_only.txt", "alpha_new.txt"]),
        "the refused plan: {refused:#}"
    );
    assert_tree_eq(&tree, &snapshot(ws.root()), "after a refused undo");
    assert_eq!(marks(ws.root()), stat, "a refused undo rewrote files");
    assert_eq!(
        daemon.status()["latest_seq"],
        seq,
        "a refused undo recorded versions"
    );

    // skip: alpha's other files go back; shared.txt stays exactly as beta left it.
    let answer = expect(200, daemon.undo("alpha", json!({"on_conflict": "skip"})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(answer["target"]["turn"], 1, "{answer:#}");
    assert_eq!(
        listed_paths(&answer, "skipped"),
        set(["shared.txt"]),
        "{answer:#}"
    );
    assert_eq!(ws.read("shared.txt"), b"beta 1\n");
    assert_eq!(
        marks(ws.root())["shared.txt"],
        stat["shared.txt"],
        "skipped shared.txt was rewritten"
    );
    assert_eq!(ws.read("alpha_only.txt"), b"alpha 0\n");
    assert!(
        !ws.path("alpha_new.txt").exists(),
        "alpha_new.txt was not removed"
    );
    assert_eq!(marks(ws.root())["untouched.txt"], stat["untouched.txt"]);

    // force: shared.txt goes back too; beta's content is still in history.
    let answer = expect(
        200,
        daemon.rollback(
            "alpha",
            json!({"to": "before", "turn": 1, "on_conflict": "force"}),
        ),
    );
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(answer["skipped"], json!([]), "{answer:#}");
    assert_eq!(action(&answer, "shared.txt")["status"], "done", "{answer:#}");
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the forced rollback");

    let history = daemon.history("shared.txt");
    let by_beta = made_by(&history, "beta", 1);
    assert_eq!(by_beta.len(), 1, "beta's version of shared.txt: {history:#}");
    assert_eq!(by_beta[0]["hash"], blake3_hex(b"beta 1\n"), "{history:#}");
    let (status, held) = daemon.get_bytes(&format!("/v1/content?path=shared.txt&seq={}", by_beta[0]["seq"]));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&held));
    assert_eq!(held, b"beta 1\n", "beta's content read back from history");
    let newest = latest(&history);
    assert_eq!(newest["origin"], "rollback", "{history:#}");
    assert_eq!(newest["hash"], blake3_hex(b"base\n"), "{history:#}");
}

/// alpha starts, beta starts, a write, alpha ends, beta ends: the write is `ambiguous`, and a
/// conflict for both sessions' undo. Writes made while only one turn was open belong to it, and
/// are not the other session's undo to touch.
#[test]
fn a_write_while_two_sessions_have_open_turns_is_ambiguous_and_a_conflict_for_both() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("both.txt", "both 0\n");
    ws.write("b.txt", "b0\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("alpha", "alpha");
    ws.write("a.txt", "alpha alone\n");
    daemon.turn_start("beta", "beta");
    ws.write("both.txt", "while both were open\n");
    daemon.turn_end("alpha");
    ws.write("b.txt", "beta alone\n");
    daemon.turn_end("beta");

    let both = latest(&daemon.history("both.txt")).clone();
    assert_eq!(both["origin"], "ambiguous", "{both}");
    assert_eq!(both["hash"], blake3_hex(b"while both were open\n"), "{both}");
    let a = latest(&daemon.history("a.txt")).clone();
    assert_eq!(
        (&a["origin"], &a["session"], &a["turn"]),
        (&json!("turn"), &json!("alpha"), &json!(1)),
        "{a}"
    );
    let b = latest(&daemon.history("b.txt")).clone();
    assert_eq!(
        (&b["origin"], &b["session"], &b["turn"]),
        (&json!("turn"), &json!("beta"), &json!(1)),
        "{b}"
    );

    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    // alpha: both.txt (ambiguous) conflicts; a.txt is alpha's own; b.txt is beta's, not
    // alpha's to touch.
    let (status, refused) = daemon.undo("alpha", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(refused["error"]["code"], "conflicts", "{refused:#}");
    assert_eq!(
        listed_paths(&refused, "conflicts"),
        set(["both.txt"]),
        "{refused:#}"
    );
    assert_eq!(
        listed(&refused, "conflicts", "both.txt")["code"],
        "changed_by_other"
    );
    assert_eq!(action_paths(&refused), set(["a.txt", "both.txt"]), "{refused:#}");

    // beta: both.txt (ambiguous) conflicts; b.txt is beta's own.
    let (status, refused) = daemon.undo("beta", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(
        listed_paths(&refused, "conflicts"),
        set(["both.txt"]),
        "{refused:#}"
    );
    assert_eq!(
        listed(&refused, "conflicts", "both.txt")["code"],
        "changed_by_other"
    );
    assert_eq!(action_paths(&refused), set(["both.txt", "b.txt"]), "{refused:#}");

    assert_tree_eq(&tree, &snapshot(ws.root()), "after two refused undos");
    assert_eq!(marks(ws.root()), stat, "a refused undo rewrote files");

    // With skip, beta's undo takes back only its own write.
    let answer = expect(200, daemon.undo("beta", json!({"on_conflict": "skip"})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(ws.read("b.txt"), b"b0\n");
    assert_eq!(ws.read("both.txt"), b"while both were open\n");
    assert_eq!(ws.read("a.txt"), b"alpha alone\n");
}

/// Another session's rollback is another session's work too: after beta's forced undo puts
/// back a file alpha's turn had changed, alpha's undo finds it in conflict, naming beta's
/// rollback; paths beta's rollback did not touch roll back freely.
#[test]
fn another_sessions_rollback_is_a_conflict() {
    let ws = Workspace::new();
    ws.write(
        "f.txt", "f0
",
    );
    ws.write(
        "g.txt", "g0
",
    );
    let daemon = Daemon::start(&ws);

    daemon.turn_start("beta", "beta first");
    ws.write("f.txt", "beta\n");
    daemon.turn_end("beta");
    daemon.turn_start("alpha", "alpha after");
    ws.write("f.txt", "alpha\n");
    ws.write("g.txt", "alpha\n");
    daemon.turn_end("alpha");

    // beta's undo: f.txt was changed by alpha since, so it needs force.
    let (status, refused) = daemon.undo("beta", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    let reason = listed(&refused, "conflicts", "f.txt")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("alpha") && reason.contains("turn 1"),
        "{reason:?}"
    );
    let answer = expect(200, daemon.undo("beta", json!({"on_conflict": "force"})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(ws.read("f.txt"), b"f0\n");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    let (status, refused) = daemon.undo("alpha", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(listed_paths(&refused, "conflicts"), set(["f.txt"]), "{refused:#}");
    let conflict = listed(&refused, "conflicts", "f.txt");
    assert_eq!(conflict["code"], "changed_by_other", "{conflict}");
    let reason = conflict["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("beta") && reason.contains("rollback"),
        "the reason must name beta's rollback: {reason:?}"
    );
    assert_tree_eq(&tree, &snapshot(ws.root()), "after a refused undo");
    assert_eq!(marks(ws.root()), stat, "a refused undo rewrote files");

    let answer = expect(200, daemon.undo("alpha", json!({"on_conflict": "skip"})));
    assert_eq!(listed_paths(&answer, "skipped"), set(["f.txt"]), "{answer:#}");
    assert_eq!(ws.read("g.txt"), b"g0\n");
    assert_eq!(ws.read("f.txt"), b"f0\n");
}

/// `GET /v1/sessions` lists every session with its turn count, open turn, times and (no)
/// parent; `filewatchd sessions` prints them, and `--json` is the same answer.
#[test]
fn sessions_are_listed_with_their_turn_counts() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    let empty = expect(200, daemon.get("/v1/sessions"));
    assert_eq!(empty, json!({"sessions": []}));

    for label in ["one", "two"] {
        daemon.turn_start("alpha", label);
        ws.write(format!("{label}.txt"), label);
        daemon.turn_end("alpha");
    }
    daemon.turn_start("beta", "still open");
    ws.write("beta.txt", "beta\n");

    let listing = expect(200, daemon.get("/v1/sessions"));
    let sessions = listing["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("{listing:#}"));
    assert_eq!(sessions.len(), 2, "{listing:#}");
    let entry = |name: &str| -> Value {
        sessions
            .iter()
            .find(|s| s["session"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {listing:#}"))
            .clone()
    };
    let alpha = entry("alpha");
    let beta = entry("beta");
    assert_eq!(alpha["turns"], 2, "{alpha}");
    assert_eq!(alpha["open_turn"], Value::Null, "{alpha}");
    assert_eq!(beta["turns"], 1, "{beta}");
    assert_eq!(beta["open_turn"], 1, "{beta}");
    for s in [&alpha, &beta] {
        assert_eq!(s["parent"], Value::Null, "{s}");
        assert_eq!(s["fork_turn"], Value::Null, "{s}");
        let created = parse_time(&s["created_at"]);
        let active = parse_time(&s["last_activity"]);
        assert!(active >= created, "last activity before creation: {s}");
    }
    assert!(
        parse_time(&beta["created_at"]) >= parse_time(&alpha["created_at"]),
        "beta was created after alpha: {listing:#}"
    );

    let printed = cli_state_json(&ws, &["sessions", "--json"]);
    assert_eq!(
        printed, listing,
        "`sessions --json` differs from GET /v1/sessions"
    );

    let text = cli_state_text(&ws, &["sessions"]);
    for (name, turns) in [("alpha", "2"), ("beta", "1")] {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}:\n{text}"));
        assert!(
            line.split_whitespace().any(|w| w == turns),
            "the line of {name} lacks its turn count {turns}:\n{text}"
        );
    }
    daemon.turn_end("beta");
}

#[track_caller]
fn parse_time(value: &Value) -> std::time::SystemTime {
    let text = value.as_str().unwrap_or_else(|| panic!("not a time: {value}"));
    humantime::parse_rfc3339_weak(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}
