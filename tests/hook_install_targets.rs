//! Which file `hook install` writes and which binary the hooks run: Claude Code's local
//! settings for a project, `filewatchd` on PATH in project files a team commits, the agents'
//! own directory overrides for `--user`, and a binary that moved since the last install.

use crate::common::BIN as BIN_PATH;
use crate::common::install::*;

const OPENCODE_PLUGIN: &str = include_str!("../integrations/opencode/filewatchd.js");
const PI_EXTENSION: &str = include_str!("../integrations/pi/filewatchd.ts");

/// `.claude/settings.json` is committed by teams; the project install goes to
/// Claude Code's local settings with this machine's path, and says so.
#[test]
fn claude_code_project_install_writes_the_local_settings() {
    let t = Installer::new();
    let out = t.install("claude-code", &[]);
    assert!(
        !t.ws.path(".claude/settings.json").exists(),
        "the shared file was written"
    );
    let local = t.ws.path(".claude/settings.local.json");
    assert!(out.contains(&local.display().to_string()), "{out}");
    assert!(out.contains("do not commit"), "{out}");
    let settings = json_at(&local);
    assert_eq!(
        commands(&settings, "UserPromptSubmit"),
        vec![this_binary_hook("claude-code")]
    );
}

/// An earlier version's hooks in `.claude/settings.json` move to the local file (two copies
/// would mark every turn twice); the shared file gets back exactly what it was.
#[test]
fn claude_code_hooks_move_out_of_the_shared_settings() {
    let t = Installer::new();
    let shared = ".claude/settings.json";
    let team = "{\n  \"permissions\": {\"allow\": [\"Read\"]}\n}\n";
    let old = "{\n  \"permissions\": {\"allow\": [\"Read\"]},\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"/old/bin/filewatchd hook claude-code\"}]}\n    ]\n  }\n}\n";
    t.ws.write(shared, old);
    let out = t.install("claude-code", &[]);
    assert_eq!(read(&t.ws.path(shared)), team, "{out}");
    assert!(out.contains("moved to"), "{out}");
    let local = json_at(&t.ws.path(".claude/settings.local.json"));
    assert_eq!(commands(&local, "Stop"), vec![this_binary_hook("claude-code")]);
    // And uninstall cleans both, whatever is in them.
    t.ws.write(shared, old);
    t.uninstall("claude-code", &[]);
    assert_eq!(read(&t.ws.path(shared)), team);
    assert!(!t.ws.path(".claude/settings.local.json").exists());
}

/// The other agents have no local project file, so their project files name
/// `filewatchd` on PATH (they work on any machine); `--user` files name this binary.
#[test]
fn project_files_without_a_local_variant_work_on_any_machine() {
    let t = Installer::new();
    let this = std::fs::canonicalize(BIN_PATH).unwrap().display().to_string();
    for (agent, rel, event) in [
        ("gemini-cli", ".gemini/settings.json", "BeforeAgent"),
        ("codex", ".codex/hooks.json", "UserPromptSubmit"),
    ] {
        let out = t.install(agent, &[]);
        assert!(out.contains("from PATH"), "{agent}: {out}");
        let settings = json_at(&t.ws.path(rel));
        assert_eq!(
            commands(&settings, event),
            vec![format!("filewatchd hook {agent}")]
        );
        assert!(
            !read(&t.ws.path(rel)).contains(&this),
            "{agent}: this machine's path"
        );
    }
    for (agent, rel) in [
        ("opencode", ".opencode/plugin/filewatchd.js"),
        ("pi", ".pi/extensions/filewatchd.ts"),
    ] {
        t.install(agent, &[]);
        let text = read(&t.ws.path(rel));
        assert!(
            !text.contains(&this),
            "{agent}: this machine's path in the project plugin"
        );
        assert!(text.contains("|| \"filewatchd\""), "{agent}");
        t.install(agent, &["--user"]);
    }
    let user = t.home().join(".config/opencode/plugin/filewatchd.js");
    assert!(read(&user).contains(&this), "the user's plugin names this binary");
}

/// `--user` follows each agent's own override of its directory.
#[test]
fn user_scope_follows_the_agents_directory_overrides() {
    let dirs = tempfile::tempdir().unwrap();
    let dir = |name: &str| {
        let path = dirs.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    };
    let t = Installer::new()
        .with_env("CLAUDE_CONFIG_DIR", &dir("claude"))
        .with_env("CODEX_HOME", &dir("codex"))
        .with_env("GEMINI_CLI_HOME", &dir("gemini-home"))
        .with_env("XDG_CONFIG_HOME", &dir("xdg"))
        .with_env("PI_CODING_AGENT_DIR", &dir("pi-agent"));
    let cases: [(&str, &[&str], &str); 6] = [
        ("claude-code", &[], "claude/settings.json"),
        ("codex", &[], "codex/hooks.json"),
        ("codex", &["--notify"], "codex/config.toml"),
        ("gemini-cli", &[], "gemini-home/.gemini/settings.json"),
        ("opencode", &[], "xdg/opencode/plugin/filewatchd.js"),
        ("pi", &[], "pi-agent/extensions/filewatchd.ts"),
    ];
    for (agent, flags, rel) in cases {
        let flags = [flags, &["--user"]].concat();
        let out = t.install(agent, &flags);
        let path = dirs.path().join(rel);
        assert!(path.is_file(), "{agent}: {rel} not written: {out}");
        assert!(out.contains(&path.display().to_string()), "{out}");
        t.uninstall(agent, &flags);
        assert!(!path.exists(), "{agent}: {rel} left behind");
    }
    assert!(files_under(t.home()).is_empty(), "{:?}", files_under(t.home()));
}

