//! Whose a write is (issue 48): two agents' turns open at once in one tree, a person editing
//! between their tool calls, each session's tool calls reported through the real
//! `filewatchd hook claude-code` with Claude Code's own payloads; then each session's undo,
//! without `--force`, takes back only its own writes.

use std::path::Path;

use crate::common::*;
use serde_json::{Value, json};

/// Plays one Claude Code hook event for `session`: exit 0, nothing said.
fn claude(ws: &Workspace, session: &str, event: &str, extra: Value) {
    let mut payload = json!({
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": ws.root(),
        "hook_event_name": event,
    });
    if let (Some(payload), Some(extra)) = (payload.as_object_mut(), extra.as_object()) {
        payload.extend(extra.clone());
    }
    let run = run_hook(ws.command(), "claude-code", &[], &payload.to_string());
    assert!(run.status.success(), "{session} {event}: {}", run.stderr);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str()),
        ("", ""),
        "{session} {event}"
    );
}

fn prompt(ws: &Workspace, session: &str, text: &str) {
    claude(ws, session, "UserPromptSubmit", json!({"prompt": text}));
}

fn stop(ws: &Workspace, session: &str) {
    claude(ws, session, "Stop", json!({"stop_hook_active": false}));
}

/// One Bash tool call of `session` that runs `script`.
fn bash(ws: &Workspace, session: &str, id: &str, script: &str) {
    let call = json!({"tool_name": "Bash", "tool_use_id": id, "tool_input": {"command": script}});
    claude(ws, session, "PreToolUse", call.clone());
    ws.sh(script);
    claude(ws, session, "PostToolUse", call);
}

fn start_call(ws: &Workspace, session: &str, id: &str, tool: &str, file: Option<&Path>) {
    let input = match file {
        Some(file) => json!({"file_path": file}),
        None => json!({"command": "true"}),
    };
    let call = json!({"tool_name": tool, "tool_use_id": id, "tool_input": input});
    claude(ws, session, "PreToolUse", call);
}

fn end_call(ws: &Workspace, session: &str, id: &str, tool: &str) {
    let call = json!({"tool_name": tool, "tool_use_id": id, "tool_input": {}, "tool_response": {}});
    claude(ws, session, "PostToolUse", call);
}

