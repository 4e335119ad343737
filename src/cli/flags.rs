//! The flags and value parsers that several commands share (the server's location, `--json`,
//! `--session`, conflict handling, times and durations): a leaf the command modules and
//! `args` both use, so that no command module leans on `args`.

use std::path::PathBuf;

use clap::Args;

use crate::model::answer::OnConflict;

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The workspace root (default: the current directory).
    #[arg(long, global = true)]
    pub root: Option<PathBuf>,
    /// The project state directory (default: under $FILEWATCHD_HOME, $XDG_STATE_HOME or ~/.local/state).
    #[arg(long, global = true)]
    pub state_dir: Option<PathBuf>,
    /// The config file (default: .filewatchd.toml in the root).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The port on 127.0.0.1 (default: the config's `port`, else a free one).
    #[arg(long)]
    pub port: Option<u16>,
}

/// What a rollback-like command (rollback, undo, redo, restore, revert) does with conflicts,
/// and whether it only shows its plan.
#[derive(Debug, Clone, Copy, Args)]
pub struct ConflictFlags {
    /// Show the plan and the conflicts; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Change everything else and leave conflicting paths as they are (the answer says why).
    #[arg(long, conflicts_with = "force")]
    pub skip_conflicts: bool,
    /// Change conflicting paths too (what they hold stays in history).
    #[arg(long)]
    pub force: bool,
}

impl ConflictFlags {
    /// The conflict policy as the API names it.
    pub fn on_conflict(&self) -> OnConflict {
        match (self.skip_conflicts, self.force) {
            (true, _) => OnConflict::Skip,
            (_, true) => OnConflict::Force,
            _ => OnConflict::Abort,
        }
    }
}

#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print the daemon's JSON answer.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionArg {
    /// The session: its name, a unique prefix of it, or `last` (default: $FILEWATCHD_SESSION,
    /// else the session with the latest activity).
    #[arg(long, env = "FILEWATCHD_SESSION")]
    pub session: Option<String>,
}

/// `--at`: an RFC 3339 time (a usage error otherwise).
pub fn valid_time(text: &str) -> Result<String, String> {
    super::localtime::to_utc(text)
}

/// `--ago`: a duration such as 10m, 2h or 1day.
pub fn valid_duration(text: &str) -> Result<String, String> {
    parse_ago(text).map(|_| text.to_string())
}

/// A duration ago, as `--ago` and `show --at` take it.
pub fn parse_ago(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text).map_err(|_| format!("{text:?} is not a duration like 10m, 2h or 1day"))
}
