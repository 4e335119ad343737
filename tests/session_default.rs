//! Which session a command means: with several, the one with the latest activity,
//! said in one line on stderr; a unique prefix or `last` names one; `$FILEWATCHD_SESSION`
//! wins; `sessions` shows each one's agent and first prompt.

use std::io::Write;
use std::process::{Output, Stdio};

use crate::common::*;
use serde_json::{Value, json};

const ALPHA: &str = "3f2a1c9d-aaaa-4000-8000-000000000001";
const BETA: &str = "3f2a1c9d-bbbb-4000-8000-000000000002";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn ok(out: Output) -> (String, String) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// One turn of `session` writing `file`.
fn turn(ws: &Workspace, daemon: &Daemon, session: &str, file: &str) {
    daemon.turn_start(session, &format!("write {file}"));
    ws.write(file, format!("{session}\n"));
    daemon.turn_end(session);
}

/// The session of the turn `show --json` shows, and what it said on stderr.
fn shown(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> (Value, String) {
    let (stdout, stderr) = ok(cli_state_with_env(ws, &[&["show", "--json"], args].concat(), env));
    let turn: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (turn["session"].clone(), stderr)
}

#[test]
fn the_default_is_the_session_with_the_latest_activity_said_in_one_line() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, ALPHA, "a.txt");
    // One session: it is the default, and nothing needs saying.
    let (session, stderr) = shown(&ws, &[], &[]);
    assert_eq!((session, stderr.as_str()), (json!(ALPHA), ""));

    turn(&ws, &daemon, BETA, "b.txt");
    let (session, stderr) = shown(&ws, &[], &[]);
    assert_eq!(session, json!(BETA));
    assert_eq!(
        stderr,
        "session 3f2a1c9d-b…, the latest of 2 (--session picks another)\n"
    );

    // An undo is activity too: alpha's makes it the latest (a millisecond after beta's end).
    time_mark();
    // (Beta's file is a conflict for it: left as it is.)
    expect(200, daemon.undo(ALPHA, json!({"on_conflict": "skip"})));
    let (stdout, stderr) = ok(cli_state(&ws, &["redo", "--json"]));
    assert!(
        stderr.starts_with("session 3f2a1c9d-a…, the latest of 2"),
        "{stderr}"
    );
    let redone: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(redone["session"], ALPHA, "{redone:#}");
    assert_eq!(ws.read("a.txt"), format!("{ALPHA}\n").as_bytes());

    // $FILEWATCHD_SESSION wins over the default, and is not announced.
    let (session, stderr) = shown(&ws, &[], &[("FILEWATCHD_SESSION", BETA)]);
    assert_eq!((session, stderr.as_str()), (json!(BETA), ""));
    // ... and --session over both.
    let (session, _) = shown(&ws, &["--session", ALPHA], &[("FILEWATCHD_SESSION", BETA)]);
    assert_eq!(session, json!(ALPHA));
}

#[test]
fn a_unique_prefix_names_a_session_and_an_ambiguous_one_lists_the_candidates() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, ALPHA, "a.txt");
    turn(&ws, &daemon, BETA, "b.txt");
    turn(&ws, &daemon, "b7", "c.txt");

    for (prefix, session) in [("3f2a1c9d-a", ALPHA), ("3f2a1c9d-bb", BETA), ("b", "b7")] {
        let (shown, stderr) = shown(&ws, &["--session", prefix], &[]);
        assert_eq!((shown, stderr.as_str()), (json!(session), ""), "{prefix}");
    }
    // A prefix in $FILEWATCHD_SESSION works the same.
    let (session, _) = shown(&ws, &[], &[("FILEWATCHD_SESSION", "3f2a1c9d-a")]);
    assert_eq!(session, json!(ALPHA));

    let out = cli_state(&ws, &["show", "--session", "3f"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .contains("\"3f\" is the start of 2 sessions (3f2a1c9d-a…, 3f2a1c9d-b…): give more of the name"),
        "{stderr}"
    );
    // No session starts so: the name goes to the daemon as typed, which knows none.
    let out = cli_state(&ws, &["show", "--session", "zz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no session named \"zz\""), "{out:?}");

    // A new turn takes the name exactly as typed: a prefix of one starts a new session.
    ok(cli_state(&ws, &["turn", "start", "--session", "3f2a1c9d-a"]));
    ok(cli_state(&ws, &["turn", "end", "--session", "3f2a1c9d-a"]));
    let sessions = expect(200, daemon.get("/v1/sessions"));
    let names: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["session"].as_str())
        .collect();
    assert_eq!(names, [ALPHA, BETA, "b7", "3f2a1c9d-a"], "{sessions:#}");
}

