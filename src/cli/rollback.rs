//! The rollback-like commands: `rollback`, `undo`, `redo`, `restore`.

use clap::Args;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, bail};
use serde::Serialize;

use super::flags::{ConflictFlags, JsonFlag, ServeArgs, SessionArg, valid_duration, valid_time};
use super::{ApiFailure, Client, Hint, escape, print, resolve_session, session_names, workspace_relative};
use crate::restore::Boundary;
use crate::timeline::RollbackEntryKind;
use crate::wire::error::ErrorCode;
use crate::wire::request::{self, Rollback};
use crate::wire::rollback::RollbackAnswer;
use crate::wire::timeline::{Entry, Timeline};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("boundary").required(true).args(["before", "after", "at", "ago", "pin"])))]
pub struct RollbackCmd {
    #[command(flatten)]
    pub to: BoundaryArgs,
    #[command(flatten)]
    pub flags: RollbackFlags,
}

/// Where to roll back to: a turn boundary of the session, or a time or a pin (no session
/// needed).
#[derive(Debug, Args)]
pub struct BoundaryArgs {
    /// The state when turn N started.
    #[arg(long, value_name = "N")]
    pub before: Option<String>,
    /// The state when turn N ended.
    #[arg(long, value_name = "N")]
    pub after: Option<String>,
    /// The state recorded at this time (RFC 3339, e.g. 2026-11-30T10:00:00Z).
    #[arg(long, value_name = "TIME", value_parser = valid_time)]
    pub at: Option<String>,
    /// The state recorded this long ago (e.g. 10m, 2h, 1day).
    #[arg(long, value_name = "DURATION", value_parser = valid_duration)]
    pub ago: Option<String>,
    /// The point a pin names (`filewatchd pins` lists them; no session needed).
    #[arg(long, value_name = "NAME")]
    pub pin: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("boundary").required(true).args(["before", "after", "at", "ago", "pin", "seq"])))]
pub struct RestoreCmd {
    /// The path to restore (relative to the root, or to the current directory inside it).
    pub path: String,
    #[command(flatten)]
    pub to: BoundaryArgs,
    /// The version with this sequence number (a `#seq` that `filewatchd history PATH` lists).
    #[arg(long, value_name = "S")]
    pub seq: Option<i64>,
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub conflicts: ConflictFlags,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Args)]
pub struct RedoFlags {
    /// Redo the latest time rollback (`rollback --at/--ago`) instead of a session's.
    #[arg(long)]
    pub time: bool,
    #[command(flatten)]
    pub flags: RollbackFlags,
}