/// A CLI command in the workspace (its daemon found from there); its stdout and stderr.
fn cli(ws: &Workspace, args: &[&str]) -> (bool, String) {
    let out = ws.cli(".", args);
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

fn cli_ok(ws: &Workspace, args: &[&str]) -> String {
    let (ok, said) = cli(ws, args);
    assert!(ok, "filewatchd {args:?}:\n{said}");
    said
}

const SHARED: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\n";

fn turn(daemon: &Daemon, session: &str) -> Value {
    expect(200, daemon.get(&format!("/v1/sessions/{session}/turns/1")))
}

/// Each version of `path` with its origin and how its owner was decided, oldest first.
fn origins(daemon: &Daemon, path: &str) -> Vec<(String, String)> {
    let history = expect(200, daemon.get(&format!("/v1/history?path={path}")));
    let versions = history["versions"].as_array().cloned().unwrap_or_default();
    versions
        .iter()
        .map(|v| {
            let text = |key: &str| v[key].as_str().unwrap_or("-").to_string();
            (text("origin"), text("decided"))
        })
        .collect()
}

/// Two Claude Code sessions whose turns overlap and whose tool calls do not, and a person
/// editing between the calls, one edit to a file an agent also edits, in another place.
fn two_sessions_and_a_person() -> (Workspace, Daemon) {
    let ws = Workspace::new();
    ws.write("shared.txt", SHARED);
    ws.write("notes.txt", "my notes\n");
    let daemon = Daemon::start_in_home(&ws);
    prompt(&ws, "alpha", "fix line 2");
    prompt(&ws, "beta", "add b.txt");
    bash(
        &ws,
        "alpha",
        "a1",
        "echo A > a.txt && sed -i 's/^line 2$/line 2 by alpha/' shared.txt",
    );
    // The person, at the keyboard between the agents' tool calls.
    ws.write("notes.txt", "my notes\nmore of my notes\n");
    ws.sh("sed -i 's/^line 8$/line 8 by the person/' shared.txt");
    bash(&ws, "beta", "b1", "echo B > b.txt");
    let edited = ws.root().join("c.txt");
    start_call(&ws, "alpha", "a2", "Write", Some(&edited));
    ws.write("c.txt", "written by alpha's Write tool\n");
    end_call(&ws, "alpha", "a2", "Write");
    stop(&ws, "alpha");
    stop(&ws, "beta");
    (ws, daemon)
}

#[test]
fn each_turn_lists_only_its_own_writes_and_the_persons_are_theirs() {
    let (_ws, daemon) = two_sessions_and_a_person();
    let alpha = turn(&daemon, "alpha");
    assert_eq!(
        changed_paths(&alpha),
        set(["a.txt", "shared.txt", "c.txt"]),
        "{alpha:#}"
    );
    assert_eq!(alpha["counts"]["ambiguous"], 0, "{alpha:#}");
    let beta = turn(&daemon, "beta");
    assert_eq!(changed_paths(&beta), set(["b.txt"]), "{beta:#}");
    assert_eq!(
        origins(&daemon, "notes.txt").last(),
        Some(&("outside".to_string(), "between_tool_calls".to_string()))
    );
    assert_eq!(
        origins(&daemon, "c.txt").last(),
        Some(&("turn".to_string(), "edit_tool".to_string()))
    );
    assert_eq!(
        origins(&daemon, "b.txt").last(),
        Some(&("turn".to_string(), "tool_call".to_string()))
    );
}

#[test]
fn show_and_log_say_how_each_owner_was_decided_and_who_else_wrote_it() {
    let (ws, daemon) = two_sessions_and_a_person();
    let shown = cli_ok(&ws, &["show", "1", "--session", "alpha"]);
    let line = |path: &str| {
        shown
            .lines()
            .find(|l| l.contains(path))
            .unwrap_or_else(|| panic!("{path} is not listed:\n{shown}"))
            .to_string()
    };
    assert!(line("shared.txt").contains("in a tool call"), "{shown}");
    assert!(
        line("shared.txt").contains("also written by you meanwhile"),
        "{shown}"
    );
    assert!(line("c.txt").contains("named by its edit tool"), "{shown}");
    let turn = turn(&daemon, "alpha");
    let shared = turn["changes"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["path"] == "shared.txt"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(shared["decided"], "tool_call", "{turn:#}");
    assert_eq!(shared["also_written_by"], json!(["you"]), "{turn:#}");
    let log = cli_ok(&ws, &["history", "notes.txt"]);
    assert!(log.contains("(you: between tool calls)"), "{log}");
}

#[test]
fn each_undo_takes_back_only_its_own_and_keeps_the_persons_edit_by_a_merge() {
    let (ws, daemon) = two_sessions_and_a_person();
    let plan = cli_ok(&ws, &["undo", "--session", "alpha", "--dry-run"]);
    assert!(
        plan.contains("merged"),
        "the plan says the person's change is kept:\n{plan}"
    );
    assert!(!plan.contains("b.txt") && !plan.contains("notes.txt"), "{plan}");
    assert!(!plan.contains("cannot tell its writes"), "{plan}");
    // The merged result, as a diff from the file now: alpha's line out, the person's kept.
    let diff = cli_ok(&ws, &["undo", "--session", "alpha", "--dry-run", "--diff"]);
    assert!(
        diff.contains("-line 2 by alpha") && diff.contains("+line 2"),
        "{diff}"
    );
    assert!(!diff.contains("-line 8 by the person"), "{diff}");
    cli_ok(&ws, &["undo", "--session", "alpha"]);
    assert!(!ws.path("a.txt").exists() && !ws.path("c.txt").exists());
    let person_only = SHARED.replace("line 8\n", "line 8 by the person\n");
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), person_only);
    assert_eq!(ws.read("notes.txt"), b"my notes\nmore of my notes\n");
    assert_eq!(ws.read("b.txt"), b"B\n");
    cli_ok(&ws, &["undo", "--session", "beta"]);
    assert!(!ws.path("b.txt").exists());
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), person_only);
    // Redo is the exact inverse.
    cli_ok(&ws, &["redo", "--session", "alpha"]);
    let both = person_only.replace("line 2\n", "line 2 by alpha\n");
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), both);
    assert_eq!(ws.read("a.txt"), b"A\n");
    assert_eq!(ws.read("c.txt"), b"written by alpha's Write tool\n");
    // And undone again: the undo and its redo are a pair, not alpha's writes around the
    // person's.
    cli_ok(&ws, &["undo", "--session", "alpha"]);
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), person_only);
    drop(daemon);
}

