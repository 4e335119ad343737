//! What `filewatchd mcp` makes of its tools' arguments: a value never reaches another
//! endpoint than the tool's (session names are checked as the API checks them, every value
//! in a URL is percent-encoded), and a bad argument is a `bad_argument` JSON error.

use crate::common::*;
use serde_json::json;

/// `undo {"session":"s1/redo?"}` must not run a redo, `preview_undo` with a session that
/// reads as a turn's end must not end the turn: both are `bad_argument`, nothing changes.
#[test]
fn a_session_argument_cannot_reach_another_endpoint() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "[mcp]\nallow_rollback = true\n");
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "edit a");
    ws.sh("echo a1 > a.txt");
    daemon.turn_end("s1");
    expect(200, daemon.undo("s1", json!({})));
    assert_eq!(ws.read("a.txt"), b"a0\n");
    daemon.turn_start("s2", "still going");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };

    let redo = mcp.fails("undo", json!({"session": "s1/redo?"}));
    assert_eq!(redo["error"]["code"], "bad_argument", "{redo:#}");
    assert!(
        redo["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not a session name")),
        "{redo:#}"
    );
    assert_eq!(ws.read("a.txt"), b"a0\n", "the undo was redone");

    for session in ["s2/turns/1/end?", "s2/../s1", "s1#x"] {
        let end = mcp.fails("preview_undo", json!({ "session": session }));
        assert_eq!(end["error"]["code"], "bad_argument", "{session}: {end:#}");
    }
    // `..` is no session name either (dots alone are refused, as the API refuses them).
    let dots = mcp.fails("preview_undo", json!({"session": ".."}));
    assert_eq!(dots["error"]["code"], "bad_argument", "{dots:#}");
    let said = dots["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("not dots alone"), "{dots:#}");
    assert_eq!(
        daemon.turn("s2", 1, false)["ended_at"],
        serde_json::Value::Null,
        "a preview ended the turn"
    );
}

/// A turn ref is one path segment: `1/end` is a ref no turn has, not turn 1's end.
#[test]
fn a_turn_ref_stays_one_path_segment() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "open");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let answer = mcp.fails("turn_changes", json!({"session": "s1", "turn": "1/end"}));
    assert_eq!(answer["error"]["code"], "not_found", "{answer:#}");
    let answer = mcp.fails("diff_since", json!({"session": "s1", "after": "1/end?x=1"}));
    assert_eq!(answer["error"]["code"], "not_found", "{answer:#}");
    assert_eq!(daemon.turn("s1", 1, false)["ended_at"], serde_json::Value::Null);
}

/// Arguments that do not fit a tool's schema are its JSON error `bad_argument`, like every
/// other error: a missing one, a wrong type, and an unknown one (naming the allowed ones).
#[test]
fn arguments_that_do_not_fit_are_bad_argument_as_json() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "open");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let message =
        |error: &serde_json::Value| error["error"]["message"].as_str().unwrap_or_default().to_string();
    let unknown = mcp.fails("turn_changes", json!({"pth": "src"}));
    assert_eq!(unknown["error"]["code"], "bad_argument", "{unknown:#}");
    assert!(
        message(&unknown).contains("pth") && message(&unknown).contains("`path`"),
        "{unknown:#}"
    );
    let missing = mcp.fails("file_history", json!({}));
    assert_eq!(missing["error"]["code"], "bad_argument", "{missing:#}");
    assert!(message(&missing).contains("file_history"), "{missing:#}");
    let typed = mcp.fails("turns", json!({"limit": "many"}));
    assert_eq!(typed["error"]["code"], "bad_argument", "{typed:#}");
    let tools = mcp.tools();
    let schema = &tools
        .iter()
        .find(|t| t["name"] == "turn_changes")
        .expect("listed")["input_schema"];
    assert_eq!(schema["additionalProperties"], false, "{schema:#}");
}

/// `turn_changes` checks `path` as the other tools do; `limit: 0` answers the counts alone.
#[test]
fn turn_changes_checks_its_path_and_limit_zero_is_counts_only() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "two files");
    ws.sh("echo a > a.txt && echo b > b.txt");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    for path in ["/etc", "../etc"] {
        let refused = mcp.fails("turn_changes", json!({ "path": path }));
        assert_eq!(refused["error"]["code"], "bad_path", "{path}: {refused:#}");
    }
    let counts = mcp.ok("turn_changes", json!({"limit": 0}));
    assert_eq!(counts["changes"], json!([]), "{counts:#}");
    assert_eq!(counts["paths"], 2);
    assert_eq!(counts["counts"]["added"], 2);
    assert!(
        counts["more"]
            .as_str()
            .is_some_and(|m| m.starts_with("2 more") && m.contains("offset=0")),
        "{counts:#}"
    );
    let turns = mcp.ok("turns", json!({"limit": 0}));
    assert_eq!(turns["turns"], json!([]), "{turns:#}");
    assert_eq!(turns["turns_total"], 1);
}
