//! Which session "this session" is for `filewatchd mcp`: the `session` argument, what the
//! agent says (environment), the hooks' record of the agent process, the only candidate; and
//! a refusal listing the candidates when sessions work in parallel.

use crate::common::*;
use serde_json::{Value, json};

fn candidates(error: &Value) -> Vec<String> {
    let mut names: Vec<String> = error["error"]["candidates"]
        .as_array()
        .unwrap_or_else(|| panic!("no candidates: {error:#}"))
        .iter()
        .filter_map(|c| c["session"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// Two sessions with a turn open: no guess, a refusal naming both; the argument settles it.
#[test]
fn parallel_sessions_are_never_guessed() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("left", "left's prompt");
    daemon.turn_start("right", "right's prompt");
    ws.write("x.txt", "x\n");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let refused = mcp.fails("turn_changes", json!({}));
    assert_eq!(refused["error"]["code"], "session_unknown", "{refused:#}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("session argument"))
    );
    assert_eq!(candidates(&refused), ["left", "right"]);

    let answer = mcp.ok("turn_changes", json!({"session": "right"}));
    assert_eq!(answer["session"], "right");
    assert_eq!(answer["session_from"], "the session argument");
    // A write made while both were open is in both, marked ambiguous.
    assert_eq!(answer["changes"][0]["path"], "x.txt", "{answer:#}");
    assert_eq!(answer["changes"][0]["ambiguous"], true);
}

/// The agent's own hook ran as a child of the same process as the server: its record names
/// the session, even with another session open in parallel. A record of the same pid with
/// another start time (a reused pid) is not it.
#[test]
fn the_hooks_record_of_the_agent_process_names_its_session() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("someone-else", "in parallel");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let state = ws.home_state_of(ws.root()).expect("the daemon's state directory");
    let agents = state.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    let stale = agents.join(format!("{}-1.json", mcp.agent_pid()));
    let forged = json!({"pid": mcp.agent_pid(), "start_time": 1, "comm": "old", "agent": "claude-code",
                        "sessions": [{"session": "someone-else", "seen_ms": 0}]});
    std::fs::write(&stale, forged.to_string()).unwrap();

    let hook = mcp.run(
        &[BIN, "hook", "claude-code"],
        &hook_fixture("claude-code", "UserPromptSubmit", ws.root()),
    );
    assert_eq!(hook["status"], 0, "{hook:#}");
    assert!(
        !stale.exists(),
        "the hook removes the records of processes that are gone"
    );
    let records: Vec<String> = std::fs::read_dir(&agents)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(
        records[0].starts_with(&format!("{}-", mcp.agent_pid())),
        "{records:?}"
    );

    ws.sh("echo fx > renamed.rs");
    let answer = mcp.ok("turn_changes", json!({}));
    assert_eq!(answer["session"], "fixture-session-1", "{answer:#}");
    assert!(
        answer["session_from"]
            .as_str()
            .is_some_and(|f| f.contains("hooks' record")),
        "{answer:#}"
    );
    assert_eq!(answer["prompt"], "Rename fn to fx and update the callers");
    assert_eq!(answer["changes"][0]["path"], "renamed.rs");
}

/// What the agent says in the environment comes before any record; the only session with a
/// turn open is the default; no session at all is a refusal that says why.
#[test]
fn the_environment_and_the_only_open_session() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let none = mcp.fails("turns", json!({}));
    assert_eq!(none["error"]["code"], "session_unknown", "{none:#}");
    assert_eq!(candidates(&none), Vec::<String>::new());

    daemon.turn_start("done", "an old one");
    daemon.turn_end("done");
    daemon.turn_start("busy", "now");
    let answer = mcp.ok("turn_changes", json!({}));
    assert_eq!(answer["session"], "busy", "{answer:#}");
    assert_eq!(answer["session_from"], "the only session with a turn open");
    drop(mcp);

    // Claude Code gives its MCP servers the session id of its hooks.
    let Some(mut claude) = Mcp::start(&ws, &[], &[("CLAUDE_CODE_SESSION_ID", "done")]) else {
        return;
    };
    let answer = claude.ok("turns", json!({}));
    assert_eq!(answer["session"], "done", "{answer:#}");
    assert_eq!(
        answer["session_from"],
        "the environment variable CLAUDE_CODE_SESSION_ID"
    );
    assert_eq!(answer["turns"][0]["prompt"], "an old one");
}

/// Codex names its session (its thread id) in each tool call's `_meta`.
#[test]
fn a_session_in_the_calls_meta_names_it() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("019b-thread", "codex's");
    daemon.turn_start("other", "in parallel");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let meta = json!({"sessionId": "019b-thread", "threadId": "019b-thread", "x-codex-turn-metadata": {"turn_id": "t1"}});
    let answer = mcp.call_with_meta("turn_changes", json!({}), meta);
    assert!(!answer.is_error, "{:#}", answer.json);
    assert_eq!(answer.json["session"], "019b-thread");
    assert_eq!(
        answer.json["session_from"],
        "the MCP client's _meta \"sessionId\""
    );
    assert_eq!(answer.json["prompt"], "codex's");
}

