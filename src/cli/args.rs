//! Command-line arguments (docs/cli.md), parsed by clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::flags::{JsonFlag, ServeArgs, SessionArg};
use super::rollback::{RedoFlags, RestoreCmd, RollbackCmd, RollbackFlags};
use super::show::ShowCmd;
use super::timeline::LogCmd;

#[derive(Debug, Parser)]
#[command(
    name = "filewatchd",
    version,
    about = "Records every change to a workspace and rolls it back per agent turn"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
    /// More log output on stderr (-v: debug, -vv: trace); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Colour in the output (auto: when stdout is a terminal and NO_COLOR is unset).
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t)]
    pub color: super::style::ColorChoice,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground (`start` runs it in the background).
    Serve(ServeCmd),
    /// Start the daemon in the background for this workspace; returns once it answers.
    Start(StartCmd),
    /// Stop this workspace's daemon, and wait until it has exited.
    Stop,
    /// Stop this workspace's daemon and start it again.
    Restart(StartCmd),
    /// Every workspace filewatchd keeps state for: root, daemon, store size, last activity.
    Projects(JsonFlag),
    /// Delete a workspace's state directory, its whole history (not while its daemon runs).
    Forget(ForgetCmd),
    /// What the daemon watches and how capture is doing.
    Status(JsonFlag),
    /// Mark where an agent's turn starts or ends.
    #[command(subcommand, after_help = super::print::LEGEND)]
    Turn(TurnCmd),
    /// The timeline: turns, undos, redos, rollbacks and restores, newest first.
    #[command(after_help = super::print::LEGEND)]
    Log(LogCmd),
    /// One turn: its changed paths (grouped by directory when many), optionally with diffs.
    #[command(after_help = super::print::LEGEND)]
    Show(ShowCmd),
    /// What changed between two points of the record (turn boundaries, times, now), with diffs.
    #[command(after_help = super::print::LEGEND)]
    Diff(super::diff::DiffCmd),
    /// Every recorded version of one path.
    History(HistoryCmd),
    /// Each line of a file with the version that introduced it: its turn (and prompt) or who
    /// else wrote it.
    Blame(super::blame::BlameCmd),
    /// Sessions with their turn counts, last activity, parent and fork point.
    Sessions(JsonFlag),
    /// Start a new session whose history is this session's up to the end of a turn.
    Fork(ForkCmd),
    /// Set the workspace to a turn boundary of a session (conflicts checked).
    Rollback(RollbackCmd),
    /// Roll back the session's latest turn not yet undone.
    Undo(RollbackFlags),
    /// Return to the state just before the session's latest undo or rollback.
    Redo(RedoFlags),
    /// Restore one path to a boundary or a time (conflicts checked).
    Restore(RestoreCmd),
    /// Take back one file of a turn (or one hunk of it): a rollback `redo` undoes.
    Revert(super::review::RevertCmd),
    /// Mark a turn, or one file of it, reviewed (`--undo`: not); `log` and `show` say so.
    Review(super::review::ReviewCmd),
    /// Remove history outside the retention policy (keep_days, keep_turns, max_store_bytes).
    Gc(GcCmd),
    /// Delete a path's recorded contents from the store (a secret such as `.env`): its history
    /// stays, but none of its versions can be restored again.
    Purge(super::purge::PurgeCmd),
    /// Compare the whole workspace with the record now and record what differs (writes no
    /// event reported, such as through a shared mapping); the daemon also does this in the
    /// background when the workspace is quiet (`[verify]` in .filewatchd.toml).
    Verify(JsonFlag),
    /// Check what filewatchd needs: a daemon that answers, the state directory's permissions,
    /// inotify limits, the agents' hooks, the store's integrity and free disk space; each
    /// check with its verdict and the command that fixes it (exit 1 when one is a problem).
    Doctor(super::doctor::DoctorCmd),
    /// Run a command as one turn: its writes are the turn (labelled with the command line),
    /// its exit code is passed through, and the turn's summary is one line on stderr.
    Exec(super::exec::ExecCmd),
    /// Name a point of the history (the end of a turn, a time, or now): retention keeps it,
    /// and `rollback --pin NAME` returns the workspace to it.
    Pin(super::pins::PinCmd),
    /// Remove a pin (the next gc may then remove history only it kept).
    Unpin(super::pins::UnpinCmd),
    /// Every pin: its name, the point it names, when it was made.
    Pins(JsonFlag),
    /// Review in the browser: opens (or prints) a one-time login link to the daemon's page.
    Ui(super::ui::UiCmd),
    /// The MCP server on stdio for the agent in this workspace (its MCP configuration starts
    /// it): what its turns changed, history, blame, diffs and rollback previews.
    Mcp,
    /// Agent hooks: `hook <agent>` reads one hook event on stdin (what the agent runs);
    /// `hook install|uninstall <agent>` writes or removes the agent's hook configuration.
    Hook(HookCmd),
    /// Print the shell completion script for bash, zsh or fish.
    Completions(CompletionsCmd),
    /// Write a man page for every command (filewatchd.1, filewatchd-log.1, ...) into a
    /// directory, or print filewatchd.1.
    Man(ManCmd),
}

