//! The real-CLI tier for opencode (fixtures shaped from the docs miss what the agent really
//! does): the pinned `opencode-ai` of tests/agents/opencode/, non-interactive (`opencode run`,
//! then `opencode run --continue`), driven offline by the scripted model server speaking OpenAI
//! Chat Completions (tests/common/model_chat.rs) through a custom openai-compatible provider,
//! with filewatchd's plugin installed as the README says. Skips (and says why) when the package
//! is not installed in tests/agents/opencode.

use std::path::Path;

use crate::common::agent_cli::*;
use crate::common::model;
use crate::common::*;
use serde_json::json;

/// The user's opencode.json (in the agent's home, not the workspace): the server as a custom
/// openai-compatible provider, every tool allowed, nothing fetched or shared.
fn opencode_config(ws: &Workspace, server: &model::ModelServer) {
    let dir = agent_home(ws).join(".config/opencode");
    std::fs::create_dir_all(&dir).expect("opencode config dir");
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": format!("{}/v1", server.url), "apiKey": "test-key"},
            "models": {"mock-model": {"name": "Mock", "limit": {"context": 128000, "output": 4096}}}
        }},
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "autoupdate": false,
        "share": "disabled",
        "permission": {"*": "allow"}
    });
    std::fs::write(dir.join("opencode.json"), config.to_string()).expect("opencode.json");
    seed_plugin_deps(&dir);
    seed_plugin_deps(&ws.path(".opencode"));
}

/// opencode installs `@opencode-ai/plugin` from the npm registry into every config directory
/// (`~/.config/opencode`, the project's `.opencode/`) at start-up, and waits for it before it
/// loads plugins; it skips that where `node_modules/` exists and `package-lock.json` lists the
/// package. filewatchd's plugin imports only `node:` modules, so an empty install will do.
fn seed_plugin_deps(dir: &Path) {
    std::fs::create_dir_all(dir.join("node_modules")).expect("node_modules");
    let dep = json!({"@opencode-ai/plugin": "*"});
    let package = json!({"dependencies": dep});
    let lock = json!({"lockfileVersion": 3, "packages": {"": {"dependencies": dep}}});
    std::fs::write(dir.join("package.json"), package.to_string()).expect("package.json");
    std::fs::write(dir.join("package-lock.json"), lock.to_string()).expect("package-lock.json");
}

/// One `opencode run` (continuing the latest session when `resume`), offline but for the server.
fn opencode(ws: &Workspace, bin: &Path, resume: bool, prompt: &str) {
    let mut cmd = agent_command(ws, bin);
    for var in [
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS",
        "OPENCODE_DISABLE_SHARE",
        "OPENCODE_DISABLE_CLAUDE_CODE",
    ] {
        cmd.env(var, "1");
    }
    // No registry: an install attempt fails at once instead of reaching the network.
    cmd.env("npm_config_registry", "http://127.0.0.1:9/")
        .env("npm_config_fetch_retries", "0")
        .env("npm_config_offline", "true");
    cmd.arg("run");
    if resume {
        cmd.arg("--continue");
    }
    cmd.arg(prompt);
    run_agent(cmd, "opencode run");
}

#[test]
fn opencode_run_two_prompts_make_two_turns_and_undo_is_exact() {
    let Some(bin) = agent_bin("opencode", "opencode") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    ws.write("b.txt", "fn two\n");
    let daemon = start_with_hooks(&ws, "opencode");
    let server = model::ModelServer::start(two_prompt_script());
    opencode_config(&ws, &server);
    let prompts = ["first prompt: edit a", "second prompt: edit b"];
    opencode(&ws, &bin, false, prompts[0]);
    let after_first = snapshot(ws.root());
    opencode(&ws, &bin, true, prompts[1]);
    let session = only_session(&daemon, &|| format!("{:#?}", server.requests));
    // `opencode run` puts an argument with a space in double quotes before it joins the
    // arguments into the message: the model, and so the label, gets the prompt quoted.
    let labels = prompts.map(|p| format!("\"{p}\""));
    let received = model_prompts(&server);
    assert!(
        labels.iter().all(|l| received.contains(l)),
        "{labels:?} not in {received:?}"
    );
    let labels = [labels[0].as_str(), labels[1].as_str()];
    let paths: [&[&str]; 2] = [&["a.txt"], &["b.txt", "c.txt"]];
    assert_two_turns_and_undo(&daemon, &session, labels, paths, &after_first, ws.root());
    assert_eq!(ws.read("b.txt"), b"fn two\n");
}

/// The user prompts the model server received (each chat request's last user message).
fn model_prompts(server: &model::ModelServer) -> Vec<String> {
    let requests = server.requests.lock().map(|r| r.clone()).unwrap_or_default();
    requests
        .iter()
        .filter_map(|r| r["body"]["messages"].as_array())
        .map(|messages| model::last_chat_prompt(messages))
        .collect()
}

/// A nearly full context reported with the prompt's first tool call: opencode compacts inside
/// the prompt loop (a summary request, `session.compacted`, a synthetic "continue" message,
/// no `chat.message`) and goes on with a second tool call. Both writes are in the prompt's one
/// turn, and its undo is exact.
#[test]
fn opencode_compaction_mid_prompt_keeps_one_turn_with_every_write() {
    let Some(bin) = agent_bin("opencode", "opencode") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    let daemon = start_with_hooks(&ws, "opencode");
    let server = model::ModelServer::start(commands_in_turn(&[
        "echo before > x.txt",
        "echo after > y.txt && sed -i 's/one/1/' a.txt",
    ]));
    server.overflow_once(model::chat::Overflow::Usage);
    opencode_config(&ws, &server);
    let before = snapshot(ws.root());
    let prompt = "long prompt: write x and y";
    opencode(&ws, &bin, false, prompt);
    let paths = ["a.txt", "x.txt", "y.txt"];
    let label = format!("\"{prompt}\"");
    assert_one_compacted_turn_and_undo(&daemon, &server, &label, &paths, &before, ws.root(), ".opencode");
}

/// With the real CLI, the agent can ask what it changed: after its `sed`, the model calls
/// filewatchd's MCP tool `turn_changes` (`filewatchd_turn_changes`, the server `hook install
/// opencode --mcp` wrote in the project's `opencode.json`) and gets back what that command
/// changed.
#[test]
fn opencode_sees_what_its_sed_changed_through_turn_changes() {
    let Some(bin) = agent_bin("opencode", "opencode") else {
        return;
    };
    let ws = mcp_workspace();
    let _daemon = start_with_hooks(&ws, "opencode");
    install_mcp(&ws, "opencode");
    let server = sed_then_turn_changes();
    opencode_config(&ws, &server);
    opencode(&ws, &bin, false, "edit a, then ask filewatchd what changed");
    assert_turn_changes_saw_the_sed(&server);
}