/// `revert` of one file of alpha's turn takes alpha's change out and keeps the person's later
/// edit to the same file, as the session's undo does.
#[test]
fn a_file_revert_keeps_the_persons_later_edit_by_a_merge() {
    let (ws, daemon) = two_sessions_and_a_person();
    cli_ok(
        &ws,
        &["revert", "--session", "alpha", "--turn", "1", "shared.txt"],
    );
    let person_only = SHARED.replace("line 8\n", "line 8 by the person\n");
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), person_only);
    assert_eq!(ws.read("a.txt"), b"A\n", "only the file asked for");
    drop(daemon);
}

#[test]
fn a_persons_edit_that_meets_the_agents_change_is_a_conflict_that_changes_nothing() {
    let ws = Workspace::new();
    ws.write("shared.txt", SHARED);
    let daemon = Daemon::start_in_home(&ws);
    prompt(&ws, "alpha", "fix line 2");
    bash(
        &ws,
        "alpha",
        "a1",
        "sed -i 's/^line 2$/line 2 by alpha/' shared.txt",
    );
    ws.sh("sed -i 's/^line 3$/line 3 by the person/' shared.txt");
    stop(&ws, "alpha");
    let (ok, said) = cli(&ws, &["undo", "--session", "alpha"]);
    assert!(!ok, "{said}");
    assert!(
        said.contains("line 3 of the file now"),
        "the overlap is named:\n{said}"
    );
    let (_, plan) = cli(&ws, &["undo", "--session", "alpha", "--dry-run", "--diff"]);
    assert!(
        plan.contains("what --force would write"),
        "the diff of a conflict says so:\n{plan}"
    );
    let after = SHARED
        .replace("line 2\n", "line 2 by alpha\n")
        .replace("line 3\n", "line 3 by the person\n");
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), after);
    drop(daemon);
}

/// Writes made while both sessions' calls are open, by a process that descends from neither
/// agent (the test itself, as a person's editor would; with fanotify too): `ambiguous`, unless
/// an edit tool of one of them names the file.
#[test]
fn writes_inside_two_sessions_calls_at_once_stay_ambiguous_unless_an_edit_tool_names_them() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    prompt(&ws, "alpha", "one");
    prompt(&ws, "beta", "two");
    let named = ws.root().join("named.txt");
    start_call(&ws, "alpha", "a1", "Bash", None);
    start_call(&ws, "beta", "b1", "Edit", Some(&named));
    ws.write("unclear.txt", "who?\n");
    ws.write("named.txt", "beta's edit\n");
    end_call(&ws, "beta", "b1", "Edit");
    end_call(&ws, "alpha", "a1", "Bash");
    stop(&ws, "alpha");
    stop(&ws, "beta");
    assert_eq!(
        origins(&daemon, "unclear.txt").last().map(|o| o.0.as_str()),
        Some("ambiguous")
    );
    assert_eq!(
        origins(&daemon, "named.txt").last(),
        Some(&("turn".to_string(), "edit_tool".to_string()))
    );
    assert_eq!(
        changed_paths(&turn(&daemon, "beta")),
        set(["named.txt", "unclear.txt"])
    );
    // An ambiguous write may be alpha's: its undo refuses rather than guess.
    let (ok, said) = cli(&ws, &["undo", "--session", "alpha"]);
    assert!(!ok, "{said}");
    assert!(ws.path("unclear.txt").exists());
}

