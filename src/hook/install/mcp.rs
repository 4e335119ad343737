//! `filewatchd hook install|uninstall <agent> --mcp`: adds `filewatchd mcp` (the MCP server
//! over this workspace's record) to the agent's own MCP configuration, named `filewatchd`, and
//! takes it out again. Which file and key each agent reads, and what it passes to the server,
//! is in docs/mcp-agents.md. Like the hook install it merges in place, keeps the user's
//! original for uninstall (in `hook-backups/mcp/`, apart from the hooks' originals of a file
//! both edit), is idempotent, and checks every file it will edit before writing any.

use std::path::{Path, PathBuf};

use anyhow::bail;
use serde_json::{Value, json};

use super::mcp_edit::{self, NAME};
use super::{Report, Scope, Target, backup, text};
use crate::hook::Agent;

/// The variables that lead `filewatchd mcp` to the same daemon as the hooks. Codex passes an
/// MCP server only HOME, PATH and a few more unless its `env_vars` names others.
const PASSED_THROUGH: &[&str] = &[
    "FILEWATCHD_HOME",
    "FILEWATCHD_URL",
    "FILEWATCHD_TOKEN",
    "FILEWATCHD_SESSION",
    "FILEWATCHD_AUTOSTART",
    "XDG_STATE_HOME",
];

