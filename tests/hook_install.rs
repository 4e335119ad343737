//! `filewatchd hook install|uninstall`: merging into the agents' settings in place (the user's
//! formatting and comments kept), idempotence, an uninstall that gives back the original byte
//! for byte, and backups kept out of the workspace.

use crate::common::install::*;
use serde_json::Value;

/// A settings file that already holds someone else's hooks and keys.
const CLAUDE_BEFORE: &str = r#"{
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]
    }
}
"#;

/// Install keeps everything else, a second install changes nothing, uninstall restores the
/// original bytes.
fn round_trip(agent: &str, rel: &str, before: &str, events: &[&str]) {
    let t = Installer::new();
    let path = t.ws.path(rel);
    t.ws.write(rel, before);

    let dry = t.install(agent, &["--dry-run"]);
    assert!(dry.contains("would install"), "{dry}");
    assert_eq!(read(&path), before, "a dry run wrote");

    let out = t.install(agent, &[]);
    assert!(out.contains(&path.display().to_string()), "{out}");
    let installed = read(&path);
    let settings = json_at(&path);
    let original: Value = serde_json::from_str(before).unwrap();
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

    let again = t.install(agent, &[]);
    assert!(again.contains("already installed"), "{again}");
    assert_eq!(read(&path), installed, "a second install changed the file");

    t.uninstall(agent, &[]);
    assert_eq!(read(&path), before, "uninstall did not restore the original");
}