#[test]
fn a_tool_event_with_no_turn_open_or_no_daemon_never_bothers_the_agent() {
    let ws = Workspace::new();
    // No daemon: the hook says nothing and starts none.
    start_call(&ws, "alpha", "a1", "Bash", None);
    let daemon = Daemon::start_in_home(&ws);
    start_call(&ws, "alpha", "a1", "Bash", None);
    end_call(&ws, "alpha", "a1", "Bash");
    // An end whose start never came, inside a turn: ignored, and from then on the turn's
    // writes outside a call are the person's.
    prompt(&ws, "alpha", "one");
    end_call(&ws, "alpha", "never-started", "Bash");
    ws.write("mine.txt", "the person's\n");
    stop(&ws, "alpha");
    assert_eq!(
        origins(&daemon, "mine.txt").last(),
        Some(&("outside".to_string(), "between_tool_calls".to_string()))
    );
    let answer = daemon.post("/v1/sessions/alpha/tool-calls", json!({"phase": "sideways"}));
    assert_eq!(answer.0, 400, "{:#}", answer.1);
    let answer = expect(400, daemon.post("/v1/sessions/alpha/tool-calls", json!({})));
    assert_eq!(answer["error"]["code"], "bad_request", "{answer:#}");
}

#[test]
fn a_new_turn_of_a_session_that_reported_tool_calls_is_windowed_from_its_start() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    prompt(&ws, "alpha", "one");
    bash(&ws, "alpha", "a1", "echo 1 > one.txt");
    stop(&ws, "alpha");
    prompt(&ws, "alpha", "two");
    // Before the second turn's first call: the person's.
    ws.write("early.txt", "typed while the model thinks\n");
    bash(&ws, "alpha", "a2", "echo 2 > two.txt");
    stop(&ws, "alpha");
    let second = expect(200, daemon.get("/v1/sessions/alpha/turns/2"));
    assert_eq!(changed_paths(&second), set(["two.txt"]), "{second:#}");
}

/// An agent of its own: a bash named `agent-<session>` (a shell is skipped as a hook's wrapper)
/// whose hook reports its ancestry, then (at the test's word,
/// through files in `control`) writes `file` inside its open tool call, then ends the call.
fn agent(ws: &Workspace, control: &Path, session: &str, file: &str) -> std::process::Child {
    let call = |event: &str| {
        json!({"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": ws.root(),
            "hook_event_name": event, "tool_name": "Bash", "tool_use_id": format!("{session}-1"),
            "tool_input": {"command": "write"}})
        .to_string()
    };
    let wait = |name: &str| {
        let flag = control.join(name);
        format!(
            "for i in $(seq 3000); do [ -e '{}' ] && break; sleep 0.01; done",
            flag.display()
        )
    };
    let script = format!(
        "set -e\nprintf 'agent-{session}' > /proc/$$/comm\nprintf '%s' '{pre}' | '{bin}' hook claude-code\ntouch '{ready}'\n{go}\necho {session} > '{file}'\ntouch '{wrote}'\n{end}\nprintf '%s' '{post}' | '{bin}' hook claude-code\n",
        pre = call("PreToolUse"),
        post = call("PostToolUse"),
        bin = BIN,
        ready = control.join(format!("ready-{session}")).display(),
        wrote = control.join(format!("wrote-{session}")).display(),
        go = wait("go"),
        end = wait("end"),
        file = ws.path(file).display(),
    );
    let mut cmd = std::process::Command::new("bash");
    for (key, value) in ws.command().get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.args(["-c", &script])
        .current_dir(ws.root())
        .spawn()
        .expect("spawn the agent")
}