/// The first tool call starts the daemon when none runs, as a hook would; with autostart
/// off it says how to start one, and starts nothing.
#[test]
fn the_first_call_starts_the_daemon_unless_autostart_is_off() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("a.txt", "a\n");
    let Some(mut off) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let refused = off.fails("turns", json!({}));
    assert_eq!(refused["error"]["code"], "no_daemon", "{refused:#}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("filewatchd start")),
        "{refused:#}"
    );
    assert!(
        ws.answering(ws.root()).is_none(),
        "a daemon started with autostart off"
    );
    drop(off);

    // Started only in a project of the user's, as hooks start it (here its agent's settings).
    std::fs::create_dir_all(ws.root().join(".claude")).unwrap();
    let Some(mut on) = Mcp::start(&ws, &[], &[("FILEWATCHD_AUTOSTART", "1")]) else {
        return;
    };
    let answer = on.call("file_history", json!({"path": "a.txt"}));
    assert!(!answer.is_error, "{:#}\n{}", answer.json, ws.daemon_logs());
    assert_eq!(answer.json["versions_total"], 1);
    assert_eq!(answer.json["versions"][0]["origin"], "offline");
    ws.wait_answering(ws.root());
}

/// The start time of this process (field 22 of /proc/self/stat), as the records name it.
fn own_start_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("own stat");
    let after = &stat[stat.rfind(')').expect("a name") + 1..];
    after
        .split_whitespace()
        .nth(19)
        .and_then(|f| f.parse().ok())
        .expect("start time")
}

/// An agent run by an agent: the outer one (here the test process, the driver's parent) has
/// a record; the server's own agent (the driver) has none. The outer agent's session is not
/// this one's: with two sessions open the server refuses, naming both.
#[test]
fn an_outer_agents_record_does_not_name_a_nested_agents_session() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("outer", "the outer agent's");
    daemon.turn_start("inner", "the nested agent's");
    let state = ws.home_state_of(ws.root()).expect("the daemon's state directory");
    let agents = state.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    let pid = std::process::id();
    let record = json!({"pid": pid, "start_time": own_start_time(), "comm": "outer", "agent": "claude-code",
                        "sessions": [{"session": "outer", "seen_ms": 0}]});
    let path = agents.join(format!("{pid}-{}.json", own_start_time()));
    std::fs::write(&path, record.to_string()).unwrap();
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let refused = mcp.fails("turn_changes", json!({}));
    assert_eq!(refused["error"]["code"], "session_unknown", "{refused:#}");
    assert_eq!(candidates(&refused), ["inner", "outer"]);
    let _ = std::fs::remove_file(path);
}

/// The order: the call's `_meta` (said with every call) before the environment (said once,
/// at start); the environment's session, once it has no turn open, gives way to the one the
/// hooks' record names with a turn open (Claude Code after `/clear`), and the answer says so.
#[test]
fn the_calls_meta_then_the_environment_unless_the_agent_moved_on() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("before-clear", "the first conversation");
    daemon.turn_end("before-clear");
    daemon.turn_start("codex-thread", "another");
    daemon.turn_end("codex-thread");
    let env = [("CLAUDE_CODE_SESSION_ID", "before-clear")];
    let Some(mut mcp) = Mcp::start(&ws, &[], &env) else {
        return;
    };
    let meta = json!({"sessionId": "codex-thread"});
    let answer = mcp.call_with_meta("turns", json!({}), meta);
    assert!(!answer.is_error, "{:#}", answer.json);
    assert_eq!(answer.json["session"], "codex-thread", "{:#}", answer.json);

    // Nothing open yet: the environment's session.
    let answer = mcp.ok("turns", json!({}));
    assert_eq!(answer["session"], "before-clear", "{answer:#}");

    // After /clear the agent's hook reports its new session, with a turn open.
    let hook = mcp.run(
        &[BIN, "hook", "claude-code"],
        &hook_fixture("claude-code", "UserPromptSubmit", ws.root()),
    );
    assert_eq!(hook["status"], 0, "{hook:#}");
    let answer = mcp.ok("turn_changes", json!({}));
    assert_eq!(answer["session"], "fixture-session-1", "{answer:#}");
    let from = answer["session_from"].as_str().unwrap_or_default();
    assert!(
        from.contains("hooks' record") && from.contains("CLAUDE_CODE_SESSION_ID"),
        "{from}"
    );
}

