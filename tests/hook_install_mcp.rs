//! `filewatchd hook install|uninstall <agent> --mcp`: the `filewatchd mcp` server merged into
//! each agent's MCP configuration (others' servers kept byte for byte), a second install that
//! changes nothing, an uninstall that takes out only filewatchd's server, malformed files
//! refused without being touched, and pi (which has no MCP) refused with the reason.

use std::path::Path;

use crate::common::install::*;
use serde_json::{Value, json};

/// Each agent's project file with someone else's server in it, and where filewatchd's goes.
struct Case {
    agent: &'static str,
    rel: &'static str,
    before: &'static str,
    /// The user's own server, as its text appears in the file (kept byte for byte).
    theirs: &'static str,
}

const CASES: &[Case] = &[
    Case {
        agent: "claude-code",
        rel: ".mcp.json",
        before: "{\n  \"mcpServers\": {\n    \"docs\": {\"type\": \"stdio\", \"command\": \"docs-mcp\", \"args\": [\"--port\", \"0\"]}\n  }\n}\n",
        theirs: "\"docs\": {\"type\": \"stdio\", \"command\": \"docs-mcp\", \"args\": [\"--port\", \"0\"]}",
    },
    Case {
        agent: "gemini-cli",
        rel: ".gemini/settings.json",
        before: "{\n  // my servers\n  \"general\": {\"vimMode\": true},\n  \"mcpServers\": {\"docs\": {\"command\": \"docs-mcp\", \"trust\": false}}, /* kept */\n}\n",
        theirs: "\"docs\": {\"command\": \"docs-mcp\", \"trust\": false}",
    },
    Case {
        agent: "opencode",
        rel: "opencode.jsonc",
        before: "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // remote docs\n  \"mcp\": {\"docs\": {\"type\": \"remote\", \"url\": \"https://example.com/mcp\"}}\n}\n",
        theirs: "\"docs\": {\"type\": \"remote\", \"url\": \"https://example.com/mcp\"}",
    },
    Case {
        agent: "codex",
        rel: ".codex/config.toml",
        before: "# my codex\nmodel = \"o3\"  # kept\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--port\", \"0\"]\n",
        theirs: "[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--port\", \"0\"]\n",
    },
];

/// filewatchd's server as the agent reads it: `[program, args...]`.
fn our_server(agent: &str, path: &Path) -> Vec<String> {
    let text = read(path);
    let words = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_string))
            .collect()
    };
    if agent == "codex" {
        let doc: toml::Table = text.parse().expect("config.toml parses");
        let server = &doc["mcp_servers"]["filewatchd"];
        let program = server["command"].as_str().unwrap_or_default().to_string();
        let args = server["args"].as_array().cloned().unwrap_or_default();
        let args = args.iter().filter_map(|a| a.as_str().map(str::to_string));
        return std::iter::once(program).chain(args).collect();
    }
    let parsed = jsonc(&text);
    match agent {
        "opencode" => words(&parsed["mcp"]["filewatchd"]["command"]),
        _ => {
            let server = &parsed["mcpServers"]["filewatchd"];
            let program = server["command"].as_str().unwrap_or_default().to_string();
            std::iter::once(program).chain(words(&server["args"])).collect()
        }
    }
}

/// JSON with comments and trailing commas, as Gemini CLI and opencode read it.
fn jsonc(text: &str) -> Value {
    let root = jsonc_parser::cst::CstRootNode::parse(text, &Default::default())
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    root.value()
        .and_then(|v| v.to_serde_value())
        .unwrap_or(Value::Null)
}

#[test]
fn install_merges_twice_is_once_and_uninstall_takes_out_only_ours() {
    for case in CASES {
        let t = Installer::new();
        let path = t.ws.path(case.rel);
        t.ws.write(case.rel, case.before);

        let dry = t.install(case.agent, &["--mcp", "--dry-run"]);
        assert!(dry.contains("would install"), "{}: {dry}", case.agent);
        assert_eq!(read(&path), case.before, "{}: a dry run wrote", case.agent);

        let out = t.install(case.agent, &["--mcp"]);
        assert!(out.contains(&path.display().to_string()), "{out}");
        let installed = read(&path);
        assert!(
            installed.contains(case.theirs),
            "{}: their server changed:\n{installed}",
            case.agent
        );
        // A project file may be committed: it runs `filewatchd` from PATH.
        assert_eq!(
            our_server(case.agent, &path),
            ["filewatchd", "mcp"],
            "{installed}"
        );

        let again = t.install(case.agent, &["--mcp"]);
        assert!(again.contains("already installed"), "{}: {again}", case.agent);
        assert_eq!(
            read(&path),
            installed,
            "{}: a second install changed the file",
            case.agent
        );

        // The user edits the file after install: uninstall keeps that edit and their server.
        let edited =
            installed
                .replacen("docs-mcp", "docs-mcp-2", 1)
                .replacen("example.com", "example.org", 1);
        std::fs::write(&path, &edited).unwrap();
        t.uninstall(case.agent, &["--mcp"]);
        let after = read(&path);
        assert!(
            !after.contains("filewatchd"),
            "{}: ours left:\n{after}",
            case.agent
        );
        let theirs_edited =
            case.theirs
                .replacen("docs-mcp", "docs-mcp-2", 1)
                .replacen("example.com", "example.org", 1);
        assert!(
            after.contains(&theirs_edited),
            "{}: their server lost:\n{after}",
            case.agent
        );
        let expected =
            case.before
                .replacen("docs-mcp", "docs-mcp-2", 1)
                .replacen("example.com", "example.org", 1);
        // The layout of the object that held both servers may change; nothing else does.
        if case.agent == "codex" {
            assert_eq!(after, expected, "codex: uninstall changed more than our server");
        } else {
            assert_eq!(
                jsonc(&after),
                jsonc(&expected),
                "{}: uninstall changed more",
                case.agent
            );
        }
    }
}

