//! The real-CLI tier for Gemini CLI (issue 15): the pinned `@google/gemini-cli` of
//! tests/agents/gemini-cli/, headless (`gemini -p`, then `gemini -p --resume latest`), driven
//! offline by the scripted model server speaking the Gemini API (tests/common/model_gemini.rs)
//! through `GOOGLE_GEMINI_BASE_URL`, with filewatchd's project hooks installed as the README
//! says. Skips (and says why) when `npm ci` has not been run in tests/agents/gemini-cli.

#[path = "common/agent_cli.rs"]
mod agent_cli;
mod common;
#[path = "common/model.rs"]
mod model;

use std::path::Path;
use std::sync::Arc;

use agent_cli::*;
use common::*;
use serde_json::json;

/// The user's `~/.gemini/settings.json`: API-key auth, a fixed model, nothing sent or checked.
fn gemini_settings(ws: &Workspace) {
    let dir = agent_home(ws).join(".gemini");
    std::fs::create_dir_all(&dir).expect("gemini dir");
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": "gemini-2.5-flash"},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false}
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("settings.json");
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
    let daemon = Daemon::start_in_home(&ws);
    let install = ws.cli(".", &["hook", "install", "gemini-cli", "--project"]);
    assert!(install.status.success(), "{install:?}");
    let server = model::ModelServer::start(Arc::new(|prompt: &str| {
        if prompt.contains("second") {
            "sed -i 's/two/2/' b.txt && echo made > c.txt".to_string()
        } else {
            "sed -i 's/one/1/' a.txt".to_string()
        }
    }));
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
