//! The real-CLI tier for Gemini CLI (fixtures shaped from the docs miss what the agent really
//! does): the pinned `@google/gemini-cli` of tests/agents/gemini-cli/, headless (`gemini -p`,
//! then `gemini -p --resume latest`), driven offline by the scripted model server speaking the
//! Gemini API (tests/common/model_gemini.rs) through `GOOGLE_GEMINI_BASE_URL`, with filewatchd's
//! project hooks installed as the README says. Skips (and says why) when `npm ci` has not been
//! run in tests/agents/gemini-cli.

use std::path::Path;

use crate::common::agent_cli::{self, *};
use crate::common::model;
use crate::common::*;
use serde_json::json;

/// The user's `~/.gemini/settings.json`: API-key auth, a fixed model, nothing sent or checked.
fn gemini_settings(ws: &Workspace) {
    let dir = agent_home(ws).join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    std::fs::write(dir.join("settings.json"), base_settings().to_string()).expect("settings.json");
}

fn base_settings() -> serde_json::Value {
    json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": "gemini-2.5-flash"},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false}
    })
}

/// One headless `gemini -p` (resuming the latest session when `resume`), shell commands
/// approved (`--yolo`), the workspace trusted so its project hooks run.
fn gemini(ws: &Workspace, bin: &Path, server: &model::ModelServer, resume: bool, prompt: &str) {
    let mut cmd = agent_command(ws, bin);
    cmd.env("GOOGLE_GEMINI_BASE_URL", &server.url)
        .env("GEMINI_API_KEY", "test-key")
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .env("GEMINI_TELEMETRY_ENABLED", "false")
        .args(["--yolo", "-p", prompt]);
    if resume {
        cmd.args(["--resume", "latest"]);
    }
    run_agent(cmd, "gemini -p");
}

#[test]
fn gemini_headless_two_prompts_make_two_turns_and_undo_is_exact() {
    let Some(bin) = agent_bin("gemini-cli", "gemini") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    ws.write("b.txt", "fn two\n");
    let daemon = start_with_hooks(&ws, "gemini-cli");
    let server = model::ModelServer::start(two_prompt_script());
    gemini_settings(&ws);
    let prompts = ["first prompt: edit a", "second prompt: edit b"];
    gemini(&ws, &bin, &server, false, prompts[0]);
    let after_first = snapshot(ws.root());
    gemini(&ws, &bin, &server, true, prompts[1]);
    let session = only_session(&daemon, &|| format!("{:#?}", server.requests));
    let paths: [&[&str]; 2] = [&["a.txt"], &["b.txt", "c.txt"]];
    assert_two_turns_and_undo(&daemon, &session, prompts, paths, &after_first, ws.root());
    assert_eq!(ws.read("b.txt"), b"fn two\n");
}

/// [`gemini_settings`] plus user hooks (they run besides the project's) appending every
/// event's payload to a file: the real sequence, read back by [`recorded_events`].
fn gemini_settings_recording(ws: &Workspace) -> std::path::PathBuf {
    let dir = agent_home(ws).join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    let log = dir.join("events.jsonl");
    let command = format!("cat >> '{}' && echo >> '{}'", log.display(), log.display());
    let hook = json!([{"matcher": "*", "hooks": [{"name": "recorder", "type": "command",
        "command": command, "timeout": 10000}]}]);
    let events = [
        "SessionStart",
        "BeforeAgent",
        "PreCompress",
        "AfterAgent",
        "SessionEnd",
    ];
    let mut settings = base_settings();
    settings["hooks"] = events.iter().map(|e| (e.to_string(), hook.clone())).collect();
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("settings.json");
    log
}

/// The recorded events, each as `name` or `name:source-trigger-or-reason`.
fn recorded_events(log: &Path) -> Vec<String> {
    agent_cli::recorded_events(log, &["source", "trigger", "reason"])
}

/// With the real CLI, an auto-compaction inside a turn does not end it: in the resumed session,
/// the answer carrying the turn's tool call reports 900k prompt tokens (more than half of
/// gemini-2.5-flash's 1,048,576-token window), so at the request sending the tool's result Gemini
/// CLI compresses the chat inside the turn (two unary `generateContent` calls asking for a
/// `<state_snapshot>`, answered with the summary) and goes on from the summary with a second tool
/// call. The warm-up prompt gives the compression something to fold: it never folds the turn's
/// own prompt, and a first prompt shares its content with the environment context. Both writes
/// are in the prompt's one turn, and its undo is exact.
#[test]
fn gemini_chat_compression_in_a_turn_keeps_one_turn_with_every_write() {
    let Some(bin) = agent_bin("gemini-cli", "gemini") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    let daemon = start_with_hooks(&ws, "gemini-cli");
    let script = model::compaction_script();
    let server = model::ModelServer::start_compacting(script, "compact", 900_000);
    let log = gemini_settings_recording(&ws);
    let prompts = ["warm-up prompt", "compact prompt: edit a twice"];
    gemini(&ws, &bin, &server, false, prompts[0]);
    let after_first = snapshot(ws.root());
    gemini(&ws, &bin, &server, true, prompts[1]);
    let requests = server.requests.lock().map(|r| r.clone()).unwrap_or_default();
    let context = || format!("{:#}", json!(requests));
    let snapshots = requests
        .iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.contains(":generateContent")))
        .filter(|r| r["body"].to_string().contains("state_snapshot"))
        .count();
    assert_eq!(snapshots, 2, "the summary and its check: {}", context());
    let events = recorded_events(&log);
    let second_run = &events[events
        .iter()
        .rposition(|e| e.starts_with("SessionStart:"))
        .unwrap_or(0)..];
    assert_eq!(
        second_run,
        [
            "SessionStart:resume",
            "BeforeAgent",
            "PreCompress:auto",
            "PreCompress:auto",
            "PreCompress:auto",
            "AfterAgent",
            "SessionEnd:exit"
        ],
        "{events:?}\n{}",
        context()
    );
    assert_eq!(ws.read("a.txt"), b"fn ONE\n", "{}", context());
    let session = only_session(&daemon, &context);
    let paths: [&[&str]; 2] = [&["warm.txt"], &["a.txt", "after.txt", "before.txt"]];
    assert_two_turns_and_undo(&daemon, &session, prompts, paths, &after_first, ws.root());
}

