//! `filewatchd hook install|uninstall <agent>`: writes filewatchd's hooks into the agent's own
//! settings and takes them out again, editing each file in place so that everything else in it
//! stays exactly as the user wrote it.
//!
//! - `locate`: which file each agent and scope uses (with the agents' own directory overrides)
//!   and whether the hook names this binary or `filewatchd` on `PATH`.
//! - `jsonc`, `notify`, `plugin`: the edit of one kind of file (JSON/JSONC hook settings,
//!   Codex's `config.toml`, the opencode/pi plugin file).
//! - `mcp` (with `mcp_edit`): `--mcp`, the `filewatchd mcp` server in the agent's MCP
//!   configuration instead of the hooks.
//! - `backup`: the user's original of an edited file, kept in filewatchd's state directory.
//! - `inspect`: what an installed file runs, and Codex's recorded trust (for `doctor`).
//!
//! Install points filewatchd's entries at the current binary (adding any that are missing);
//! uninstall removes every filewatchd entry whatever binary it names and gives back the
//! original byte for byte when the file was not edited since; a file with none of
//! filewatchd's entries is never rewritten.

mod backup;
mod inspect;
mod jsonc;
mod locate;
pub mod mcp;
mod mcp_edit;
mod notify;
mod plugin;

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{Value, json};

pub use inspect::{codex_trust, installed, missing_events};
pub use locate::{AgentDirs, Invocation, on_path};

use super::events::Agent;
use crate::fs::settings::SettingsFile;

/// Said at every `hook install codex --notify`: the cause is Codex's, and only the user can
/// choose the hooks instead (docs/security.md).
const NOTIFY_ARGV: &str = "Codex's `notify` hands each turn's payload, your prompt included, to filewatchd as a command-line argument, which any local user can read in /proc/PID/cmdline while it runs; on a shared machine prefer Codex's hooks (`filewatchd hook install codex`, without --notify)";

/// Where the hook configuration goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Project,
    User,
}

#[derive(Debug, Clone)]
pub struct Target {
    pub agent: Agent,
    pub scope: Scope,
    /// The workspace (for `Project`).
    pub root: PathBuf,
    /// The home and the agents' overrides of their directories (for `User`).
    pub dirs: AgentDirs,
    /// The filewatchd binary the agent will run.
    pub program: PathBuf,
    /// Codex only: configure the legacy `notify` program instead of lifecycle hooks.
    pub notify: bool,
    /// Where originals are saved: the workspace's state directory (files in the workspace)
    /// and the state home's (the user's files).
    pub backups: Backups,
}

#[derive(Debug, Clone)]
pub struct Backups {
    pub project: PathBuf,
    pub user: PathBuf,
}

/// What install or uninstall did (or, in a dry run, would do) to one file.
#[derive(Debug)]
pub struct Report {
    pub path: PathBuf,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
    pub notes: Vec<String>,
}

impl Report {
    fn new(path: &Path, before: Option<Vec<u8>>, after: Option<Vec<u8>>) -> Self {
        Self {
            path: path.to_path_buf(),
            before,
            after,
            notes: Vec::new(),
        }
    }

    pub fn changed(&self) -> bool {
        self.before != self.after
    }

    fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// The three kinds of file install edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Toml,
    Plugin,
}

impl Target {
    fn format(&self) -> Format {
        match self.agent {
            Agent::Opencode | Agent::Pi => Format::Plugin,
            Agent::Codex if self.notify => Format::Toml,
            _ => Format::Json,
        }
    }

    fn command(&self) -> String {
        let program = match self.invocation() {
            Invocation::Absolute(program) => crate::escape::program_word(&program.to_string_lossy()),
            Invocation::Portable => "filewatchd".to_string(),
        };
        format!("{program} hook {}", self.agent.name())
    }

    /// The agent's file at `path`: beneath the workspace, no directory on the way may be a
    /// symlink (a cloned repository can plant one); nowhere may the file itself be one.
    fn settings<'a>(&'a self, path: &'a Path) -> SettingsFile<'a> {
        SettingsFile::beneath(path, &self.root)
    }