#[test]
fn user_scope_writes_under_home() {
    let t = Installer::new();
    t.install("gemini-cli", &["--user"]);
    let settings = json_at(&t.home().join(".gemini/settings.json"));
    assert!(!commands(&settings, "BeforeAgent").is_empty(), "{settings:#}");
    assert!(!t.ws.path(".gemini").exists());
    t.uninstall("gemini-cli", &["--user"]);
    assert!(!t.home().join(".gemini/settings.json").exists());
}

/// Entries an earlier install wrote for a binary that has moved since are pointed
/// at this one (not kept as "already installed"), and uninstall removes them wherever they
/// point.
#[test]
fn reinstall_after_the_binary_moved_points_at_this_binary() {
    let t = Installer::new();
    for (agent, rel, event) in [
        ("claude-code", ".claude/settings.json", "Stop"),
        ("gemini-cli", ".gemini/settings.json", "AfterAgent"),
        ("codex", ".codex/hooks.json", "Stop"),
    ] {
        let path = t.home().join(rel);
        t.install(agent, &["--user"]);
        let fresh = read(&path);
        let moved = fresh.replace(
            &this_binary_hook(agent),
            &format!("/old/place/filewatchd hook {agent}"),
        );
        std::fs::write(&path, &moved).unwrap();
        let out = t.install(agent, &["--user"]);
        assert!(!out.contains("already installed"), "{agent}: {out}");
        assert_eq!(read(&path), fresh, "{agent}: not pointed at this binary");
        assert_eq!(commands(&json_at(&path), event), vec![this_binary_hook(agent)]);

        std::fs::write(&path, &moved).unwrap();
        t.uninstall(agent, &["--user"]);
        assert!(!path.exists(), "{agent}: the moved binary's entries were left");
    }
}

#[test]
fn codex_notify_of_a_moved_binary_is_replaced_and_removed() {
    let t = Installer::new();
    let config = t.home().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let before = "model = \"o4-mini\"\n";
    std::fs::write(
        &config,
        format!("{before}notify = [\"/old/filewatchd\", \"hook\", \"codex\"]\n"),
    )
    .unwrap();
    t.install("codex", &["--notify"]);
    let this = std::fs::canonicalize(BIN_PATH).unwrap().display().to_string();
    let installed = read(&config);
    assert!(
        installed.contains(&this) && !installed.contains("/old/"),
        "{installed}"
    );
    std::fs::write(
        &config,
        format!("{before}notify = [\"/old/filewatchd\", \"hook\", \"codex\"]\n"),
    )
    .unwrap();
    t.uninstall("codex", &["--notify"]);
    assert_eq!(read(&config), before);
}

/// A plugin an earlier install wrote is not "the original": a reinstall replaces
/// it and uninstall removes it (or puts back the user's own file it had replaced).
#[test]
fn a_plugin_from_an_earlier_install_is_never_taken_for_the_original() {
    for (agent, rel, shipped) in [
        (
            "opencode",
            ".config/opencode/plugin/filewatchd.js",
            OPENCODE_PLUGIN,
        ),
        ("pi", ".pi/agent/extensions/filewatchd.ts", PI_EXTENSION),
    ] {
        let earlier = shipped.replacen("|| \"filewatchd\"", "|| \"/old/place/filewatchd\"", 1);
        for users_own in [None, Some("// my own plugin\n")] {
            let t = Installer::new();
            let path = t.home().join(rel);
            if let Some(own) = users_own {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, own).unwrap();
            }
            t.install(agent, &["--user"]);
            let fresh = read(&path);
            std::fs::write(&path, &earlier).unwrap(); // what the moved binary's install wrote
            t.install(agent, &["--user"]);
            assert_eq!(
                read(&path),
                fresh,
                "{agent}: not replaced by this binary's plugin"
            );
            std::fs::write(&path, &earlier).unwrap();
            t.uninstall(agent, &["--user"]);
            match users_own {
                None => assert!(!path.exists(), "{agent}: the old plugin stays active"),
                Some(own) => assert_eq!(read(&path), own, "{agent}: the user's file not restored"),
            }
        }
    }
}
