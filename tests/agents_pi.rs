//! The real-CLI tier for pi (fixtures shaped from the docs miss what the agent really does): the
//! pinned `@mariozechner/pi-coding-agent` of tests/agents/pi/, in print mode (`pi -p`, then
//! `pi -p --continue`), driven offline by the scripted model server speaking OpenAI Chat
//! Completions (tests/common/model_chat.rs) through a custom provider in pi's models.json, with
//! filewatchd's extension installed as the README says. Skips (and says why) when `npm ci` has
//! not been run in tests/agents/pi.

use std::path::Path;
use std::process::Command;

use crate::common::agent_cli::*;
use crate::common::model;
use crate::common::*;
use serde_json::json;

/// pi's agent dir (`~/.pi/agent` of the agent's home) with a models.json naming the server.
fn pi_models(ws: &Workspace, server: &model::ModelServer) {
    let dir = agent_home(ws).join(".pi/agent");
    std::fs::create_dir_all(&dir).expect("pi agent dir");
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", server.url),
        "api": "openai-completions",
        "apiKey": "test-key",
        "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
        "models": [{"id": "mock-model", "contextWindow": 128000, "maxTokens": 4096}]
    }}});
    std::fs::write(dir.join("models.json"), models.to_string()).expect("models.json");
}

/// One `pi -p` run (continuing the latest session when `resume`), with no network but the
/// model server.
fn pi(ws: &Workspace, bin: &Path, resume: bool, prompt: &str) {
    let mut cmd: Command = agent_command(ws, bin);
    cmd.env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .args(["--provider", "mock", "--model", "mock-model", "-p"]);
    if resume {
        cmd.arg("--continue");
    }
    cmd.arg(prompt);
    run_agent(cmd, "pi -p");
}

#[test]
fn pi_print_two_prompts_make_two_turns_and_undo_is_exact() {
    let Some(bin) = agent_bin("pi", "pi") else { return };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    ws.write("b.txt", "fn two\n");
    let daemon = start_with_hooks(&ws, "pi");
    let server = model::ModelServer::start(two_prompt_script());
    pi_models(&ws, &server);
    let prompts = ["first prompt: edit a", "second prompt: edit b"];
    pi(&ws, &bin, false, prompts[0]);
    let after_first = snapshot(ws.root());
    pi(&ws, &bin, true, prompts[1]);
    let session = only_session(&daemon, &|| format!("{:#?}", server.requests));
    let paths: [&[&str]; 2] = [&["a.txt"], &["b.txt", "c.txt"]];
    assert_two_turns_and_undo(&daemon, &session, prompts, paths, &after_first, ws.root());
    assert_eq!(ws.read("b.txt"), b"fn two\n");
}

/// A context overflow in the middle of a prompt: pi's request after the first tool call fails
/// with "maximum context length", pi compacts (a summary request) and continues the same
/// prompt (`agent.continue()`, no new `before_agent_start`), which runs a second tool call.
/// Both writes are in the prompt's one turn, and its undo is exact.
///
/// This runs pi in RPC mode: in print mode (`pi -p`) pi 0.73.1 returns from the prompt at the
/// overflow's `agent_end` and shuts the session down (`session_shutdown`, which ends the turn)
/// while the compaction and its continuation still run (a `setTimeout` in
/// `_checkCompaction`), and their events reach no extension: those writes are outside any turn.
#[test]
fn pi_compaction_after_overflow_keeps_one_turn_with_every_write() {
    let Some(bin) = agent_bin("pi", "pi") else { return };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    let daemon = start_with_hooks(&ws, "pi");
    let server = model::ModelServer::start(commands_in_turn(&[
        "echo before > x.txt",
        "echo after > y.txt && sed -i 's/one/1/' a.txt",
    ]));
    server.overflow_once(model::chat::Overflow::Error);
    pi_models(&ws, &server);
    let before = snapshot(ws.root());
    let prompt = "long prompt: write x and y";
    pi_rpc_until_compacted(&ws, &bin, prompt);
    let paths = ["a.txt", "x.txt", "y.txt"];
    assert_one_compacted_turn_and_undo(&daemon, &server, prompt, &paths, &before, ws.root(), ".pi");
}

/// `pi --mode rpc`: sends `prompt`, waits (with a deadline) for the `agent_end` that follows
/// the compaction, then closes stdin so pi shuts down.
fn pi_rpc_until_compacted(ws: &Workspace, bin: &Path, prompt: &str) {
    use std::io::{BufRead, Write};
    let mut cmd = agent_command(ws, bin);
    cmd.env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .args(["--provider", "mock", "--model", "mock-model", "--mode", "rpc"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("run pi --mode rpc");
    let mut stdin = child.stdin.take().expect("stdin");
    let line = json!({"id": "p1", "type": "prompt", "message": prompt});
    writeln!(stdin, "{line}").expect("send the prompt");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let (mut compacted, mut seen) = (false, Vec::new());
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            let _ = child.kill();
            panic!("no agent_end after a compaction from pi --mode rpc: {seen:#?}");
        };
        let event: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        compacted |= event["type"] == "compaction_end";
        seen.push(event["type"].clone());
        if compacted && event["type"] == "agent_end" {
            break;
        }
    }
    drop(stdin);
    let status = child.wait().expect("pi exits");
    assert!(status.success(), "pi --mode rpc: {status}");
}
