//! An auto-compaction in the middle of a turn must not end it (what is written after it would
//! fall outside any turn, and the undo be refused): each agent's real event sequence around one
//! (read from the agents' sources, see tests/fixtures/hooks/README.md) keeps the turn open, and
//! Codex `notify` labels a resumed thread's turn with its own prompt, not all the thread's.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;
use serde_json::{Value, json};

const SESSION: &str = "fixture-session-1";
const PROMPT: &str = "Rename fn to fx and update the callers";

fn fixture(agent: &str, event: &str, root: &Path) -> String {
    let path = format!(
        "{}/tests/fixtures/hooks/{agent}/{event}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.replace("/tmp/FIXTURE_CWD", &root.to_string_lossy())
}

/// Runs `filewatchd hook <agent> [args]` with `stdin` and checks the agent-facing contract.
fn run_hook(ws: &Workspace, agent: &str, args: &[&str], stdin: &str) {
    let mut cmd: Command = ws.command();
    cmd.args(["hook", agent]).args(args);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn the hook");
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().expect("hook output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{agent} {args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{agent} printed on stdout");
    assert_eq!(stderr, "", "{agent} warned");
}

/// One step of an agent's sequence: an event it fires, or a write its tools make.
enum Step<'a> {
    Event(&'a str),
    Envelope(Value),
    Write(&'a str),
}

/// Plays `steps`, then checks: one ended turn labelled with the prompt holding every write, and
/// an undo that is applied (nothing "outside") and removes exactly those files.
fn one_turn_across_compaction(agent: &str, session: &str, steps: &[Step]) {
    let ws = Workspace::new();
    ws.write("keep.txt", "kept\n");
    let daemon = Daemon::start_in_home(&ws);
    let before = snapshot(ws.root());
    let mut written = Vec::new();
    for step in steps {
        match step {
            Step::Event(name) => run_hook(&ws, agent, &[], &fixture(agent, name, ws.root())),
            Step::Envelope(body) => {
                let body = body
                    .to_string()
                    .replace(PLACEHOLDER, &ws.root().to_string_lossy());
                run_hook(&ws, agent, &[], &body)
            }
            Step::Write(path) => {
                ws.sh(&format!("echo {path} > {path}"));
                written.push(*path);
            }
        }
    }
    let turns = daemon.turn_list(session);
    assert_eq!(turns.len(), 1, "{agent}: one prompt, one turn: {turns:#?}");
    let turn = expect(200, daemon.get(&format!("/v1/sessions/{session}/turns/1")));
    assert_eq!(turn["label"], PROMPT, "{agent}: {turn:#}");
    assert!(!turn["ended_at"].is_null(), "{agent}: {turn:#}");
    assert_eq!(changed_paths(&turn), set(written), "{agent}: {turn:#}");
    rollback_applied(daemon.undo(session, json!({})));
    assert_tree_eq(&before, &snapshot(ws.root()), agent);
}

/// Stands for the workspace root in envelopes; replaced when a step is played.
const PLACEHOLDER: &str = "/tmp/FIXTURE_CWD";

fn opencode(event: &str) -> Value {
    let event: Value =
        serde_json::from_str(&fixture("opencode", event, Path::new(PLACEHOLDER))).expect("json");
    json!({"directory": PLACEHOLDER, "event": event})
}

/// Claude Code: PreCompact (trigger auto) → SessionStart (source compact) → PostCompact, then
/// the turn goes on until Stop.
#[test]
fn claude_code_auto_compaction_keeps_the_turn() {
    use Step::*;
    one_turn_across_compaction(
        "claude-code",
        SESSION,
        &[
            Event("SessionStart"),
            Event("UserPromptSubmit"),
            Write("first.txt"),
            Event("PreCompact"),
            Event("SessionStart-compact"),
            Event("PostCompact"),
            Write("after-compaction.txt"),
            Event("Stop"),
            Event("SessionEnd"),
        ],
    );
}

/// Codex: PreCompact → PostCompact → SessionStart (source compact), same turn_id, then Stop.
#[test]
fn codex_auto_compaction_keeps_the_turn() {
    use Step::*;
    one_turn_across_compaction(
        "codex",
        SESSION,
        &[
            Event("SessionStart"),
            Event("UserPromptSubmit"),
            Write("first.txt"),
            Event("PreCompact"),
            Event("PostCompact"),
            Event("SessionStart-compact"),
            Write("after-compaction.txt"),
            Event("Stop"),
        ],
    );
}

/// Gemini CLI compresses inside the turn (client.ts, tryCompressChat): PreCompress (auto), no
/// SessionStart; BeforeAgent and AfterAgent fire once per prompt_id.
#[test]
fn gemini_cli_compression_keeps_the_turn() {
    use Step::*;
    one_turn_across_compaction(
        "gemini-cli",
        SESSION,
        &[
            Event("SessionStart"),
            Event("BeforeAgent"),
            Write("first.txt"),
            Event("PreCompress"),
            Write("after-compaction.txt"),
            Event("AfterAgent"),
            Event("SessionEnd"),
        ],
    );
}

/// opencode compacts inside the prompt loop (session/compaction.ts): session.compacted and a
/// synthetic "continue" user message (message.updated, not chat.message); the session stays
/// busy until the loop ends, then status idle and session.idle.
#[test]
fn opencode_compaction_keeps_the_turn() {
    use Step::*;
    let chat: Value =
        serde_json::from_str(&fixture("opencode", "chat.message", Path::new(PLACEHOLDER))).expect("json");
    let synthetic = json!({"type": "message.updated", "properties": {"info": {
        "id": "msg_fixture_continue", "sessionID": SESSION, "role": "user",
        "time": {"created": 1767225609000_u64}, "agent": "build",
        "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}}});
    one_turn_across_compaction(
        "opencode",
        SESSION,
        &[
            Envelope(opencode("session.created")),
            Envelope(json!({"hook": "chat.message", "directory": PLACEHOLDER,
                "input": chat["input"], "output": chat["output"]})),
            Write("first.txt"),
            Envelope(opencode("session.compacted")),
            Envelope(json!({"directory": PLACEHOLDER, "event": synthetic})),
            Write("after-compaction.txt"),
            Envelope(opencode("session.status")),
            Envelope(opencode("session.idle")),
        ],
    );
}

/// pi (0.73.1, agent-session.js): an overflow compaction runs between agent_end and
/// `agent.continue()`; the extension does not forward that agent_end (its last message is an
/// error, integrations/test/pi.test.mjs), so the daemon sees session_start (resume), the
/// continued run and its agent_end.
#[test]
fn pi_compaction_keeps_the_turn() {
    use Step::*;
    let envelope = |event: Value| json!({"session_id": "pi-1", "cwd": PLACEHOLDER, "event": event});
    one_turn_across_compaction(
        "pi",
        "pi-1",
        &[
            Envelope(envelope(json!({"type": "session_start"}))),
            Envelope(envelope(json!({"type": "before_agent_start", "prompt": PROMPT}))),
            Write("first.txt"),
            Envelope(envelope(json!({"type": "session_start"}))),
            Envelope(envelope(json!({"type": "agent_start"}))),
            Write("after-compaction.txt"),
            Envelope(envelope(json!({"type": "agent_end"}))),
            Envelope(envelope(json!({"type": "session_shutdown"}))),
        ],
    );
}

/// Codex `notify` on a resumed thread: `input-messages` holds every prompt so far. The turn
/// is labelled with its own prompt (the last), not all of them joined.
#[test]
fn codex_notify_labels_a_resumed_turn_with_its_own_prompt() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    let completion = |messages: &[&str]| {
        let mut payload: Value =
            serde_json::from_str(&fixture("codex", "notify-agent-turn-complete", ws.root())).expect("json");
        payload["input-messages"] = json!(messages);
        payload.to_string()
    };
    run_hook(&ws, "codex", &[&completion(&["first prompt"])], "");
    ws.write("second.txt", "by the second prompt\n");
    run_hook(
        &ws,
        "codex",
        &[&completion(&["first prompt", "second prompt"])],
        "",
    );
    let turn = expect(200, daemon.get(&format!("/v1/sessions/{SESSION}/turns/1")));
    assert_eq!(turn["label"], "second prompt", "{turn:#}");
    assert_eq!(changed_paths(&turn), set(["second.txt"]), "{turn:#}");
}