#[derive(Debug, Args)]
pub struct CompletionsCmd {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManCmd {
    /// Write every page into this directory (e.g. ~/.local/share/man/man1); without it, print
    /// filewatchd.1 on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ForkCmd {
    /// The new session's name.
    pub new_session: String,
    #[command(flatten)]
    pub session: SessionArg,
    /// Fork after this turn (a number or a ref; default: the latest).
    #[arg(long, default_value = "current")]
    pub turn: String,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Default, Args)]
pub struct ServeCmd {
    #[command(flatten)]
    pub start: StartCmd,
    /// Log to this file (rotated at 4 MiB to FILE.1) instead of stderr; `start` uses
    /// daemon.log in the state directory.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// For the integration tests only: honour the FILEWATCHD_TEST_* variables (test_knobs).
    #[arg(long, hide = true)]
    pub test_knobs: bool,
}

#[derive(Debug, Default, Args)]
pub struct StartCmd {
    /// The config file (default: .filewatchd.toml in the root).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The port on 127.0.0.1 (default: the config's `port`, else a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Start even on the home directory or `/` without asking.
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct ForgetCmd {
    /// The workspace root whose state to delete (it may no longer exist; default: --root).
    #[arg(required_unless_present = "root")]
    pub dir: Option<PathBuf>,
    /// Delete without asking.
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Subcommand)]
pub enum TurnCmd {
    /// Start a turn (ends the session's open turn first).
    Start {
        #[command(flatten)]
        session: SessionArg,
        /// What the turn is about (e.g. the prompt's first line), shown by `log` and `show`.
        #[arg(long)]
        label: Option<String>,
        /// The agent's own id for the turn.
        #[arg(long = "ref")]
        turn_ref: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// End a turn (default: the open one).
    End {
        #[command(flatten)]
        session: SessionArg,
        /// A turn number, a ref, or `current`.
        #[arg(long, default_value = "current")]
        turn: String,
        #[command(flatten)]
        json: JsonFlag,
    },
}

#[derive(Debug, Args)]
pub struct HistoryCmd {
    /// A path relative to the workspace root (or to the current directory inside it).
    pub path: String,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Args)]
pub struct GcCmd {
    /// Say what would go, and how many bytes; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HookCmd {
    #[command(subcommand)]
    pub manage: Option<HookManage>,
    /// The agent whose hook event is on stdin.
    #[arg(value_enum)]
    pub agent: Option<crate::hook::Agent>,
    /// Anything the agent appends (Codex `notify` passes its JSON here).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum HookManage {
    /// Add filewatchd's hooks to the agent's settings (merging; a backup is written first).
    Install(InstallArgs),
    /// Remove exactly what install added.
    Uninstall(InstallArgs),
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The agent whose settings install adds to and uninstall takes from.
    #[arg(value_enum)]
    pub agent: crate::hook::Agent,
    /// The workspace's settings (the default).
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// The user's settings in the home directory.
    #[arg(long)]
    pub user: bool,
    /// Codex: its legacy `notify` program in ~/.codex/config.toml instead of the hooks.
    #[arg(long)]
    pub notify: bool,
    /// The `filewatchd mcp` server in the agent's MCP configuration instead of the hooks.
    #[arg(long, conflicts_with = "notify")]
    pub mcp: bool,
    /// Print the change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}
