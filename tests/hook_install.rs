//! `filewatchd hook install|uninstall`: merging into the agents' settings, idempotence, and
//! an uninstall that gives back the original byte for byte.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

fn run(ws: &Workspace, home: &Path, args: &[&str]) -> String {
    let mut cmd = ws.command();
    cmd.env("HOME", home).args(args).arg("--root").arg(ws.root());
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A settings file that already holds someone else's hooks and keys.
const CLAUDE_BEFORE: &str = r#"{
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]
    }
}
"#;

fn json_at(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json")
}

fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|entry| entry["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .collect()
}

/// Install keeps everything else, a second install changes nothing, uninstall restores the
/// original bytes.
fn round_trip(agent: &str, rel: &str, before: &str, events: &[&str]) {
    let ws = Workspace::new();
    let home = tempfile::tempdir().expect("home");
    let path = ws.path(rel);
    ws.write(rel, before);

    let dry = run(&ws, home.path(), &["hook", "install", agent, "--dry-run"]);
    assert!(dry.contains("would install"), "{dry}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        before,
        "a dry run wrote"
    );

    run(&ws, home.path(), &["hook", "install", agent]);
    let installed = std::fs::read(&path).expect("read");
    let settings = json_at(&path);
    let original: Value = serde_json::from_str(before).expect("json");
    for (key, value) in original
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| *k != "hooks")
    {
        assert_eq!(&settings[key], value, "{agent}: {key} lost");
    }
    for (event, entries) in original["hooks"].as_object().into_iter().flatten() {
        let kept = settings["hooks"][event].as_array().expect("event kept");
        for entry in entries.as_array().into_iter().flatten() {
            assert!(kept.contains(entry), "{agent}: {event} entry lost");
        }
    }
    for event in events {
        let ours = commands(&settings, event);
        assert!(
            ours.iter().any(|c| c.ends_with(&format!(" hook {agent}"))),
            "{agent}: no {event} hook in {settings:#}"
        );
    }

    let again = run(&ws, home.path(), &["hook", "install", agent]);
    assert!(again.contains("already installed"), "{again}");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        installed,
        "a second install changed the file"
    );

    run(&ws, home.path(), &["hook", "uninstall", agent]);
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        before,
        "uninstall did not restore the original"
    );
}

#[test]
fn claude_code_install_merges_and_uninstall_restores() {
    round_trip(
        "claude-code",
        ".claude/settings.json",
        CLAUDE_BEFORE,
        &["UserPromptSubmit", "Stop", "SessionEnd"],
    );
}

#[test]
fn gemini_cli_install_merges_and_uninstall_restores() {
    let before = "{\"general\": {\"vimMode\": true},\n \"hooks\": {\"BeforeTool\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint\"}]}]}}\n";
    round_trip(
        "gemini-cli",
        ".gemini/settings.json",
        before,
        &["BeforeAgent", "AfterAgent"],
    );
}

#[test]
fn codex_hooks_install_merges_and_uninstall_restores() {
    let before =
        "{\"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"guard\"}]}]}}";
    round_trip(
        "codex",
        ".codex/hooks.json",
        before,
        &["UserPromptSubmit", "Stop"],
    );
}

#[test]
fn uninstall_after_a_later_edit_removes_only_ours() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().expect("home");
    let rel = ".claude/settings.json";
    ws.write(rel, CLAUDE_BEFORE);
    run(&ws, home.path(), &["hook", "install", "claude-code"]);
    let mut edited = json_at(&ws.path(rel));
    edited["theme"] = Value::from("dark");
    ws.write(rel, serde_json::to_string_pretty(&edited).expect("json"));
    run(&ws, home.path(), &["hook", "uninstall", "claude-code"]);
    let after = json_at(&ws.path(rel));
    assert_eq!(after["theme"], "dark", "the user's later edit was lost");
    assert_eq!(commands(&after, "Stop"), vec!["notify-send done".to_string()]);
    assert!(commands(&after, "UserPromptSubmit").is_empty(), "{after:#}");
}

#[test]
fn a_file_install_created_is_removed_by_uninstall() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().expect("home");
    for (agent, rel) in [
        ("claude-code", ".claude/settings.json"),
        ("opencode", ".opencode/plugin/filewatchd.js"),
        ("pi", ".pi/extensions/filewatchd.ts"),
    ] {
        run(&ws, home.path(), &["hook", "install", agent]);
        assert!(ws.path(rel).is_file(), "{agent}: {rel} not written");
        run(&ws, home.path(), &["hook", "uninstall", agent]);
        assert!(!ws.path(rel).exists(), "{agent}: {rel} left behind");
    }
}

#[test]
fn user_scope_writes_under_home() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().expect("home");
    run(&ws, home.path(), &["hook", "install", "gemini-cli", "--user"]);
    let settings = json_at(&home.path().join(".gemini/settings.json"));
    assert!(!commands(&settings, "BeforeAgent").is_empty(), "{settings:#}");
    assert!(!ws.path(".gemini").exists());
    run(&ws, home.path(), &["hook", "uninstall", "gemini-cli", "--user"]);
    assert!(!home.path().join(".gemini/settings.json").exists());
}

#[test]
fn codex_notify_is_merged_into_config_toml_and_removed_exactly() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().expect("home");
    let config = home.path().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    let before = "# my settings\nmodel = \"gpt-5-codex\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n";
    std::fs::write(&config, before).expect("write");
    run(&ws, home.path(), &["hook", "install", "codex", "--notify"]);
    let installed = std::fs::read_to_string(&config).expect("read");
    assert!(
        installed.contains("# my settings") && installed.contains("[profiles.fast]"),
        "{installed}"
    );
    assert!(installed.contains("\"hook\", \"codex\"]"), "{installed}");
    run(&ws, home.path(), &["hook", "install", "codex", "--notify"]);
    assert_eq!(std::fs::read_to_string(&config).expect("read"), installed);
    run(&ws, home.path(), &["hook", "uninstall", "codex", "--notify"]);
    assert_eq!(std::fs::read_to_string(&config).expect("read"), before);
}

#[test]
fn an_existing_foreign_notify_is_not_replaced() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().expect("home");
    let config = home.path().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    std::fs::write(&config, "notify = [\"my-notifier\"]\n").expect("write");
    let out = ws
        .command()
        .env("HOME", home.path())
        .args(["hook", "install", "codex", "--notify"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "a foreign notify must be refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("my-notifier"));
    assert_eq!(
        std::fs::read_to_string(&config).expect("read"),
        "notify = [\"my-notifier\"]\n"
    );
}