#[test]
fn an_untouched_file_comes_back_byte_for_byte() {
    for case in CASES {
        let t = Installer::new();
        let path = t.ws.path(case.rel);
        t.ws.write(case.rel, case.before);
        t.install(case.agent, &["--mcp"]);
        let out = t.uninstall(case.agent, &["--mcp"]);
        assert!(out.contains("restored the file"), "{}: {out}", case.agent);
        assert_eq!(read(&path), case.before, "{}", case.agent);
        let again = t.uninstall(case.agent, &["--mcp"]);
        assert!(again.contains("nothing to remove"), "{}: {again}", case.agent);
        assert_eq!(read(&path), case.before, "{}", case.agent);
    }
}

/// Claude Code starts a `.mcp.json` server only once approved: install approves it in this
/// machine's settings, next to the hooks, and uninstall takes out only the approval.
#[test]
fn claude_code_approves_its_server_beside_the_hooks() {
    let t = Installer::new();
    t.install("claude-code", &[]);
    let local = t.ws.path(".claude/settings.local.json");
    let with_hooks = read(&local);
    t.install("claude-code", &["--mcp"]);
    let settings = json_at(&local);
    assert_eq!(
        settings["enabledMcpjsonServers"],
        json!(["filewatchd"]),
        "{settings:#}"
    );
    assert_eq!(
        commands(&settings, "UserPromptSubmit"),
        [this_binary_hook("claude-code")],
        "the hooks were lost"
    );
    t.uninstall("claude-code", &["--mcp"]);
    assert_eq!(read(&local), with_hooks, "uninstall --mcp touched the hooks");
    assert!(
        !t.ws.path(".mcp.json").exists(),
        "the .mcp.json install created is left"
    );
}

/// `--user`: the user's own file names this binary by its full path.
#[test]
fn user_files_name_this_binary() {
    let t = Installer::new();
    let program = std::fs::canonicalize(crate::common::BIN)
        .unwrap()
        .display()
        .to_string();
    let files = [
        ("claude-code", t.home().join(".claude.json")),
        ("gemini-cli", t.home().join(".gemini/settings.json")),
        ("opencode", t.home().join(".config/opencode/opencode.json")),
        ("codex", t.home().join(".codex/config.toml")),
    ];
    for (agent, path) in &files {
        t.install(agent, &["--mcp", "--user"]);
        assert_eq!(our_server(agent, path), [program.as_str(), "mcp"], "{agent}");
        t.uninstall(agent, &["--mcp", "--user"]);
        assert!(!path.exists(), "{agent}: {} is left", path.display());
    }
}

