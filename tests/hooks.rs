//! `filewatchd hook <agent>` played with each agent's own payloads (tests/fixtures/hooks/,
//! sources in its README) around real edits, and hooks that never hurt the agent.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

fn fixture(agent: &str, event: &str, root: &Path) -> String {
    hook_fixture(agent, event, root)
}

/// Runs `filewatchd hook <agent> [args]` with `stdin`; fails if it outlives the deadline.
fn hook(cmd: Command, agent: &str, args: &[&str], stdin: &str) -> HookRun {
    run_hook(cmd, agent, args, stdin)
}

/// Plays one event and checks the agent-facing contract: exit 0, nothing on stdout.
fn play(ws: &Workspace, agent: &str, event: &str) {
    let run = hook(ws.command(), agent, &[], &fixture(agent, event, ws.root()));
    assert!(run.status.success(), "{agent} {event}: {}", run.stderr);
    assert_eq!(run.stdout, "", "{agent} {event} printed on stdout");
    assert_eq!(run.stderr, "", "{agent} {event} warned");
}

const PROMPT: &str = "Rename fn to fx and update the callers";

/// A turn through the agent's hooks around real edits: the turn has the prompt as label and
/// exactly the edits.
fn one_turn(agent: &str, start: &str, end: &str) -> (Workspace, Daemon) {
    let ws = Workspace::new();
    ws.write("src/a.rs", "fn a() {}\n");
    ws.write("old.txt", "old\n");
    let daemon = Daemon::start_in_home(&ws);
    play(&ws, agent, start);
    ws.sh("sed -i 's/fn/fx/' src/a.rs && rm old.txt && echo new > new.txt");
    play(&ws, agent, end);
    let turn = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    assert_eq!(turn["label"], PROMPT, "{agent}: {turn:#}");
    assert!(
        !turn["ended_at"].is_null(),
        "{agent}: the turn is still open: {turn:#}"
    );
    assert_eq!(
        changed_paths(&turn),
        set(["src/a.rs", "old.txt", "new.txt"]),
        "{agent}: {turn:#}"
    );
    (ws, daemon)
}

#[test]
fn claude_code_prompt_and_stop_make_a_turn() {
    let (ws, daemon) = one_turn("claude-code", "UserPromptSubmit", "Stop");
    // A subagent stopping does not end anything; SessionEnd closes nothing more.
    play(&ws, "claude-code", "SubagentStop");
    let before = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    play(&ws, "claude-code", "SessionEnd");
    let listing = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns"));
    assert_eq!(listing["turns"].as_array().map(Vec::len), Some(1), "{listing:#}");
    let after = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    assert_eq!(after["ended_at"], before["ended_at"], "{after:#}");
}

#[test]
fn claude_code_session_end_closes_a_turn_an_interrupt_left_open() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    play(&ws, "claude-code", "SessionStart");
    play(&ws, "claude-code", "UserPromptSubmit");
    ws.write("x.txt", "x\n");
    // The user pressed Esc: no Stop. The session ends.
    play(&ws, "claude-code", "SessionEnd");
    let turn = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    assert!(!turn["ended_at"].is_null(), "{turn:#}");
    assert_eq!(changed_paths(&turn), set(["x.txt"]));
}

#[test]
fn gemini_cli_before_and_after_agent_make_a_turn() {
    let (ws, daemon) = one_turn("gemini-cli", "BeforeAgent", "AfterAgent");
    let before = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    // The turn has ended: SessionEnd closes nothing more and opens nothing.
    play(&ws, "gemini-cli", "SessionEnd");
    let listing = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns"));
    assert_eq!(listing["turns"].as_array().map(Vec::len), Some(1), "{listing:#}");
    let after = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    assert_eq!(after["ended_at"], before["ended_at"], "{after:#}");
}

#[test]
fn codex_hooks_make_a_turn_with_its_turn_id_as_ref() {
    let (_ws, daemon) = one_turn("codex", "UserPromptSubmit", "Stop");
    let turn = expect(
        200,
        daemon.get("/v1/sessions/fixture-session-1/turns/fixture-turn-1"),
    );
    assert_eq!(turn["turn"], 1);
}

