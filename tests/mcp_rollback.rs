//! The MCP tools that change files: listed only with `[mcp] allow_rollback = true`, always
//! refusing on conflict (nothing changes), recording the agent as the rollback's actor.

use crate::common::*;
use serde_json::json;

#[test]
fn allowed_rollback_tools_refuse_on_conflict_and_record_the_agent_as_actor() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "[mcp]\nallow_rollback = true\n");
    ws.write("a.txt", "a0\n");
    ws.write("b.txt", "b0\n");
    ws.write("c.txt", "c0\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "edit a and b");
    ws.sh("echo a1 > a.txt && sed -i 's/b0/b1/' b.txt");
    daemon.turn_end("s1");
    // The user's edit after turn 1: a conflict for undoing turn 1, not turn 2.
    ws.write("b.txt", "the user's\n");
    daemon.turn_start("s1", "edit c");
    ws.sh("echo c1 > c.txt");
    daemon.turn_end("s1");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let names = mcp.tool_names();
    for tool in ["undo", "rollback", "restore_file", "preview_undo"] {
        assert!(names.iter().any(|n| n == tool), "{tool} not listed: {names:?}");
    }

    // Turn 2 touched only c.txt: no conflict, it is undone.
    let preview = mcp.ok("preview_undo", json!({}));
    assert!(
        preview["next_step"]
            .as_str()
            .is_some_and(|n| n.contains("call the undo tool")),
        "{preview:#}"
    );
    let undone = mcp.ok("undo", json!({}));
    assert_eq!(undone["applied"], true, "{undone:#}");
    assert_eq!(ws.read("c.txt"), b"c0\n");

    // Turn 1 wrote b.txt, which the user changed since: refused, nothing changes.
    let refused = mcp.fails("undo", json!({}));
    assert_eq!(refused["error"]["code"], "conflicts", "{refused:#}");
    assert_eq!(refused["plan"]["conflicts"][0]["path"], "b.txt");
    assert_eq!(ws.read("a.txt"), b"a1\n", "a refused undo changed a file");
    assert_eq!(ws.read("b.txt"), b"the user's\n");
    let refused = mcp.fails("rollback", json!({"to": "before", "turn": 1}));
    assert_eq!(refused["error"]["code"], "conflicts", "{refused:#}");
    let refused = mcp.fails(
        "restore_file",
        json!({"path": "b.txt", "to": "before", "turn": 1}),
    );
    assert_eq!(refused["error"]["code"], "conflicts", "{refused:#}");
    assert_eq!(ws.read("b.txt"), b"the user's\n");

    // One file of turn 1 that nobody else touched is restored.
    let restored = mcp.ok(
        "restore_file",
        json!({"path": "a.txt", "to": "before", "turn": 1}),
    );
    assert_eq!(restored["applied"], true, "{restored:#}");
    assert_eq!(ws.read("a.txt"), b"a0\n");

    // Both are the agent's: the timeline and `log` say so.
    let (status, timeline) = daemon.get("/v1/timeline?session=s1");
    assert_eq!(status, 200);
    let by_mcp = timeline["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["rollback_id"].is_number() && e["actor"] == "mcp")
        .count();
    assert_eq!(by_mcp, 2, "{timeline:#}");
    let log = ws.cli(ws.root(), &["log", "--session", "s1"]);
    let text = String::from_utf8_lossy(&log.stdout);
    assert_eq!(text.matches("(by mcp)").count(), 2, "{text}");
}

/// A rollback tool is absent, not merely refused, when the config does not allow it.
#[test]
fn rollback_tools_are_absent_unless_allowed() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "[mcp]\nallow_rollback = false\n");
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "t");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let names = mcp.tool_names();
    assert!(
        !names
            .iter()
            .any(|n| ["undo", "rollback", "restore_file"].contains(&n.as_str())),
        "{names:?}"
    );
    let answer = mcp.fails("undo", json!({}));
    assert_eq!(answer["error"]["code"], "protocol_error", "{answer:#}");
    assert_eq!(ws.read("a.txt"), b"a1\n");
}