/// Codex gives an MCP server only a few variables of its own: the ones that lead
/// `filewatchd mcp` to the hooks' daemon are passed through by name.
#[test]
fn codex_passes_filewatchds_variables_through() {
    let t = Installer::new();
    t.install("codex", &["--mcp"]);
    let doc: toml::Table = read(&t.ws.path(".codex/config.toml")).parse().unwrap();
    let names = doc["mcp_servers"]["filewatchd"]["env_vars"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for name in [
        "FILEWATCHD_HOME",
        "FILEWATCHD_URL",
        "FILEWATCHD_TOKEN",
        "XDG_STATE_HOME",
    ] {
        assert!(
            names.iter().any(|n| n.as_str() == Some(name)),
            "{name} missing: {names:?}"
        );
    }
}

#[test]
fn a_malformed_file_is_refused_and_left_as_it_is() {
    let broken = [
        ("claude-code", ".mcp.json", "{\"mcpServers\": {"),
        ("claude-code", ".mcp.json", "{\"mcpServers\": [1]}"),
        ("gemini-cli", ".gemini/settings.json", "[\"not an object\"]"),
        (
            "opencode",
            "opencode.json",
            "{\"mcp\": {\"filewatchd\": {\"type\": \"remote\", \"url\": \"https://x\"}}}",
        ),
        ("codex", ".codex/config.toml", "[mcp_servers\ncommand = 1\n"),
    ];
    for (agent, rel, text) in broken {
        let t = Installer::new();
        t.ws.write(rel, text);
        let out = t.output(&["hook", "install", agent, "--mcp"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{agent} {text}: installed");
        assert!(err.contains(rel) && err.contains("by hand"), "{agent}: {err}");
        assert_eq!(read(&t.ws.path(rel)), text, "{agent}: the file was touched");
        assert!(t.state_files().is_empty(), "{agent}: a backup was written");
    }
}

/// Claude Code's two files are checked before either is written.
#[test]
fn claude_code_writes_neither_file_when_one_is_malformed() {
    let t = Installer::new();
    t.ws.write(
        ".claude/settings.local.json",
        "{\"enabledMcpjsonServers\": \"all\"}",
    );
    let out = t.output(&["hook", "install", "claude-code", "--mcp"]);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        !t.ws.path(".mcp.json").exists(),
        ".mcp.json written before the check"
    );
}

#[test]
fn pi_is_refused_with_what_it_lacks() {
    let t = Installer::new();
    let out = t.output(&["hook", "install", "pi", "--mcp"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("pi has no MCP client"), "{err}");
    assert!(
        files_under(t.ws.root()).is_empty(),
        "pi: wrote {:?}",
        files_under(t.ws.root())
    );
    let out = t.output(&["hook", "install", "codex", "--mcp", "--notify"]);
    assert_eq!(out.status.code(), Some(2), "--mcp with --notify is a usage error");
}

/// A `filewatchd` entry the user wrote (another command, their env) is theirs: install
/// refuses to replace it and writes nothing; the same entry as install's is kept; uninstall
/// leaves both, and removes only what install added.
#[test]
fn the_users_own_filewatchd_entry_is_never_taken_for_ours() {
    let custom = "{\"mcpServers\": {\"filewatchd\": {\"type\": \"stdio\", \"command\": \"/opt/fw/filewatchd\", \"args\": [\"mcp\"], \"env\": {\"FILEWATCHD_URL\": \"http://127.0.0.1:9\"}}}}\n";
    let t = Installer::new();
    let path = t.ws.path(".gemini/settings.json");
    t.ws.write(".gemini/settings.json", custom);
    let out = t.output(&["hook", "install", "gemini-cli", "--mcp"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "installed over the user's entry: {err}");
    assert!(
        err.contains("did not add") && err.contains("settings.json"),
        "{err}"
    );
    assert_eq!(read(&path), custom, "the user's entry was touched");
    assert!(t.state_files().is_empty(), "a backup or mark was written");
    let out = t.uninstall("gemini-cli", &["--mcp"]);
    assert!(out.contains("not added by"), "{out}");
    assert_eq!(read(&path), custom, "uninstall removed the user's entry");

    // The same entry as install's, written by hand: kept, and still there after uninstall.
    let same = "{\"mcpServers\": {\"filewatchd\": {\"command\": \"filewatchd\", \"args\": [\"mcp\"]}}}\n";
    t.ws.write(".gemini/settings.json", same);
    let out = t.install("gemini-cli", &["--mcp"]);
    assert!(out.contains("your own"), "{out}");
    t.uninstall("gemini-cli", &["--mcp"]);
    assert_eq!(read(&path), same, "uninstall removed the user's entry");

    // What install added comes out again; the user's other settings stay.
    t.ws.write(".gemini/settings.json", "{\"general\": {\"vimMode\": true}}\n");
    t.install("gemini-cli", &["--mcp"]);
    t.uninstall("gemini-cli", &["--mcp"]);
    assert_eq!(read(&path), "{\"general\": {\"vimMode\": true}}\n");
}

/// A project file runs `filewatchd` from PATH: without one there, install warns as the hook
/// install does.
#[test]
fn a_project_install_warns_when_filewatchd_is_not_on_path() {
    let t = Installer::new().with_env("PATH", Path::new("/usr/bin:/bin"));
    let out = t.install("gemini-cli", &["--mcp"]);
    assert!(
        out.contains("warning: no `filewatchd` on PATH")
            && out.contains("the agent cannot start the MCP server"),
        "{out}"
    );
    let out = t.install("gemini-cli", &["--mcp", "--user"]);
    assert!(!out.contains("warning"), "--user names this binary: {out}");
}

/// Codex's model calls the function `turn_changes` of the namespace `mcp__filewatchd`, as
/// docs/mcp.md says; `hook uninstall --help` speaks of taking out, not of adding.
#[test]
fn the_codex_note_and_the_uninstall_help_say_what_they_do() {
    let t = Installer::new();
    let out = t.install("codex", &["--mcp"]);
    assert!(
        out.contains("`turn_changes` in the namespace `mcp__filewatchd`")
            && !out.contains("mcp__filewatchd__turn_changes"),
        "{out}"
    );
    let help = t.run(&["hook", "uninstall", "--help"]);
    assert!(
        !help.contains("get the hooks") && !help.contains("configure"),
        "{help}"
    );
}
