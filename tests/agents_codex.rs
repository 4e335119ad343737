//! The real-CLI tier for Codex (fixtures shaped from the docs miss what the agent really
//! does): the pinned `@openai/codex` of tests/agents/codex/, driven offline by the scripted
//! model server (tests/common/model.rs), with filewatchd's hooks installed as the README says.
//! Skips (and says why) when `npm ci` has not been run in tests/agents/codex.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::agent_cli::{self, *};
use crate::common::model;
use crate::common::*;
use serde_json::json;

fn codex_bin() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/codex/node_modules/.bin/codex");
    if bin.exists() {
        return Some(bin);
    }
    skip(&format!(
        "{} is missing; run `npm ci --no-audit --no-fund` in tests/agents/codex",
        bin.display()
    ));
    None
}

/// `CODEX_HOME` pointing Codex at the model server, with the workspace trusted (so its
/// `.codex/hooks.json` loads). `extra` goes on top of the file (top-level keys).
fn codex_home(ws: &Workspace, server: &model::ModelServer, extra: &str) -> PathBuf {
    let home = ws.home().join("codex-home");
    std::fs::create_dir_all(&home).expect("codex home");
    let config = format!(
        "{extra}model = \"mock-model\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        server.url,
        ws.root().display()
    );
    std::fs::write(home.join("config.toml"), config).expect("config.toml");
    home
}