/// Codex `notify` only says a turn completed: filewatchd ends the open turn with the prompt
/// as its label and opens the next, so the first turn's start is the first completion.
#[test]
fn codex_notify_closes_the_turn_and_opens_the_next() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    let payload = fixture("codex", "notify-agent-turn-complete", ws.root());
    // Codex passes the JSON as the last argument, with stdin at /dev/null.
    let first = hook(ws.command(), "codex", &[&payload], "");
    assert!(
        first.status.success() && first.stdout.is_empty(),
        "{}",
        first.stderr
    );
    ws.write("work.txt", "done by the second turn\n");
    let second = hook(ws.command(), "codex", &[&payload], "");
    assert!(second.status.success(), "{}", second.stderr);
    let turn = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    assert_eq!(turn["label"], PROMPT);
    assert_eq!(changed_paths(&turn), set(["work.txt"]));
    let open = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/2"));
    assert!(open["ended_at"].is_null(), "the next turn is open: {open:#}");
}

#[test]
fn opencode_and_pi_envelopes_make_turns() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    let root = ws.root().to_string_lossy().into_owned();
    let chat: Value = serde_json::from_str(&fixture("opencode", "chat.message", ws.root())).expect("json");
    let start = serde_json::json!({"hook": "chat.message", "directory": root, "input": chat["input"], "output": chat["output"]});
    let idle: Value = serde_json::from_str(&fixture("opencode", "session.status", ws.root())).expect("json");
    let end = serde_json::json!({"directory": root, "event": idle});
    assert!(
        hook(ws.command(), "opencode", &[], &start.to_string())
            .status
            .success()
    );
    ws.write("oc.txt", "opencode\n");
    let run = hook(ws.command(), "opencode", &[], &end.to_string());
    assert!(run.status.success() && run.stderr.is_empty(), "{}", run.stderr);
    let turn = expect(200, daemon.get("/v1/sessions/fixture-session-1/turns/1"));
    assert_eq!(
        (turn["label"].as_str(), changed_paths(&turn)),
        (Some(PROMPT), set(["oc.txt"]))
    );

    let envelope =
        |event: Value| serde_json::json!({"session_id": "pi-1", "cwd": root, "event": event}).to_string();
    let begin = envelope(serde_json::json!({"type": "before_agent_start", "prompt": PROMPT}));
    assert!(hook(ws.command(), "pi", &[], &begin).status.success());
    ws.write("pi.txt", "pi\n");
    assert!(
        hook(
            ws.command(),
            "pi",
            &[],
            &envelope(serde_json::json!({"type": "agent_end"}))
        )
        .status
        .success()
    );
    let run = hook(
        ws.command(),
        "pi",
        &[],
        &envelope(serde_json::json!({"type": "agent_settled"})),
    );
    assert!(
        run.status.success() && run.stderr.is_empty(),
        "ending twice is quiet: {}",
        run.stderr
    );
    let turn = expect(200, daemon.get("/v1/sessions/pi-1/turns/1"));
    assert_eq!(
        (turn["label"].as_str(), changed_paths(&turn)),
        (Some(PROMPT), set(["pi.txt"]))
    );
}

/// Daemon down, refusing, or hanging: every agent's hook exits 0 within the deadline, prints
/// nothing on stdout and one warning line on stderr.
#[test]
fn hooks_never_hurt_the_agent() {
    let ws = Workspace::new();
    let hanging = TcpListener::bind("127.0.0.1:0").expect("bind");
    let hanging_url = format!("http://{}", hanging.local_addr().expect("addr"));
    let closed_url = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", listener.local_addr().expect("addr"))
    };
    let cases = [
        ("claude-code", "UserPromptSubmit"),
        ("claude-code", "Stop"),
        ("gemini-cli", "BeforeAgent"),
        ("gemini-cli", "AfterAgent"),
        ("codex", "UserPromptSubmit"),
        ("codex", "Stop"),
    ];
    for url in [None, Some(&closed_url), Some(&hanging_url)] {
        for (agent, event) in cases {
            let mut cmd = ws.command();
            if let Some(url) = url {
                cmd.env("FILEWATCHD_URL", url).env("FILEWATCHD_TOKEN", "t");
            }
            let run = hook(cmd, agent, &[], &fixture(agent, event, ws.root()));
            assert!(
                run.status.success(),
                "{agent} {event} via {url:?}: {:?}",
                run.status
            );
            assert_eq!(run.stdout, "", "{agent} {event} via {url:?} printed on stdout");
            assert_eq!(
                run.stderr.lines().count(),
                1,
                "{agent} {event} via {url:?}: {}",
                run.stderr
            );
        }
    }
    // Not even a bad payload or an unknown agent blocks the agent.
    for (agent, input) in [("claude-code", "not json"), ("no-such-agent", "{}")] {
        let run = hook(ws.command(), agent, &[], input);
        assert!(
            run.status.success() && run.stdout.is_empty(),
            "{agent}: {:?} {}",
            run.status,
            run.stderr
        );
    }
}