#[test]
fn session_last_names_the_latest_and_an_exact_name_still_wins() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, ALPHA, "a.txt");
    turn(&ws, &daemon, BETA, "b.txt");

    let (stdout, stderr) = ok(cli_state(&ws, &["undo", "--session", "last", "--json"]));
    let undone: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(undone["session"], BETA, "{undone:#}");
    assert!(stderr.contains("the latest of 2"), "{stderr}");
    assert!(!ws.path("b.txt").exists());
    assert!(ws.path("a.txt").exists());

    // A session that is named `last` is that session.
    turn(&ws, &daemon, "last", "l.txt");
    turn(&ws, &daemon, ALPHA, "a2.txt");
    let (session, _) = shown(&ws, &["--session", "last"], &[]);
    assert_eq!(session, json!("last"));
}

/// Runs `filewatchd hook claude-code` with a payload on stdin.
fn claude_code_hook(ws: &Workspace, payload: &Value) {
    let mut cmd = ws.command();
    cmd.args(["hook", "claude-code"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
    drop(stdin);
    let Some(status) = poll_until(std::time::Duration::from_secs(10), || child.try_wait().unwrap()) else {
        child.kill().ok();
        panic!("the hook did not finish");
    };
    let out = child.wait_with_output().unwrap();
    assert!(status.success() && out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn sessions_show_the_agent_from_the_hook_and_the_first_prompt() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    let cwd = ws.root().display().to_string();
    let prompt = |text: &str| {
        json!({"session_id": "c0ffee00-1111-4000-8000-000000000003", "cwd": cwd,
               "hook_event_name": "UserPromptSubmit", "prompt": text})
    };
    let stop = json!({"session_id": "c0ffee00-1111-4000-8000-000000000003", "cwd": cwd,
                      "hook_event_name": "Stop"});
    claude_code_hook(&ws, &prompt("Add a login form\nwith two fields and a button"));
    ws.write("login.html", "<form></form>\n");
    claude_code_hook(&ws, &stop);
    claude_code_hook(&ws, &prompt("Now style it"));
    claude_code_hook(&ws, &stop);
    // A session marked by hand has no agent.
    daemon.turn_start("by-hand", "typed at a shell");
    daemon.turn_end("by-hand");

    let listed = expect(200, daemon.get("/v1/sessions"));
    let sessions = listed["sessions"].as_array().unwrap();
    let seen: Vec<(Value, Value)> = sessions
        .iter()
        .map(|s| (s["agent"].clone(), s["first_prompt"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (json!("claude-code"), json!("Add a login form")),
            (Value::Null, json!("typed at a shell")),
        ],
        "{listed:#}"
    );

    let (stdout, _) = ok(ws.cli(".", &["sessions"]));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with("c0ffee00-1111-4000-8000-000000000003  claude-code  2 turns  last active ")
            && lines[0].ends_with("  Add a login form"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("by-hand  -  1 turn  ") && lines[1].ends_with("typed at a shell"),
        "{stdout}"
    );
    // The default session's line names its agent.
    let (_, stderr) = ok(ws.cli(".", &["log"]));
    assert_eq!(
        stderr,
        "session by-hand, the latest of 2 (--session picks another)\n"
    );
    let (_, stderr) = ok(ws.cli(".", &["log", "--session", "c0ffee"]));
    assert_eq!(stderr, "");
    time_mark();
    claude_code_hook(&ws, &prompt("and a third"));
    let (_, stderr) = ok(ws.cli(".", &["log"]));
    assert_eq!(
        stderr,
        "session c0ffee00… (claude-code), the latest of 2 (--session picks another)\n"
    );
}

/// A `turn start` without `--session` joins the latest session: said even when it is the only
/// one, as the other commands say which they picked (a new turn in another's session unsaid
/// would be a surprise).
#[test]
fn turn_start_without_a_session_says_which_it_joins() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    turn(&ws, &daemon, "agent-1", "a.txt");
    let (stdout, stderr) = ok(cli_state(&ws, &["turn", "start"]));
    assert_eq!(
        stderr,
        "session agent-1, the only one (--session NAME starts another)\n"
    );
    assert!(stdout.starts_with("started turn 2 of agent-1"), "{stdout}");
    let (_, stderr) = ok(cli_state(&ws, &["turn", "end", "--session", "agent-1"]));
    assert_eq!(stderr, "");
    // Named, nothing needs saying.
    let (_, stderr) = ok(cli_state(&ws, &["turn", "start", "--session", "agent-1"]));
    assert_eq!(stderr, "");
}