#[test]
fn claude_code_install_merges_and_uninstall_restores() {
    round_trip(
        "claude-code",
        ".claude/settings.local.json",
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
    let t = Installer::new();
    let rel = ".claude/settings.local.json";
    t.ws.write(rel, CLAUDE_BEFORE);
    t.install("claude-code", &[]);
    let mut edited = json_at(&t.ws.path(rel));
    edited["theme"] = Value::from("dark");
    t.ws.write(rel, serde_json::to_string_pretty(&edited).unwrap());
    t.uninstall("claude-code", &[]);
    let after = json_at(&t.ws.path(rel));
    assert_eq!(after["theme"], "dark", "the user's later edit was lost");
    assert_eq!(commands(&after, "Stop"), vec!["notify-send done".to_string()]);
    assert!(commands(&after, "UserPromptSubmit").is_empty(), "{after:#}");
}

#[test]
fn a_file_install_created_is_removed_by_uninstall() {
    let t = Installer::new();
    for (agent, rel) in [
        ("claude-code", ".claude/settings.local.json"),
        ("gemini-cli", ".gemini/settings.json"),
        ("opencode", ".opencode/plugin/filewatchd.js"),
        ("pi", ".pi/extensions/filewatchd.ts"),
    ] {
        t.install(agent, &[]);
        assert!(t.ws.path(rel).is_file(), "{agent}: {rel} not written");
        t.uninstall(agent, &[]);
        assert!(!t.ws.path(rel).exists(), "{agent}: {rel} left behind");
        // Nor the directories install made for it: an empty `.claude/` marks a project root.
        let top = rel.split('/').next().unwrap_or_default();
        assert!(!t.ws.path(top).exists(), "{agent}: an empty {top}/ left behind");
    }
    // A directory that holds something else stays.
    t.ws.write(".claude/commands/review.md", "review it\n");
    t.install("claude-code", &[]);
    t.uninstall("claude-code", &[]);
    assert!(t.ws.path(".claude/commands/review.md").is_file());
}

/// A file without filewatchd's entries is not rewritten by uninstall.
#[test]
fn uninstall_without_our_entries_leaves_the_file_byte_for_byte() {
    let t = Installer::new();
    let compact = "{\"hooks\":{\"Stop\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"say done\"}]}]},\"model\":\"opus\"}";
    for (agent, rel) in [
        ("claude-code", ".claude/settings.local.json"),
        ("gemini-cli", ".gemini/settings.json"),
        ("codex", ".codex/hooks.json"),
    ] {
        t.ws.write(rel, compact);
        let out = t.uninstall(agent, &[]);
        assert!(out.contains("nothing to remove"), "{agent}: {out}");
        assert!(!out.contains("removed from"), "{agent}: {out}");
        assert_eq!(read(&t.ws.path(rel)), compact, "{agent}: the file was rewritten");
    }
}

/// Install adds filewatchd's lines and changes none of the user's.
#[test]
fn install_keeps_the_users_formatting() {
    let t = Installer::new();
    let rel = ".claude/settings.local.json";
    let before = "{\n\t\"permissions\": {\"allow\": [\"Bash(npm test)\", \"Read\"]},\n\t\"hooks\": {\n\t\t\"Notification\": [\n\t\t\t{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"audit\"}]}\n\t\t]\n\t},\n\t\"model\": \"opus\"\n}\n";
    t.ws.write(rel, before);
    t.install("claude-code", &[]);
    let after = read(&t.ws.path(rel));
    assert!(
        only_lines_added(before, &after),
        "install changed the user's lines:\n{after}"
    );
    assert!(
        after.contains("\t\t\"UserPromptSubmit\": ["),
        "not in the file's own indentation:\n{after}"
    );
    t.uninstall("claude-code", &[]);
    assert_eq!(read(&t.ws.path(rel)), before);
}

/// Gemini accepts comments in settings.json, so install and uninstall do too.
#[test]
fn gemini_settings_with_comments_are_edited_keeping_them() {
    let t = Installer::new();
    let rel = ".gemini/settings.json";
    let before = "{\n  // my theme\n  \"ui\": {\"theme\": \"GitHub\"}, /* trailing comma next */\n  \"general\": {\"vimMode\": true},\n}\n";
    t.ws.write(rel, before);
    let out = t.install("gemini-cli", &[]);
    assert!(out.contains("installed into"), "{out}");
    let installed = read(&t.ws.path(rel));
    assert!(
        only_lines_added(before.trim_end_matches("}\n"), &installed),
        "{installed}"
    );
    assert!(installed.contains("\"BeforeAgent\""), "{installed}");

    // An edit after install: uninstall strips only ours, the comments stay.
    t.ws.write(rel, installed.replace("// my theme", "// my new theme"));
    t.uninstall("gemini-cli", &[]);
    let after = read(&t.ws.path(rel));
    assert_eq!(after, before.replace("// my theme", "// my new theme"));
}

/// The original is kept in filewatchd's state directory, never in the workspace,
/// and uninstall leaves no backup behind, whether or not the file was edited since.
#[test]
fn backups_live_in_the_state_directory_and_go_with_uninstall() {
    for edit_between in [false, true] {
        let t = Installer::new();
        let rel = ".gemini/settings.json";
        t.ws.write(rel, "{\"general\": {\"vimMode\": true}}\n");
        let out = t.install("gemini-cli", &[]);
        let in_workspace = files_under(t.ws.root());
        assert_eq!(
            in_workspace,
            vec![t.ws.path(rel)],
            "install left files in the workspace"
        );
        let saved = t.state_files();
        assert!(
            saved
                .iter()
                .any(|p| p.to_string_lossy().contains("hook-backups/settings.json-")),
            "no backup in the state directory: {saved:?}"
        );
        assert!(
            out.contains("hook-backups"),
            "the output does not say where: {out}"
        );
        if edit_between {
            let edited = read(&t.ws.path(rel)).replace("true", "false");
            t.ws.write(rel, edited);
        }
        t.uninstall("gemini-cli", &[]);
        assert_eq!(
            files_under(t.ws.root()),
            vec![t.ws.path(rel)],
            "edited: {edit_between}"
        );
        assert!(
            t.state_files().is_empty(),
            "a backup was left: {:?}",
            t.state_files()
        );
    }
}

/// A backup an earlier version left beside the file is still the original, and goes away.
#[test]
fn a_legacy_backup_beside_the_file_is_used_and_removed() {
    let t = Installer::new();
    let rel = ".codex/hooks.json";
    let original = "{\"hooks\": {}}\n";
    t.ws.write(rel, original);
    t.install("codex", &[]);
    let installed = read(&t.ws.path(rel));
    // What an earlier version left: the original beside the file, no state backup.
    for file in t.state_files() {
        std::fs::remove_file(file).unwrap();
    }
    t.ws.write(".codex/hooks.json.filewatchd-backup", original);
    assert_eq!(read(&t.ws.path(rel)), installed);
    t.uninstall("codex", &[]);
    assert_eq!(read(&t.ws.path(rel)), original);
    assert_eq!(files_under(t.ws.root()), vec![t.ws.path(rel)]);
}

#[test]
fn codex_notify_is_merged_into_config_toml_and_removed_exactly() {
    let t = Installer::new();
    let config = t.home().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let before = "# my settings\nmodel = \"gpt-5-codex\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n";
    std::fs::write(&config, before).unwrap();
    let said = t.install("codex", &["--notify"]);
    assert!(
        said.contains("/proc/PID/cmdline") && said.contains("prefer Codex's hooks"),
        "{said}"
    );
    let installed = read(&config);
    assert!(
        installed.contains("# my settings") && installed.contains("[profiles.fast]"),
        "{installed}"
    );
    assert!(installed.contains("\"hook\", \"codex\"]"), "{installed}");
    t.install("codex", &["--notify"]);
    assert_eq!(read(&config), installed);
    t.uninstall("codex", &["--notify"]);
    assert_eq!(read(&config), before);
}

#[test]
fn an_existing_foreign_notify_is_not_replaced() {
    let t = Installer::new();
    let config = t.home().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "notify = [\"my-notifier\"]\n").unwrap();
    let out = t.output(&["hook", "install", "codex", "--notify"]);
    assert_eq!(out.status.code(), Some(1), "a foreign notify must be refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("my-notifier"));
    assert_eq!(read(&config), "notify = [\"my-notifier\"]\n");
}

/// A cloned repository's planted symlinks never carry an install outside the file it means to
/// write: a symlink at the old fixed temp name, at the settings file itself, or as the agent's
/// directory. The file outside keeps its bytes, and a refusal names the symlink.
#[test]
fn install_never_writes_through_a_planted_symlink() {
    let cases = [
        ("claude-code", ".claude", "settings.local.json"),
        ("gemini-cli", ".gemini", "settings.json"),
        ("codex", ".codex", "hooks.json"),
    ];
    for (agent, dir, file) in cases {
        let t = Installer::new();
        let outside = tempfile::tempdir().unwrap();
        let target_rc = outside.path().join("target_rc");
        std::fs::write(&target_rc, "export KEEP=1\n").unwrap();
        let rel = format!("{dir}/{file}");
        t.ws.write(&rel, "{\"$(touch /tmp/PWNED)\": 1}\n");
        let planted = t.ws.path(format!("{rel}.filewatchd-tmp"));
        std::os::unix::fs::symlink(&target_rc, &planted).unwrap();
        let out = t.install(agent, &[]);
        assert!(out.contains(file), "{agent}: {out}");
        assert_eq!(
            read(&target_rc),
            "export KEEP=1\n",
            "{agent}: install wrote through the temp name's symlink"
        );
        assert!(
            std::fs::symlink_metadata(&planted)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{agent}: the planted symlink is not left as it was"
        );

        // The settings file itself a symlink to a file outside: refused, named, untouched.
        let t = Installer::new();
        std::fs::create_dir_all(t.ws.path(dir)).unwrap();
        std::os::unix::fs::symlink(&target_rc, t.ws.path(&rel)).unwrap();
        let out = t.output(&["hook", "install", agent]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("is a symlink"),
            "{agent}: {stderr}"
        );
        assert_eq!(
            read(&target_rc),
            "export KEEP=1\n",
            "{agent}: install read or wrote through the file's symlink"
        );

        // The agent's directory a symlink to a directory outside: nothing lands there.
        let t = Installer::new();
        std::os::unix::fs::symlink(outside.path(), t.ws.path(dir)).unwrap();
        let out = t.output(&["hook", "install", agent]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("is a symlink"),
            "{agent}: {stderr}"
        );
        let landed: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            landed,
            vec![std::ffi::OsString::from("target_rc")],
            "{agent}: install wrote outside the workspace"
        );
    }
}

/// A project's `.claude/settings.json` that is a symlink (a team's shared settings) is neither
/// read nor written by an install into `.claude/settings.local.json`.
#[test]
fn a_symlinked_shared_settings_file_does_not_stop_the_install() {
    let t = Installer::new();
    let outside = tempfile::tempdir().unwrap();
    let shared = outside.path().join("team.json");
    std::fs::write(&shared, "{\"model\": \"opus\"}\n").unwrap();
    std::fs::create_dir_all(t.ws.path(".claude")).unwrap();
    std::os::unix::fs::symlink(&shared, t.ws.path(".claude/settings.json")).unwrap();
    let out = t.install("claude-code", &[]);
    assert!(out.contains("settings.local.json"), "{out}");
    assert_eq!(read(&shared), "{\"model\": \"opus\"}\n");
}