    /// Writes the file whole (temp, fsync, rename): the agent never reads half of it.
    fn write(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        self.settings(path).replace(bytes)
    }

    fn backup_dir(&self, path: &Path) -> &Path {
        if path.starts_with(&self.root) {
            &self.backups.project
        } else {
            &self.backups.user
        }
    }

    /// The events installed for the agent.
    fn events(&self) -> &'static [&'static str] {
        match self.agent {
            // The tool calls' starts and ends give each write its owner (docs/agents.md).
            Agent::ClaudeCode => &[
                "SessionStart",
                "UserPromptSubmit",
                "Stop",
                "StopFailure",
                "SessionEnd",
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
            ],
            Agent::GeminiCli => &[
                "SessionStart",
                "BeforeAgent",
                "AfterAgent",
                "SessionEnd",
                "BeforeTool",
                "AfterTool",
            ],
            Agent::Codex => &[
                "SessionStart",
                "UserPromptSubmit",
                "Stop",
                "PreToolUse",
                "PostToolUse",
            ],
            Agent::Opencode | Agent::Pi => &[],
        }
    }

    fn entry(&self, event: &str, command: &str) -> Value {
        match self.agent {
            Agent::GeminiCli => json!({"matcher": "*", "hooks": [
                {"name": "filewatchd", "type": "command", "command": command, "timeout": 5000}
            ]}),
            Agent::Codex => json!({"hooks": [{"type": "command", "command": command, "timeout": 10}]}),
            _ if event == "SessionEnd" => {
                json!({"hooks": [{"type": "command", "command": command, "timeout": 5}]})
            }
            _ => json!({"hooks": [{"type": "command", "command": command}]}),
        }
    }

    fn ours(&self) -> jsonc::Ours {
        jsonc::Ours {
            agent: self.agent.name(),
            command: self.command(),
        }
    }

    fn has_ours(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<bool> {
        let ours = self.ours();
        match self.format() {
            Format::Json => Ok(!jsonc::our_events(text(path, bytes)?, path, &ours)?.is_empty()),
            Format::Toml => notify::has_notify(text(path, bytes)?, path, &self.program),
            Format::Plugin => Ok(plugin::is_ours(self.agent, bytes)),
        }
    }

    /// The file's content with filewatchd installed.
    fn installed(&self, path: &Path, current: Option<&[u8]>) -> anyhow::Result<Vec<u8>> {
        let current = text(path, current.unwrap_or_default())?;
        let ours = self.ours();
        let out = match self.format() {
            Format::Json => {
                let entries: Vec<_> = self
                    .events()
                    .iter()
                    .map(|&e| (e, self.entry(e, &ours.command)))
                    .collect();
                jsonc::with_hooks(current, path, &entries, &ours)?
            }
            Format::Toml => notify::with_notify(current, path, &self.program)?,
            Format::Plugin => plugin::text(self.agent, &self.invocation()),
        };
        Ok(out.into_bytes())
    }

    /// The file's content without filewatchd, and whether nothing else is left in it; `None`
    /// when it holds nothing of filewatchd's.
    fn stripped(&self, path: &Path, current: &[u8]) -> anyhow::Result<Option<(Vec<u8>, bool)>> {
        let ours = self.ours();
        let stripped = match self.format() {
            Format::Json => jsonc::without_hooks(text(path, current)?, path, &ours)?,
            Format::Toml => notify::without_notify(text(path, current)?, path, &self.program)?,
            Format::Plugin => plugin::is_ours(self.agent, current).then(|| (String::new(), true)),
        };
        Ok(stripped.map(|(text, empty)| (text.into_bytes(), empty)))
    }
}

fn text<'a>(path: &Path, bytes: &'a [u8]) -> anyhow::Result<&'a str> {
    std::str::from_utf8(bytes)
        .with_context(|| format!("{} is not UTF-8 text; install by hand", path.display()))
}

/// A file of filewatchd's own state directory (a backup), `None` when absent.
pub(crate) fn read_optional(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    SettingsFile::at(path).read()
}

