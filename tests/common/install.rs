//! Vocabulary for `hook install|uninstall` tests: a workspace, a home of its own, and the
//! agents' directory overrides cleared unless a test sets them.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use super::{BIN, Workspace};

/// The agents' own overrides of their directories; cleared so the tests' environment cannot
/// leak into them.
pub const AGENT_ENV: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "XDG_CONFIG_HOME",
    "PI_CODING_AGENT_DIR",
];

pub struct Installer {
    pub ws: Workspace,
    home: tempfile::TempDir,
    env: Vec<(&'static str, PathBuf)>,
}

impl Installer {
    pub fn new() -> Installer {
        Installer {
            ws: Workspace::new(),
            home: tempfile::Builder::new().prefix("fwd-user-").tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    /// The user's `HOME`.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn with_env(mut self, name: &'static str, value: &Path) -> Installer {
        self.env.push((name, value.to_path_buf()));
        self
    }

    /// `filewatchd ARGS --root ROOT` with this home and environment.
    pub fn output(&self, args: &[&str]) -> Output {
        let mut cmd = self.ws.command();
        for var in AGENT_ENV {
            cmd.env_remove(var);
        }
        cmd.env("HOME", self.home());
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        cmd.args(args).arg("--root").arg(self.ws.root());
        cmd.output().unwrap()
    }

    /// Runs a command that must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn install(&self, agent: &str, flags: &[&str]) -> String {
        self.run(&[&["hook", "install", agent], flags].concat())
    }

    pub fn uninstall(&self, agent: &str, flags: &[&str]) -> String {
        self.run(&[&["hook", "uninstall", agent], flags].concat())
    }

    /// Every file under the workspace's state directories (where backups belong).
    pub fn state_files(&self) -> Vec<PathBuf> {
        files_under(self.ws.home())
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn json_at(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap()
}

/// The commands of every hook under one event.
pub fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|entry| entry["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .collect()
}

/// The command a hook of this test binary runs.
pub fn this_binary_hook(agent: &str) -> String {
    let program = std::fs::canonicalize(BIN).unwrap();
    format!("{} hook {agent}", program.display())
}

/// Every regular file below `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.map(Result::unwrap) {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Whether every line of `before` is in `after`, in order: install only added lines.
pub fn only_lines_added(before: &str, after: &str) -> bool {
    let mut rest = after.lines();
    before.lines().all(|line| rest.any(|l| l == line))
}