/// One `codex exec [resume --last]` run, non-interactive, hooks run without the TUI's trust
/// prompt (`--dangerously-bypass-hook-trust`, as docs/agents.md says for automation).
fn codex_exec(ws: &Workspace, bin: &Path, home: &Path, resume: bool, prompt: &str) {
    let filewatchd = ws.command();
    let mut cmd = Command::new(bin);
    for (key, value) in filewatchd.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.env("CODEX_HOME", home).env("OPENAI_API_KEY", "test-key");
    // The project's hooks run `filewatchd` from PATH (a committed file works on any machine).
    cmd.env("PATH", path_with_filewatchd());
    cmd.current_dir(ws.root()).arg("exec");
    if resume {
        cmd.args(["resume", "--last"]);
    }
    cmd.args([
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--dangerously-bypass-hook-trust",
        prompt,
    ]);
    let out = cmd.stdin(Stdio::null()).output().expect("run codex");
    assert!(
        out.status.success(),
        "codex exec failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn codex_exec_two_prompts_make_two_turns_and_undo_is_exact() {
    let Some(bin) = codex_bin() else { return };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    ws.write("b.txt", "fn two\n");
    let daemon = start_with_hooks(&ws, "codex");
    let server = model::ModelServer::start(two_prompt_script());
    let home = codex_home(&ws, &server, "");
    codex_exec(&ws, &bin, &home, false, "first prompt: edit a");
    let after_first = snapshot(ws.root());
    codex_exec(&ws, &bin, &home, true, "second prompt: edit b");
    let session = only_session(&daemon, &|| format!("{:#?}", server.requests));
    let labels = ["first prompt: edit a", "second prompt: edit b"];
    let paths: [&[&str]; 2] = [&["a.txt"], &["b.txt", "c.txt"]];
    assert_two_turns_and_undo(&daemon, &session, labels, paths, &after_first, ws.root());
    assert_eq!(ws.read("b.txt"), b"fn two\n");
}

/// A user-level `hooks.json` (it runs besides the project's) appending every event's payload
/// to a file: the real sequence, read back by [`recorded_events`].
fn record_events(home: &Path) {
    let log = home.join("events.jsonl");
    let command = format!("cat >> '{}' && echo >> '{}'", log.display(), log.display());
    let hook = json!([{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]);
    let events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreCompact",
        "PostCompact",
        "Stop",
    ];
    let hooks: serde_json::Map<String, serde_json::Value> =
        events.iter().map(|e| (e.to_string(), hook.clone())).collect();
    std::fs::write(home.join("hooks.json"), json!({"hooks": hooks}).to_string()).expect("hooks.json");
}

/// The recorded events, each as `name` or `name:source-or-trigger`.
fn recorded_events(home: &Path) -> Vec<String> {
    agent_cli::recorded_events(&home.join("events.jsonl"), &["source", "trigger"])
}

/// With the real CLI, an auto-compaction inside a turn does not end it: the answer to the tool
/// call reports more tokens than `model_auto_compact_token_limit`, Codex compacts inside the
/// turn (its local compaction: a summary request to the same server) and goes on with the same
/// turn from the summary.
#[test]
fn codex_auto_compaction_in_a_turn_keeps_the_turn_whole() {
    let Some(bin) = codex_bin() else { return };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    let daemon = start_with_hooks(&ws, "codex");
    let script = model::compaction_script();
    let server = model::ModelServer::start_compacting(script, "compact", 90_000);
    let extra = "model_context_window = 100000\nmodel_auto_compact_token_limit = 50000\n";
    let home = codex_home(&ws, &server, extra);
    record_events(&home);
    codex_exec(&ws, &bin, &home, false, "warm-up prompt");
    let after_first = snapshot(ws.root());
    codex_exec(&ws, &bin, &home, true, "compact prompt: edit a twice");
    let events = recorded_events(&home);
    let second_run = &events[events
        .iter()
        .rposition(|e| e.starts_with("SessionStart:resume"))
        .unwrap_or(0)..];
    assert_eq!(
        second_run,
        [
            "SessionStart:resume",
            "UserPromptSubmit",
            "PreCompact:auto",
            "PostCompact:auto",
            "SessionStart:compact",
            "Stop"
        ],
        "{events:?}\n{:#}",
        json!(*server.requests.lock().unwrap())
    );
    assert_compacted_turn(&daemon, &ws, &after_first);
}

/// The compacted prompt is one ended turn with its label, holding the writes from before and
/// after the compaction, and its undo gives back the tree as it was after the warm-up.
fn assert_compacted_turn(daemon: &Daemon, ws: &Workspace, after_first: &Tree) {
    let sessions = expect(200, daemon.get("/v1/sessions"));
    let session = sessions["sessions"][0]["session"]
        .as_str()
        .expect("a session")
        .to_string();
    let turns = daemon.turn_list(&session);
    let labels: Vec<_> = turns.iter().map(|t| t["label"].clone()).collect();
    assert_eq!(
        labels,
        vec![json!("warm-up prompt"), json!("compact prompt: edit a twice")]
    );
    let second = daemon.turn(&session, 2, false);
    assert_eq!(
        changed_paths(&second),
        set(["a.txt", "after.txt", "before.txt"]),
        "{second:#}"
    );
    assert_eq!(ws.read("a.txt"), b"fn ONE\n");
    assert!(turns.iter().all(|t| !t["ended_at"].is_null()), "{turns:#?}");
    rollback_applied(daemon.undo(&session, json!({})));
    assert_tree_eq(after_first, &snapshot(ws.root()), "undo of the compacted turn");
}

/// With the real CLI, the agent can ask what it changed: after its `sed`, the model calls
/// filewatchd's MCP tool `turn_changes` (the `[mcp_servers.filewatchd]` that `hook install
/// codex --mcp` wrote in the trusted project's `.codex/config.toml`) and gets back what that
/// command changed.
#[test]
fn codex_sees_what_its_sed_changed_through_turn_changes() {
    let Some(bin) = codex_bin() else { return };
    let ws = mcp_workspace();
    let _daemon = start_with_hooks(&ws, "codex");
    install_mcp(&ws, "codex");
    let server = sed_then_turn_changes();
    let home = codex_home(&ws, &server, "");
    codex_exec(
        &ws,
        &bin,
        &home,
        false,
        "edit a, then ask filewatchd what changed",
    );
    assert_turn_changes_saw_the_sed(&server);
}