/// One file's edit.
#[derive(Debug)]
struct Edit {
    path: PathBuf,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// `container.filewatchd = entry` in a JSON (JSONC) file.
    Server { container: &'static str, entry: Value },
    /// `filewatchd` in the JSON list `key`.
    Listed { key: &'static str },
    /// `[mcp_servers.filewatchd]` in Codex's `config.toml`.
    Codex { command: String },
}

impl Kind {
    fn installed(&self, path: &Path, current: &str) -> anyhow::Result<String> {
        match self {
            Kind::Server { container, entry } => mcp_edit::with_server(current, path, container, entry),
            Kind::Listed { key } => mcp_edit::with_listed(current, path, key),
            Kind::Codex { command } => mcp_edit::with_codex_server(current, path, command, PASSED_THROUGH),
        }
    }

    fn stripped(&self, path: &Path, current: &str) -> anyhow::Result<Option<(String, bool)>> {
        match self {
            Kind::Server { container, .. } => mcp_edit::without_server(current, path, container),
            Kind::Listed { key } => mcp_edit::without_listed(current, path, key),
            Kind::Codex { .. } => mcp_edit::without_codex_server(current, path),
        }
    }
}

/// The program the agent starts: `filewatchd` from `PATH` in a project file (a team may commit
/// it), this binary by its full path in the user's own files.
fn program(target: &Target) -> String {
    match target.scope {
        Scope::Project => "filewatchd".to_string(),
        Scope::User => target.program.to_string_lossy().into_owned(),
    }
}

/// The files to edit for this agent and scope, or why the agent cannot have the server.
fn edits(target: &Target) -> anyhow::Result<Vec<Edit>> {
    let program = program(target);
    let dirs = &target.dirs;
    let user = target.scope == Scope::User;
    // The agent's directory: the user's own, or the one in the workspace.
    let dir = |user_dir: PathBuf, in_project: &str| {
        if user {
            user_dir
        } else {
            target.root.join(in_project)
        }
    };
    let server = |path: PathBuf, container, entry| Edit {
        path,
        kind: Kind::Server { container, entry },
    };
    let stdio = json!({"type": "stdio", "command": program, "args": ["mcp"]});
    Ok(match target.agent {
        Agent::Pi => bail!(
            "pi has no MCP client (its README says \"No MCP.\"), so there is no MCP configuration to add filewatchd to; `filewatchd hook install pi` records pi's turns, and `filewatchd show` answers what a turn changed"
        ),
        Agent::ClaudeCode if user => {
            let dir = dirs.claude_config_dir.as_ref().unwrap_or(&dirs.home);
            vec![server(dir.join(".claude.json"), "mcpServers", stdio)]
        }
        // `.mcp.json` is shared with the team; Claude Code starts a server from it only once
        // it is approved, here in this machine's own settings.
        Agent::ClaudeCode => vec![
            server(target.root.join(".mcp.json"), "mcpServers", stdio),
            Edit {
                path: target.root.join(".claude/settings.local.json"),
                kind: Kind::Listed {
                    key: "enabledMcpjsonServers",
                },
            },
        ],
        Agent::GeminiCli => {
            let entry = json!({"command": program, "args": ["mcp"]});
            vec![server(
                dir(dirs.gemini(), ".gemini").join("settings.json"),
                "mcpServers",
                entry,
            )]
        }
        Agent::Codex => vec![Edit {
            path: dir(dirs.codex(), ".codex").join("config.toml"),
            kind: Kind::Codex { command: program },
        }],
        Agent::Opencode => {
            let entry = json!({"type": "local", "command": [program, "mcp"], "enabled": true});
            vec![server(opencode_config(&dir(dirs.opencode(), "")), "mcp", entry)]
        }
    })
}

/// `opencode.jsonc` if there is one, else `opencode.json` (opencode reads either).
fn opencode_config(dir: &Path) -> PathBuf {
    let jsonc = dir.join("opencode.jsonc");
    if jsonc.exists() {
        jsonc
    } else {
        dir.join("opencode.json")
    }
}

fn backup_dir(target: &Target, path: &Path) -> PathBuf {
    target.backup_dir(path).join("mcp")
}

/// Adds filewatchd's server; every file is checked (parsed and edited in memory) before the
/// first one is written, so a malformed one leaves them all untouched. An entry named
/// `filewatchd` that install did not add (the user's own) is never replaced: the same as
/// install's is kept as it is, another one is a refusal.
pub fn install(target: &Target, dry_run: bool) -> anyhow::Result<Vec<Report>> {
    let planned = edits(target)?.into_iter().map(|edit| plan_install(target, &edit));
    let planned = planned.collect::<anyhow::Result<Vec<_>>>()?;
    let mut reports = Vec::new();
    for (mut report, adds) in planned {
        if report.changed() && !dry_run {
            let dir = backup_dir(target, &report.path);
            if let (Some(original), true) = (&report.before, adds) {
                let saved = backup::save(&dir, &report.path, original)?;
                report.note(format!("your original is saved at {}", saved.display()));
            }
            target.write(&report.path, report.after.as_deref().unwrap_or_default())?;
            if adds {
                backup::mark(&dir, &report.path)?;
            }
        }
        reports.push(report);
    }
    Ok(reports)
}

/// One file's install, and whether it adds filewatchd's entry (rather than updating the one
/// an earlier install added, or keeping the user's).
fn plan_install(target: &Target, edit: &Edit) -> anyhow::Result<(Report, bool)> {
    let before = target.settings(&edit.path).read()?;
    let current = text(&edit.path, before.as_deref().unwrap_or_default())?;
    let after = edit.kind.installed(&edit.path, current)?;
    let present = before.is_some() && edit.kind.stripped(&edit.path, current)?.is_some();
    let added_by_install = backup::is_marked(&backup_dir(target, &edit.path), &edit.path);
    if !present || added_by_install {
        return Ok((
            Report::new(&edit.path, before, Some(after.into_bytes())),
            !present,
        ));
    }
    if after != current {
        bail!(
            "{} already has a `{NAME}` MCP server that `filewatchd hook install` did not add (your own, with another command or arguments); install will not replace it: keep it, or remove it and install again",
            edit.path.display()
        );
    }
    let mut report = Report::new(&edit.path, before.clone(), before);
    report.note(format!(
        "your own `{NAME}` entry is already there and is kept (uninstall will leave it)"
    ));
    Ok((report, false))
}

/// Removes filewatchd's server (only it): the original comes back byte for byte when the file
/// was not edited since install; a file install created and nothing else uses is removed.
pub fn uninstall(target: &Target, dry_run: bool) -> anyhow::Result<Vec<Report>> {
    let planned = edits(target)?
        .into_iter()
        .map(|edit| plan_uninstall(target, &edit));
    let planned = planned.collect::<anyhow::Result<Vec<_>>>()?;
    for report in planned.iter().filter(|_| !dry_run) {
        let dir = backup_dir(target, &report.path);
        if !backup::is_marked(&dir, &report.path) {
            continue;
        }
        match &report.after {
            _ if !report.changed() => {}
            Some(bytes) => target.write(&report.path, bytes)?,
            None => target.settings(&report.path).remove()?,
        }
        backup::discard(&dir, &report.path)?;
    }
    Ok(planned)
}

/// Takes out only the entry install added (its mark says so); the user's own is left.
fn plan_uninstall(target: &Target, edit: &Edit) -> anyhow::Result<Report> {
    let Some(current) = target.settings(&edit.path).read()? else {
        return Ok(Report::new(&edit.path, None, None));
    };
    let Some((stripped, empty)) = edit.kind.stripped(&edit.path, text(&edit.path, &current)?)? else {
        return Ok(Report::new(&edit.path, Some(current.clone()), Some(current)));
    };
    let dir = backup_dir(target, &edit.path);
    if !backup::is_marked(&dir, &edit.path) {
        let mut report = Report::new(&edit.path, Some(current.clone()), Some(current));
        report.note(format!(
            "its `{NAME}` entry was not added by `filewatchd hook install`: left as it is"
        ));
        return Ok(report);
    }
    let original = backup::read(&dir, &edit.path)?;
    let untouched = original.as_deref().is_some_and(|o| {
        let reinstalled = text(&edit.path, o).and_then(|o| edit.kind.installed(&edit.path, o));
        reinstalled.is_ok_and(|ours| ours.as_bytes() == current.as_slice())
    });
    let (after, note) = if untouched {
        (original, "restored the file as it was before install")
    } else if empty && original.is_none() {
        (None, "removed the file install had created")
    } else {
        (
            Some(stripped.into_bytes()),
            "removed filewatchd's MCP server; everything else is kept as it is",
        )
    };
    let mut report = Report::new(&edit.path, Some(current), after);
    report.note(note);
    Ok(report)
}

/// What the agent calls filewatchd's `turn_changes` tool, and what it still needs before it
/// starts the server: printed after install.
pub fn notes(agent: Agent) -> Vec<String> {
    let (tool, needs) = match agent {
        Agent::ClaudeCode => (
            "mcp__filewatchd__turn_changes",
            "`claude -p` runs it when allowed: --allowedTools mcp__filewatchd__turn_changes (or all: mcp__filewatchd)",
        ),
        Agent::Codex => (
            "`turn_changes` in the namespace `mcp__filewatchd`",
            "a project's .codex/config.toml is read only in a trusted project",
        ),
        Agent::GeminiCli => (
            "mcp_filewatchd_turn_changes",
            "Gemini CLI starts MCP servers only in a trusted folder (`gemini trust`)",
        ),
        Agent::Opencode => (
            "filewatchd_turn_changes",
            "opencode starts it with the project (restart a running opencode)",
        ),
        Agent::Pi => return Vec::new(),
    };
    vec![
        format!("the agent starts `filewatchd mcp` itself; the model calls its tools as {tool} and so on"),
        needs.to_string(),
        format!("the `{NAME}` server finds this workspace's daemon like the hooks do"),
    ]
}