/// Installs into the target's file, and moves filewatchd's entries out of a file an earlier
/// version wrote instead (`.claude/settings.json`).
pub fn install(target: &Target, dry_run: bool) -> anyhow::Result<Vec<Report>> {
    let path = target.path();
    let mut reports = vec![install_file(target, &path, dry_run)?];
    for legacy in target.legacy_paths() {
        let mut report = uninstall_file(target, &legacy, dry_run)?;
        if report.changed() {
            report.note(format!("filewatchd's hooks moved to {}", path.display()));
            reports.push(report);
        }
    }
    Ok(reports)
}

/// Removes filewatchd from the target's file and from files earlier versions wrote.
pub fn uninstall(target: &Target, dry_run: bool) -> anyhow::Result<Vec<Report>> {
    let mut reports = vec![uninstall_file(target, &target.path(), dry_run)?];
    for legacy in target.legacy_paths() {
        let report = uninstall_file(target, &legacy, dry_run)?;
        if report.changed() {
            reports.push(report);
        }
    }
    Ok(reports)
}

fn install_file(target: &Target, path: &Path, dry_run: bool) -> anyhow::Result<Report> {
    let before = target.settings(path).read()?;
    let after = target.installed(path, before.as_deref())?;
    let mut report = Report::new(path, before, Some(after));
    if target.format() == Format::Toml {
        report.note(NOTIFY_ARGV);
    }
    if !report.changed() || dry_run {
        return Ok(report);
    }
    let dir = target.backup_dir(path);
    match &report.before {
        // The user's own file: its original is kept for uninstall.
        Some(original) if !target.has_ours(path, original)? => {
            let saved = backup::save(dir, path, original)?;
            report.note(format!("your original is saved at {}", saved.display()));
        }
        // Already ours (an earlier install): the original saved then stays the original.
        Some(_) => {
            backup::adopt_legacy(dir, path)?;
            report.note(format!(
                "sessions of {} already running keep the hooks they started with: restart them to report their tool calls",
                target.agent.name()
            ));
        }
        None => {}
    }
    target.write(path, report.after.as_deref().unwrap_or_default())?;
    Ok(report)
}

fn uninstall_file(target: &Target, path: &Path, dry_run: bool) -> anyhow::Result<Report> {
    let Some(current) = target.settings(path).read()? else {
        return Ok(Report::new(path, None, None));
    };
    let Some((stripped, empty)) = target.stripped(path, &current)? else {
        // Nothing of filewatchd's: the file is left byte for byte.
        return Ok(Report::new(path, Some(current.clone()), Some(current)));
    };
    let dir = target.backup_dir(path);
    let original = backup::read(dir, path)?;
    let untouched = original
        .as_deref()
        .is_some_and(|o| target.installed(path, Some(o)).is_ok_and(|ours| ours == current));
    let (after, note) = if untouched {
        (original, "restored the file as it was before install")
    } else if target.format() == Format::Plugin {
        (original, "removed filewatchd's plugin file")
    } else if empty && original.is_none() {
        (None, "removed the file install had created")
    } else {
        (
            Some(stripped),
            "removed filewatchd's entries; everything else is kept as it is",
        )
    };
    let mut report = Report::new(path, Some(current), after);
    report.note(note);
    if target.format() == Format::Plugin && report.after.is_some() && !untouched {
        report.note("put back your own file that install had replaced");
    }
    if dry_run {
        return Ok(report);
    }
    match &report.after {
        Some(bytes) => target.write(path, bytes)?,
        None => target.settings(path).remove()?,
    }
    backup::discard(dir, path)?;
    if report.after.is_none() && remove_empty_dirs(&target.root, path) {
        report.note("removed the directories it leaves empty");
    }
    Ok(report)
}

/// Removes the directories above `path` that are left empty, up to the project `root` (an
/// empty `.claude/` left behind would still mark its directory as a project's); outside the
/// project, only the one holding `path`. True when it removed any.
fn remove_empty_dirs(root: &Path, path: &Path) -> bool {
    let mut removed = false;
    let mut dir = path.parent();
    // `remove_dir` refuses a directory that holds anything: only an empty one goes.
    while let Some(d) = dir.filter(|d| *d != root && std::fs::remove_dir(d).is_ok()) {
        removed = true;
        dir = d.parent().filter(|_| d.starts_with(root));
    }
    removed
}