#[derive(Debug, Args)]
pub struct RollbackFlags {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub conflicts: ConflictFlags,
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

/// Exit code when a rollback was refused because of conflicts.
const EXIT_CONFLICTS: u8 = 3;

/// Where a rollback goes.
enum Goal {
    /// `before` or `after` a turn of a session.
    Turn(Boundary, String),
    /// The state recorded at an RFC 3339 time.
    Time(String),
    /// The point a pin names.
    Pin(String),
}

fn goal(to: BoundaryArgs) -> anyhow::Result<Goal> {
    match (to.before, to.after, to.at, to.ago, to.pin) {
        (Some(n), ..) => Ok(Goal::Turn(Boundary::Before, n)),
        (_, Some(n), ..) => Ok(Goal::Turn(Boundary::After, n)),
        (_, _, Some(at), ..) => Ok(Goal::Time(at)),
        (_, _, _, Some(ago), _) => Ok(Goal::Time(time_ago(&ago)?)),
        (.., Some(pin)) => Ok(Goal::Pin(pin)),
        _ => bail!("give --before N, --after N, --at TIME, --ago DURATION or --pin NAME"),
    }
}

pub fn time_ago(text: &str) -> anyhow::Result<String> {
    let ago = super::flags::parse_ago(text).map_err(anyhow::Error::msg)?;
    let at = SystemTime::now()
        .checked_sub(ago)
        .context("that is too long ago")?;
    Ok(humantime::format_rfc3339_millis(at).to_string())
}

pub fn rollback(client: &Client, args: &ServeArgs, cmd: RollbackCmd) -> anyhow::Result<ExitCode> {
    let (ago, dry_run, json) = (
        cmd.to.ago.clone(),
        cmd.flags.conflicts.dry_run,
        cmd.flags.json.json,
    );
    let goal = goal(cmd.to)?;
    if let (Goal::Time(at), Some(ago), true, false) = (&goal, &ago, dry_run, json) {
        // `--ago` moves with the clock: the plan reviewed is applied by the time it resolved to.
        let exact = format!("--at {at}");
        let code = send_to_goal(client, args, Goal::Time(at.clone()), cmd.flags)?;
        println!(
            "to apply exactly this plan, give `{exact}` in place of `--ago {}` (which moves with the clock)",
            escape::text(ago)
        );
        return Ok(code);
    }
    send_to_goal(client, args, goal, cmd.flags)
}

fn send_to_goal(
    client: &Client,
    args: &ServeArgs,
    goal: Goal,
    flags: RollbackFlags,
) -> anyhow::Result<ExitCode> {
    match goal {
        Goal::Turn(to, turn) => {
            let session = resolve_session(client, flags.session.session.clone())?;
            let body = Rollback {
                to: Some(to),
                turn: Some(request::turn(&turn)),
                ..Rollback::default()
            };
            send(
                client,
                args,
                &format!("/v1/sessions/{session}/rollback"),
                body,
                flags,
            )
        }
        Goal::Time(at) => {
            let body = Rollback {
                at: Some(at),
                ..Rollback::default()
            };
            send(client, args, "/v1/rollback", body, flags)
        }
        Goal::Pin(pin) => {
            let body = Rollback {
                pin: Some(pin),
                ..Rollback::default()
            };
            send(client, args, "/v1/rollback", body, flags)
        }
    }
}

pub fn undo(client: &Client, args: &ServeArgs, flags: RollbackFlags) -> anyhow::Result<ExitCode> {
    let session = resolve_session(client, flags.session.session.clone())?;
    send(
        client,
        args,
        &format!("/v1/sessions/{session}/undo"),
        Rollback::default(),
        flags,
    )
}

/// A session's redo; or, with `--time` (or when there are no sessions at all), the redo of
/// the latest time rollback.
pub fn redo(client: &Client, args: &ServeArgs, redo: RedoFlags) -> anyhow::Result<ExitCode> {
    let flags = redo.flags;
    let unnamed = flags.session.session.is_none();
    let no_sessions = unnamed && session_names(client)?.is_empty();
    // Right after `rollback --ago`, a plain `redo` means that rollback, not an older undo.
    if redo.time || no_sessions || (unnamed && latest_is_a_time_rollback(client)?) {
        return send(client, args, "/v1/redo", Rollback::default(), flags);
    }
    let session = resolve_session(client, flags.session.session.clone())?;
    send(
        client,
        args,
        &format!("/v1/sessions/{session}/redo"),
        Rollback::default(),
        flags,
    )
}

/// Whether the newest rollback of all is a time rollback (a redo of one is not).
fn latest_is_a_time_rollback(client: &Client) -> anyhow::Result<bool> {
    let page: Timeline = client.get_as("/v1/timeline?limit=100")?;
    let newest = page.entries.into_iter().find_map(|entry| match entry {
        Entry::Rollback(rollback) => Some(rollback.kind),
        _ => None,
    });
    Ok(newest == Some(RollbackEntryKind::TimeRollback))
}

/// One path back to a boundary, a time, or (`--seq`) one of its versions.
pub fn restore(client: &Client, args: &ServeArgs, cmd: RestoreCmd) -> anyhow::Result<ExitCode> {
    let flags = RollbackFlags {
        session: cmd.session,
        conflicts: cmd.conflicts,
        diff: false,
        op_id: None,
        paths: vec![cmd.path],
        json: cmd.json,
    };
    if let Some(seq) = cmd.seq {
        let body = Rollback {
            seq: Some(seq),
            ..Rollback::default()
        };
        return send(client, args, "/v1/rollback", body, flags);
    }
    rollback(client, args, RollbackCmd { to: cmd.to, flags })
}

/// Posts the request with the common flags; prints the plan; exit 3 when refused, or when a
/// dry run would be.
fn send(
    client: &Client,
    args: &ServeArgs,
    route: &str,
    mut body: Rollback,
    flags: RollbackFlags,
) -> anyhow::Result<ExitCode> {
    let paths = flags
        .paths
        .iter()
        .map(|p| workspace_relative(client, args, p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let what = restored(&paths);
    body.on_conflict = flags.conflicts.on_conflict();
    body.dry_run = flags.conflicts.dry_run;
    body.paths = paths;
    body.diff = flags.diff;
    body.op_id = flags.op_id;
    let not_found = match body.pin {
        Some(_) => super::LIST_PINS,
        None => super::LIST_TURNS,
    };
    post_plan(client, route, &body, not_found, flags.json.json, what.as_deref())
}

/// `restore of a.txt` (`of a.txt and 2 more`): what a rollback restricted to paths is.
fn restored(paths: &[String]) -> Option<String> {
    let first = escape::quoted(paths.first()?);
    Some(match paths.len() {
        1 => format!("restore of {first}"),
        n => format!("restore of {first} and {} more", n - 1),
    })
}

/// Posts a rollback-like request and prints its plan or answer (headed by `what`, see
/// `print::rollback`), an unknown turn or pin answered with `not_found` (what lists them);
/// exit 3 when refused, or when a dry run would be.
pub(super) fn post_plan(
    client: &Client,
    route: &str,
    body: &impl Serialize,
    not_found: &str,
    json: bool,
    what: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let sent = client.post_as(route, body).hint(ErrorCode::NotFound, not_found);
    let answer: RollbackAnswer = match sent {
        Ok(answer) => answer,
        Err(err) => match err.downcast::<ApiFailure>() {
            Ok(failure) if failure.code == Some(ErrorCode::Conflicts) => {
                serde_json::from_value(failure.body)?
            }
            Ok(failure) => return Err(failure.into()),
            Err(err) => return Err(err),
        },
    };
    print::answer(&answer, json, |a| print::rollback(a, what))?;
    Ok(if answer.refused() || answer.dry_run_would_be_refused() {
        ExitCode::from(EXIT_CONFLICTS)
    } else if answer.partly_done() {
        // Done for the rest, and said path by path above: never exit 0 for a path not done.
        if !json {
            eprintln!("filewatchd: not all done: the paths under \"skipped\" above were left as they are");
        }
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
