//! The command line (PRODUCT.md 5.3): `serve` runs the daemon; every other command is a
//! client of the running daemon, one function each.

mod client;
mod print;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

use crate::daemon::{self, ServeOptions};
pub use client::{ApiFailure, Client};

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
}

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

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground (the default).
    Serve(ServeCmd),
    /// What the daemon watches and how capture is doing.
    Status(JsonFlag),
    /// Mark where an agent's turn starts or ends.
    #[command(subcommand)]
    Turn(TurnCmd),
    /// Turns with the files each changed.
    Log(LogCmd),
    /// One turn: every changed path, optionally with diffs.
    Show(ShowCmd),
    /// Every recorded version of one path.
    History(HistoryCmd),
    /// Set the workspace to a turn boundary of a session (conflicts checked).
    Rollback(RollbackCmd),
    /// Roll back the session's latest turn not yet undone.
    Undo(RollbackFlags),
    /// Return to the state just before the session's latest undo or rollback.
    Redo(RollbackFlags),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("boundary").required(true).args(["before", "after"])))]
pub struct RollbackCmd {
    /// Roll back to the state when turn N started.
    #[arg(long, value_name = "N")]
    pub before: Option<String>,
    /// Roll back to the state when turn N ended.
    #[arg(long, value_name = "N")]
    pub after: Option<String>,
    #[command(flatten)]
    pub flags: RollbackFlags,
}

#[derive(Debug, Args)]
pub struct RollbackFlags {
    #[command(flatten)]
    pub session: SessionArg,
    /// Show the plan and the conflicts; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Roll back everything else and leave conflicting paths as they are.
    #[arg(long, conflicts_with = "force")]
    pub skip_conflicts: bool,
    /// Roll back conflicting paths too (what they hold stays in history).
    #[arg(long)]
    pub force: bool,
    /// Show unified diffs of what each file becomes.
    #[arg(long)]
    pub diff: bool,
    /// An id for this operation: repeating it returns the first answer, never applies twice.
    #[arg(long)]
    pub op_id: Option<String>,
    /// Only these paths (and what lies beneath them).
    pub paths: Vec<String>,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Args)]
pub struct ServeCmd {
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub port: Option<u16>,
}

#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print the daemon's JSON answer.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionArg {
    /// The session (default: $FILEWATCHD_SESSION, or the only session there is).
    #[arg(long, env = "FILEWATCHD_SESSION")]
    pub session: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum TurnCmd {
    /// Start a turn (ends the session's open turn first).
    Start {
        #[command(flatten)]
        session: SessionArg,
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
pub struct LogCmd {
    /// Only this session (default: all).
    #[arg(long, env = "FILEWATCHD_SESSION")]
    pub session: Option<String>,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Args)]
pub struct ShowCmd {
    /// A turn number or ref (default: the latest turn).
    pub turn: Option<String>,
    #[command(flatten)]
    pub session: SessionArg,
    /// Include unified diffs of text files.
    #[arg(long)]
    pub diff: bool,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Args)]
pub struct HistoryCmd {
    /// A path relative to the workspace root (or to the current directory inside it).
    pub path: String,
    #[command(flatten)]
    pub json: JsonFlag,
}