/// With the real CLI, the agent can ask what it changed: after its `sed`, the model calls
/// filewatchd's MCP tool `turn_changes` (`mcp_filewatchd_turn_changes`, the server `hook
/// install gemini-cli --mcp` wrote in `.gemini/settings.json`) and gets back what that command
/// changed.
#[test]
fn gemini_sees_what_its_sed_changed_through_turn_changes() {
    let Some(bin) = agent_bin("gemini-cli", "gemini") else {
        return;
    };
    let ws = mcp_workspace();
    let _daemon = start_with_hooks(&ws, "gemini-cli");
    install_mcp(&ws, "gemini-cli");
    let server = sed_then_turn_changes();
    gemini_settings(&ws);
    gemini(
        &ws,
        &bin,
        &server,
        false,
        "edit a, then ask filewatchd what changed",
    );
    assert_turn_changes_saw_the_sed(&server);
}

/// Issue 48 with two real CLIs side by side: a Gemini CLI session and a Claude Code session in
/// one tree, their turns overlapping and their tool calls not (Gemini's answer after its tool
/// call waits at a gate while Claude Code runs a whole prompt), the person editing between
/// the calls. Each turn lists only its own writes, and Gemini's undo takes back only its own.
#[test]
fn gemini_beside_claude_code_each_turn_is_its_own() {
    let (Some(gemini_bin), Some(claude_bin)) = (
        agent_bin("gemini-cli", "gemini"),
        agent_bin("claude-code", "claude"),
    ) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("notes.txt", "my notes\n");
    let daemon = start_with_hooks(&ws, "gemini-cli");
    let install = ws.cli(".", &["hook", "install", "claude-code", "--project"]);
    assert!(install.status.success(), "{install:?}");
    let server = model::ModelServer::start(std::sync::Arc::new(|prompt: &str| {
        if prompt.contains("gemini") {
            "echo GATE-gemini && echo G > g.txt".to_string()
        } else {
            "echo C > c.txt".to_string()
        }
    }));
    server.gate("gemini");
    gemini_settings(&ws);
    std::thread::scope(|scope| {
        let running = scope.spawn(|| gemini(&ws, &gemini_bin, &server, false, "gemini: add g"));
        let held = poll_until(std::time::Duration::from_secs(120), || {
            server.held_at("gemini").then_some(())
        });
        assert!(
            held.is_some(),
            "gemini's tool result never came back: {:#?}",
            server.requests
        );
        ws.write("notes.txt", "my notes\nmore of my notes\n");
        claude(&ws, &claude_bin, &server, "claude: add c");
        server.open("gemini");
        running.join().expect("gemini's run");
    });
    let sessions = expect(200, daemon.get("/v1/sessions"));
    let by_agent = |agent: &str| {
        let listed = sessions["sessions"].as_array().into_iter().flatten();
        let found = listed.clone().find(|s| s["agent"] == agent);
        let name = found
            .and_then(|s| s["session"].as_str())
            .unwrap_or_else(|| panic!("{sessions:#}"));
        daemon.turn(name, 1, false)
    };
    let (gemini_turn, claude_turn) = (by_agent("gemini-cli"), by_agent("claude-code"));
    assert_eq!(changed_paths(&gemini_turn), set(["g.txt"]), "{gemini_turn:#}");
    assert_eq!(changed_paths(&claude_turn), set(["c.txt"]), "{claude_turn:#}");
    let session = gemini_turn["session"].as_str().unwrap_or_default();
    let out = ws.cli(".", &["undo", "--session", session]);
    assert!(out.status.success(), "{out:?}");
    assert!(!ws.path("g.txt").exists());
    assert_eq!(ws.read("c.txt"), b"C\n");
    assert_eq!(ws.read("notes.txt"), b"my notes\nmore of my notes\n");
}

/// One `claude -p` in the workspace against the scripted server, Bash allowed.
fn claude(ws: &Workspace, bin: &Path, server: &model::ModelServer, prompt: &str) {
    let mut cmd = agent_command(ws, bin);
    cmd.env("CLAUDE_CONFIG_DIR", agent_home(ws).join(".claude"))
        .env("ANTHROPIC_BASE_URL", &server.url)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["-p", "--allowedTools", "Bash", "--output-format", "json", prompt]);
    run_agent(cmd, "claude -p");
}
