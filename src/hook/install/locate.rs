//! Where each agent keeps the file filewatchd edits, honouring the agents' own overrides of
//! their configuration directories, and how the hook names the filewatchd binary there.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{Scope, Target};
use crate::hook::Agent;

/// The user's home and the agents' documented overrides of their configuration directories.
/// An empty variable counts as unset, as it does for each agent.
#[derive(Debug, Clone, Default)]
pub struct AgentDirs {
    pub home: PathBuf,
    /// Claude Code: `CLAUDE_CONFIG_DIR` replaces `~/.claude`.
    pub claude_config_dir: Option<PathBuf>,
    /// Codex: `CODEX_HOME` replaces `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// Gemini CLI: `GEMINI_CLI_HOME` replaces the home that holds `.gemini/`.
    pub gemini_cli_home: Option<PathBuf>,
    /// opencode: `$XDG_CONFIG_HOME/opencode` replaces `~/.config/opencode`.
    pub xdg_config_home: Option<PathBuf>,
    /// pi: `PI_CODING_AGENT_DIR` replaces `~/.pi/agent` (a leading `~` is the home, as in pi).
    pub pi_agent_dir: Option<PathBuf>,
}

impl AgentDirs {
    pub fn from_env() -> anyhow::Result<Self> {
        let home = crate::platform::ext::home_dir().context("HOME is not set")?;
        let pi_agent_dir = std::env::var("PI_CODING_AGENT_DIR")
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| expand_tilde(&v, &home));
        Ok(Self {
            claude_config_dir: env_path("CLAUDE_CONFIG_DIR"),
            codex_home: env_path("CODEX_HOME"),
            gemini_cli_home: env_path("GEMINI_CLI_HOME"),
            xdg_config_home: env_path("XDG_CONFIG_HOME"),
            pi_agent_dir,
            home,
        })
    }

    /// `dir` when the agent's variable sets it, else `default` in the home.
    fn or_home(&self, dir: &Option<PathBuf>, default: &str) -> PathBuf {
        dir.clone().unwrap_or_else(|| self.home.join(default))
    }

    pub(super) fn claude(&self) -> PathBuf {
        self.or_home(&self.claude_config_dir, ".claude")
    }

    pub fn codex(&self) -> PathBuf {
        self.or_home(&self.codex_home, ".codex")
    }

    pub(super) fn gemini(&self) -> PathBuf {
        self.gemini_cli_home
            .as_ref()
            .unwrap_or(&self.home)
            .join(".gemini")
    }

    pub(super) fn opencode(&self) -> PathBuf {
        self.or_home(&self.xdg_config_home, ".config").join("opencode")
    }

    fn pi(&self) -> PathBuf {
        self.or_home(&self.pi_agent_dir, ".pi/agent")
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn expand_tilde(value: &str, home: &Path) -> PathBuf {
    match value.strip_prefix('~') {
        Some("") => home.to_path_buf(),
        Some(rest) if rest.starts_with('/') => home.join(rest.trim_start_matches('/')),
        _ => PathBuf::from(value),
    }
}

/// How the hook names the filewatchd binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// This binary by its full path: files that stay on this machine.
    Absolute(PathBuf),
    /// `filewatchd` from `PATH`: a project file a team may commit, which works on any machine.
    Portable,
}

impl Target {
    /// The settings file (or plugin file) this target writes.
    pub fn path(&self) -> PathBuf {
        let dirs = &self.dirs;
        let root = &self.root;
        match (self.agent, self.scope) {
            (Agent::Codex, _) if self.notify => dirs.codex().join("config.toml"),
            // Claude Code's local settings: per machine, never committed.
            (Agent::ClaudeCode, Scope::Project) => root.join(".claude/settings.local.json"),
            (Agent::ClaudeCode, Scope::User) => dirs.claude().join("settings.json"),
            (Agent::GeminiCli, Scope::Project) => root.join(".gemini/settings.json"),
            (Agent::GeminiCli, Scope::User) => dirs.gemini().join("settings.json"),
            (Agent::Codex, Scope::Project) => root.join(".codex/hooks.json"),
            (Agent::Codex, Scope::User) => dirs.codex().join("hooks.json"),
            (Agent::Opencode, Scope::Project) => root.join(".opencode/plugin/filewatchd.js"),
            (Agent::Opencode, Scope::User) => dirs.opencode().join("plugin/filewatchd.js"),
            (Agent::Pi, Scope::Project) => root.join(".pi/extensions/filewatchd.ts"),
            (Agent::Pi, Scope::User) => dirs.pi().join("extensions/filewatchd.ts"),
        }
    }

    /// Files earlier versions of filewatchd wrote for this target: install moves filewatchd's
    /// entries out of them (two copies would mark every turn twice), uninstall cleans them too.
    pub fn legacy_paths(&self) -> Vec<PathBuf> {
        match (self.agent, self.scope) {
            // Earlier versions wrote there as a regular file: a symlink there (a team's shared
            // settings) holds nothing of theirs, and is not read.
            (Agent::ClaudeCode, Scope::Project) if !self.notify => {
                let legacy = self.root.join(".claude/settings.json");
                let linked = legacy
                    .symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink());
                if linked { Vec::new() } else { vec![legacy] }
            }
            _ => Vec::new(),
        }
    }

    /// A project file with no local variant names `filewatchd` on `PATH`; every other file
    /// names this binary.
    pub fn invocation(&self) -> Invocation {
        let local = self.scope == Scope::User || self.notify || matches!(self.agent, Agent::ClaudeCode);
        if local {
            Invocation::Absolute(self.program.clone())
        } else {
            Invocation::Portable
        }
    }

    /// Whether the file lives in the workspace (its backups go to the workspace's state).
    pub fn in_workspace(&self) -> bool {
        self.path().starts_with(&self.root)
    }
}

/// `filewatchd` as `PATH` finds it, if it does.
pub fn on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(format!("filewatchd{}", std::env::consts::EXE_SUFFIX)))
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| crate::platform::ext::is_executable(&m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_is_the_home_as_pi_reads_it() {
        let home = Path::new("/home/u");
        assert_eq!(expand_tilde("~", home), PathBuf::from("/home/u"));
        assert_eq!(expand_tilde("~/pi", home), PathBuf::from("/home/u/pi"));
        assert_eq!(expand_tilde("~other/pi", home), PathBuf::from("~other/pi"));
        assert_eq!(expand_tilde("/etc/pi", home), PathBuf::from("/etc/pi"));
    }
}