/// With `CAP_SYS_ADMIN` (these tests run as root), fanotify names each file's writer: while
/// two sessions' tool calls are open at once, each agent's file is its own (decided by
/// process), where the windows alone leave both `ambiguous` (the test before).
#[test]
fn files_written_in_two_sessions_calls_at_once_are_told_apart_by_process() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("fanotify needs CAP_SYS_ADMIN: run the tests as root");
        return;
    }
    // fanotify marks the whole file system: alone, the daemon reads only these writers' events
    // while they still run (docs/testing.md).
    let _alone = machine::exclusive();
    let ws = Workspace::new();
    let control = tempfile::tempdir().expect("control dir");
    let daemon = Daemon::start_in_home(&ws);
    assert_eq!(
        daemon.status()["ownership"]["by"],
        "process",
        "{:#}",
        daemon.status()
    );
    prompt(&ws, "alpha", "one");
    prompt(&ws, "beta", "two");
    let mut agents = [
        agent(&ws, control.path(), "alpha", "a.txt"),
        agent(&ws, control.path(), "beta", "b.txt"),
    ];
    let flag = |name: &str| control.path().join(name).exists();
    let both = |step: &str| {
        poll_until(std::time::Duration::from_secs(60), || {
            (flag(&format!("{step}-alpha")) && flag(&format!("{step}-beta"))).then_some(())
        })
    };
    assert!(both("ready").is_some(), "both calls open");
    std::fs::write(control.path().join("go"), "").expect("go");
    assert!(both("wrote").is_some(), "both wrote");
    std::fs::write(control.path().join("end"), "").expect("end");
    for agent in &mut agents {
        assert!(agent.wait().expect("agent").success());
    }
    stop(&ws, "alpha");
    stop(&ws, "beta");
    for (path, session) in [("a.txt", "alpha"), ("b.txt", "beta")] {
        let history = expect(200, daemon.get(&format!("/v1/history?path={path}")));
        let last = history["versions"]
            .as_array()
            .and_then(|v| v.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            (&last["origin"], &last["session"], &last["decided"]),
            (&json!("turn"), &json!(session), &json!("process")),
            "{history:#}"
        );
    }
    assert_eq!(changed_paths(&turn(&daemon, "alpha")), set(["a.txt"]));
    cli_ok(&ws, &["undo", "--session", "beta"]);
    assert!(!ws.path("b.txt").exists());
    assert_eq!(ws.read("a.txt"), b"alpha\n");
}

/// The other side of a merge is not always text: a file the person deleted after the agent
/// edited it is a conflict (nothing to merge into), and a file whose permission bits alone the
/// person changed gets the agent's edit taken out and the person's bits kept.
#[test]
fn a_deleted_file_conflicts_and_a_mode_change_is_kept() {
    let ws = Workspace::new();
    ws.write("gone.txt", "one\n");
    ws.write("tool.sh", "echo one\n");
    let daemon = Daemon::start_in_home(&ws);
    prompt(&ws, "alpha", "edit both");
    bash(
        &ws,
        "alpha",
        "a1",
        "echo two >> gone.txt && echo 'echo two' >> tool.sh",
    );
    ws.sh("rm gone.txt && chmod 755 tool.sh");
    stop(&ws, "alpha");
    let (ok, said) = cli(&ws, &["undo", "--session", "alpha"]);
    assert!(!ok, "{said}");
    assert!(said.contains("gone.txt"), "{said}");
    assert!(!ws.path("gone.txt").exists(), "a refused undo changed nothing");
    let said = cli_ok(&ws, &["undo", "--session", "alpha", "--skip-conflicts"]);
    assert!(said.contains("merged"), "{said}");
    assert_eq!(ws.read("tool.sh"), b"echo one\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(ws.path("tool.sh")).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode.ok(), Some(0o755), "the person's mode is kept");
    assert!(
        !ws.path("gone.txt").exists(),
        "the skipped conflict stays as the person left it"
    );
    drop(daemon);
}

/// Claude Code's `Write` carries the whole file in its payload: a 6 MB one is still reported,
/// and the file is its turn's (named by its edit tool).
#[test]
fn a_write_of_a_large_file_is_still_its_tool_call() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    prompt(&ws, "alpha", "write a big file");
    let content = "x".repeat(6 * 1024 * 1024);
    let file = ws.root().join("big.txt");
    let call = json!({"tool_name": "Write", "tool_use_id": "w1",
        "tool_input": {"file_path": file, "content": content}});
    claude(&ws, "alpha", "PreToolUse", call.clone());
    ws.write("big.txt", &content);
    claude(&ws, "alpha", "PostToolUse", call);
    stop(&ws, "alpha");
    assert_eq!(
        origins(&daemon, "big.txt").last(),
        Some(&("turn".to_string(), "edit_tool".to_string()))
    );
}