/// Twelve sessions with a turn open: the refusal lists the ten most recently active, newest
/// first, says how many there are and where to see them all.
#[test]
fn many_candidates_are_listed_newest_first_with_the_total() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    for i in 1..=12 {
        daemon.turn_start(&format!("s{i:02}"), "in parallel");
    }
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let refused = mcp.fails("turn_changes", json!({}));
    let error = &refused["error"];
    assert_eq!(error["candidates_total"], 12, "{refused:#}");
    assert!(
        error["message"].as_str().is_some_and(|m| m.contains("of 12")),
        "{refused:#}"
    );
    let listed = error["candidates"].as_array().expect("candidates");
    assert_eq!(listed.len(), 10);
    let at = |s: &Value| s["last_activity"].as_str().unwrap_or_default().to_string();
    let times: Vec<String> = listed.iter().map(at).collect();
    let mut newest_first = times.clone();
    newest_first.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, newest_first, "not the newest first");
    let (_, all) = daemon.get("/v1/sessions");
    let names: Vec<&Value> = listed.iter().map(|c| &c["session"]).collect();
    let left_out = all["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter(|s| !names.contains(&&s["session"]));
    for session in left_out {
        assert!(at(session) <= times[9], "{session:#} is newer than a listed one");
    }
}

/// The session argument as the CLI takes it: a unique prefix, `last`; a name no session has
/// lists those there are and says the hooks may not be installed.
#[test]
fn the_session_argument_takes_prefixes_and_last_and_an_unknown_one_lists_candidates() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("3f2a1c9d-aaaa", "first");
    daemon.turn_end("3f2a1c9d-aaaa");
    daemon.turn_start("b7e1", "second");
    daemon.turn_end("b7e1");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let prefix = mcp.ok("turns", json!({"session": "3f2a"}));
    assert_eq!(prefix["session"], "3f2a1c9d-aaaa", "{prefix:#}");
    let last = mcp.ok("turns", json!({"session": "last"}));
    assert_eq!(last["session"], "b7e1", "{last:#}");
    let unknown = mcp.fails("turns", json!({"session": "nosuch"}));
    assert_eq!(unknown["error"]["code"], "session_unknown", "{unknown:#}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no session named") && m.contains("hook install")),
        "{unknown:#}"
    );
    assert_eq!(candidates(&unknown), ["3f2a1c9d-aaaa", "b7e1"]);
    // A session the environment names that no hook has reported yet: the same refusal.
    drop(mcp);
    let Some(mut env) = Mcp::start(&ws, &[], &[("FILEWATCHD_SESSION", "not-yet")]) else {
        return;
    };
    let unknown = env.fails("turn_changes", json!({}));
    assert_eq!(unknown["error"]["code"], "session_unknown", "{unknown:#}");
    assert_eq!(candidates(&unknown), ["3f2a1c9d-aaaa", "b7e1"]);
    // A seq no state has: the message names the tool that lists them, not a CLI command.
    let bad = env.fails("diff_since", json!({"seq": 999999}));
    let message = bad["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("file_history") && !message.contains("filewatchd history"),
        "{bad:#}"
    );
}

/// Hooks of one agent process running at once (opencode runs its plugin's hooks in
/// parallel): each one's session is in the record, none lost to another's write (the
/// record's own unit test races writers harder, in threads).
#[test]
fn parallel_hooks_of_one_process_lose_no_session() {
    let ws = Workspace::new();
    let _daemon = Daemon::start_in_home(&ws);
    let state = ws.home_state_of(ws.root()).expect("the daemon's state directory");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let payloads = tempfile::tempdir().unwrap();
    let fixture = hook_fixture("claude-code", "UserPromptSubmit", ws.root());
    for round in 0..3 {
        let names: Vec<String> = (0..12).map(|i| format!("par-{round}-{i}")).collect();
        let mut script = String::new();
        for name in &names {
            let payload = payloads.path().join(format!("{name}.json"));
            std::fs::write(&payload, fixture.replace("fixture-session-1", name)).unwrap();
            script.push_str(&format!("{BIN} hook claude-code < {} & ", payload.display()));
        }
        script.push_str("wait");
        let ran = mcp.run(&["sh", "-c", &script], "");
        assert_eq!(ran["status"], 0, "{ran:#}");
        let record = std::fs::read_dir(state.join("agents"))
            .unwrap()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{}-", mcp.agent_pid()))
            })
            .expect("the agent's record");
        let record: Value = serde_json::from_slice(&std::fs::read(record.path()).unwrap()).unwrap();
        let recorded: Vec<&str> = record["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .filter_map(|s| s["session"].as_str())
            .collect();
        let lost: Vec<&String> = names.iter().filter(|n| !recorded.contains(&n.as_str())).collect();
        assert!(lost.is_empty(), "round {round}: lost {lost:?} of {recorded:?}");
    }
}
