//! What an installed hook configuration runs, for `filewatchd doctor`: the programs filewatchd's
//! entries in a target's file name, and whether Codex has recorded its trust in them.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{Format, Invocation, Target, jsonc, notify, plugin, text};
use crate::bounded::Unread;
use crate::hook::Agent;

/// The programs the target's file runs; `None` when the file does not exist or holds none of
/// filewatchd's entries.
pub fn installed(target: &Target) -> anyhow::Result<Option<Vec<Invocation>>> {
    let path = target.path();
    let Some(bytes) = target.settings(&path).read()? else {
        return Ok(None);
    };
    if !target.has_ours(&path, &bytes)? {
        return Ok(None);
    }
    let ours = target.ours();
    let programs: Vec<String> = match target.format() {
        Format::Json => jsonc::our_commands(text(&path, &bytes)?, &path, &ours)?
            .iter()
            .map(|c| program_of(c, target.agent))
            .collect(),
        Format::Toml => notify::our_program(text(&path, &bytes)?, &path, &target.program)?
            .into_iter()
            .collect(),
        Format::Plugin => plugin::default_program(&bytes).into_iter().collect(),
    };
    let mut runs: Vec<Invocation> = Vec::new();
    for program in programs {
        let named = match program.as_str() {
            "filewatchd" => Invocation::Portable,
            _ => Invocation::Absolute(PathBuf::from(program)),
        };
        if !runs.contains(&named) {
            runs.push(named);
        }
    }
    Ok(Some(runs))
}

/// The events `hook install` writes now that the target's file lacks (an earlier release's
/// install, before the tool-call events): empty when there is nothing of filewatchd's there.
pub fn missing_events(target: &Target) -> anyhow::Result<Vec<&'static str>> {
    let path = target.path();
    let Some(bytes) = target.settings(&path).read()? else {
        return Ok(Vec::new());
    };
    if !matches!(target.format(), Format::Json) || !target.has_ours(&path, &bytes)? {
        return Ok(Vec::new());
    }
    let ours = target.ours();
    let present = jsonc::our_events(text(&path, &bytes)?, &path, &ours)?;
    Ok(target
        .events()
        .iter()
        .copied()
        .filter(|event| !present.iter().any(|p| p == event))
        .collect())
}

/// The program of a hook command `PROGRAM hook <agent>`, unquoted as install quotes it.
fn program_of(command: &str, agent: Agent) -> String {
    let suffix = format!(" hook {}", agent.name());
    let program = command.strip_suffix(&suffix).unwrap_or(command).trim();
    match program.strip_prefix('\'').and_then(|p| p.strip_suffix('\'')) {
        Some(quoted) => quoted.replace("'\\''", "'"),
        None => program.to_string(),
    }
}

/// Whether Codex will run the hooks of `hooks_file`: it runs a hook only once its trust is
/// recorded (`[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash`), and loads a
/// project's `.codex/` only in a trusted project (`[projects."<root>"] trust_level`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexTrust {
    /// The config it reads them from (`$CODEX_HOME/config.toml`).
    pub config: PathBuf,
    /// Some hook of the file has a recorded trusted hash (filewatchd cannot recompute the hash
    /// Codex compares it with: a changed hook needs trust again).
    pub hooks_trusted: bool,
    /// For a project file: whether the project is trusted.
    pub project_trusted: Option<bool>,
}

pub fn codex_trust(target: &Target, hooks_file: &Path) -> anyhow::Result<CodexTrust> {
    let config = target.dirs.codex().join("config.toml");
    // Codex's own config, read to tell its trust (never written): the user's symlink to it, as
    // a dotfiles manager makes, is followed; a regular file of bounded size only.
    let table: toml::Table = match read_followed(&config)? {
        Some(bytes) => toml::from_str(text(&config, &bytes)?).unwrap_or_default(),
        None => toml::Table::new(),
    };
    let file = hooks_file.to_string_lossy();
    let states = table
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let hooks_trusted = states.is_some_and(|states| {
        states
            .iter()
            .any(|(key, state)| key.contains(file.as_ref()) && state.get("trusted_hash").is_some())
    });
    let project_trusted = target.in_workspace().then(|| {
        let root = target.root.to_string_lossy();
        let project = table.get("projects").and_then(|p| p.get(root.as_ref()));
        project
            .and_then(|p| p.get("trust_level"))
            .and_then(toml::Value::as_str)
            == Some("trusted")
    });
    Ok(CodexTrust {
        config,
        hooks_trusted,
        project_trusted,
    })
}

/// The regular file at `path` (through the user's symlinks), `None` when absent.
fn read_followed(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match crate::bounded::read(path, crate::fs::settings::READ_LIMIT) {
        Ok(read) => Ok(read.map(|(bytes, _)| bytes)),
        Err(Unread::Io(e)) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        Err(_) => anyhow::bail!("{} is not a regular file of at most 16 MiB", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_read_back_from_the_command_install_writes() {
        assert_eq!(program_of("filewatchd hook codex", Agent::Codex), "filewatchd");
        assert_eq!(
            program_of("'/opt/it'\\''s/filewatchd' hook claude-code", Agent::ClaudeCode),
            "/opt/it's/filewatchd"
        );
        assert_eq!(
            program_of("/usr/bin/filewatchd hook gemini-cli", Agent::GeminiCli),
            "/usr/bin/filewatchd"
        );
    }
}