/// Runs one command; the exit code follows PRODUCT.md 5.3.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let args = cli.serve.clone();
    let Some(command) = cli.command else {
        return serve(args, None, None);
    };
    if let Command::Serve(cmd) = command {
        return serve(args, cmd.config, cmd.port);
    }
    let client = Client::discover(args.root.as_deref(), args.state_dir.as_deref())?;
    match command {
        Command::Serve(_) => unreachable!("handled above"),
        Command::Status(flag) => status(&client, flag.json),
        Command::Turn(cmd) => turn(&client, cmd),
        Command::Log(cmd) => log(&client, cmd),
        Command::Show(cmd) => show(&client, cmd),
        Command::History(cmd) => history(&client, &args, cmd),
        Command::Rollback(cmd) => {
            let (to, turn) = match (cmd.before, cmd.after) {
                (Some(n), _) => ("before", n),
                (None, Some(n)) => ("after", n),
                (None, None) => bail!("give --before N or --after N"),
            };
            return rollback(&client, &args, "rollback", Some((to, turn)), cmd.flags);
        }
        Command::Undo(flags) => return rollback(&client, &args, "undo", None, flags),
        Command::Redo(flags) => return rollback(&client, &args, "redo", None, flags),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// Exit code when a rollback was refused because of conflicts.
const EXIT_CONFLICTS: u8 = 3;

fn rollback(
    client: &Client,
    args: &ServeArgs,
    operation: &str,
    boundary: Option<(&str, String)>,
    flags: RollbackFlags,
) -> anyhow::Result<ExitCode> {
    let session = resolve_session(client, flags.session.session)?;
    let paths = flags
        .paths
        .iter()
        .map(|p| workspace_relative(client, args, p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let on_conflict = match (flags.skip_conflicts, flags.force) {
        (true, _) => "skip",
        (_, true) => "force",
        _ => "abort",
    };
    let mut body = json!({
        "on_conflict": on_conflict, "dry_run": flags.dry_run, "paths": paths, "diff": flags.diff,
    });
    if let Some(op_id) = flags.op_id {
        body["op_id"] = json!(op_id);
    }
    if let Some((to, turn)) = boundary {
        body["to"] = json!(to);
        body["turn"] = turn.parse::<i64>().map_or_else(|_| json!(turn), |n| json!(n));
    }
    let (answer, refused) = match client.post(&format!("/v1/sessions/{session}/{operation}"), &body) {
        Ok(answer) => (answer, false),
        Err(err) => match err.downcast::<ApiFailure>() {
            Ok(failure) if failure.code == "conflicts" => (failure.body, true),
            Ok(failure) => return Err(failure.into()),
            Err(err) => return Err(err),
        },
    };
    print::answer(&answer, flags.json.json, print::rollback)?;
    Ok(if refused {
        ExitCode::from(EXIT_CONFLICTS)
    } else {
        ExitCode::SUCCESS
    })
}

fn serve(args: ServeArgs, config: Option<PathBuf>, port: Option<u16>) -> anyhow::Result<ExitCode> {
    daemon::serve(ServeOptions {
        root: args.root,
        state_dir: args.state_dir,
        config: config.or(args.config),
        port: port.or(args.port),
    })?;
    Ok(ExitCode::SUCCESS)
}

fn status(client: &Client, json: bool) -> anyhow::Result<()> {
    let answer = client.get("/v1/status")?;
    print::answer(&answer, json, print::status)
}

fn turn(client: &Client, cmd: TurnCmd) -> anyhow::Result<()> {
    match cmd {
        TurnCmd::Start {
            session,
            label,
            turn_ref,
            json,
        } => {
            let session = resolve_session(client, session.session)?;
            let body = json!({"label": label, "ref": turn_ref});
            let answer = client.post(&format!("/v1/sessions/{session}/turns"), &body)?;
            print::answer(&answer, json.json, print::turn_started)
        }
        TurnCmd::End { session, turn, json } => {
            let session = resolve_session(client, session.session)?;
            let answer = client.post(
                &format!("/v1/sessions/{session}/turns/{}/end", encode(&turn)),
                &json!({}),
            )?;
            print::answer(&answer, json.json, |a| print::turn(a, false))
        }
    }
}

fn log(client: &Client, cmd: LogCmd) -> anyhow::Result<()> {
    let sessions: Vec<String> = match cmd.session {
        Some(session) => vec![session],
        None => session_names(client)?,
    };
    let mut all = Vec::new();
    for session in sessions {
        let listing = client.get(&format!("/v1/sessions/{session}/turns"))?;
        let mut turns = Vec::new();
        for summary in listing["turns"].as_array().into_iter().flatten() {
            turns.push(client.get(&format!("/v1/sessions/{session}/turns/{}", summary["turn"]))?);
        }
        all.push(json!({"session": session, "turns": turns, "rollbacks": listing["rollbacks"]}));
    }
    print::answer(&Value::Array(all), cmd.json.json, print::log)
}

fn show(client: &Client, cmd: ShowCmd) -> anyhow::Result<()> {
    let session = resolve_session(client, cmd.session.session)?;
    let turn = cmd.turn.unwrap_or_else(|| "current".to_string());
    let query = if cmd.diff { "?diff=true" } else { "" };
    let answer = client.get(&format!("/v1/sessions/{session}/turns/{}{query}", encode(&turn)))?;
    print::answer(&answer, cmd.json.json, |a| print::turn(a, cmd.diff))
}

fn history(client: &Client, args: &ServeArgs, cmd: HistoryCmd) -> anyhow::Result<()> {
    let path = workspace_relative(client, args, &cmd.path)?;
    let answer = client.get(&format!("/v1/history?path={}", encode(&path)))?;
    print::answer(&answer, cmd.json.json, print::history)
}

/// A path typed inside a subdirectory is relative to it; the API wants it relative to the root.
fn workspace_relative(client: &Client, args: &ServeArgs, typed: &str) -> anyhow::Result<String> {
    if args.root.is_some() || typed.starts_with('/') {
        return Ok(typed.to_string());
    }
    let root = client.get("/v1/status")?["root"].as_str().map(PathBuf::from);
    let (Some(root), Ok(cwd)) = (root, std::env::current_dir().and_then(|d| d.canonicalize())) else {
        return Ok(typed.to_string());
    };
    match cwd.strip_prefix(&root) {
        Ok(sub) if !sub.as_os_str().is_empty() => Ok(format!("{}/{typed}", sub.display())),
        _ => Ok(typed.to_string()),
    }
}

fn session_names(client: &Client) -> anyhow::Result<Vec<String>> {
    let answer = client.get("/v1/sessions")?;
    Ok(answer["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["session"].as_str().map(str::to_string))
        .collect())
}

/// `--session`, else `$FILEWATCHD_SESSION` (through clap), else the only session.
fn resolve_session(client: &Client, given: Option<String>) -> anyhow::Result<String> {
    if let Some(session) = given {
        return Ok(session);
    }
    let names = session_names(client)?;
    match names.as_slice() {
        [only] => Ok(only.clone()),
        [] => bail!("there is no session yet: give one with --session NAME (or set FILEWATCHD_SESSION)"),
        _ => bail!(
            "there are {} sessions ({}): choose one with --session",
            names.len(),
            names.join(", ")
        ),
    }
}

/// Percent-encodes what may not appear raw in a URL path segment or query value.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
