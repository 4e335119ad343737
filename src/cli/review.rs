//! Reviewing a session's turns: `filewatchd revert` (one file of a turn, or one hunk of it,
//! taken back as a rollback `redo` undoes) and `filewatchd review` (marks a turn or one of its
//! files reviewed, or with `--undo` not).

use std::process::ExitCode;

use clap::Args;

use super::flags::{ConflictFlags, JsonFlag, ServeArgs, SessionArg};
use super::style::{Paint, paint};
use super::{Client, Hint, encode, escape, print, resolve_session, rollback, workspace_relative};
use crate::wire::error::ErrorCode;
use crate::wire::request;
use crate::wire::turn::Review;

#[derive(Debug, Args)]
pub struct RevertCmd {
    /// The turn whose change to take back (a number, a ref or `current`).
    #[arg(long, value_name = "N")]
    pub turn: String,
    /// The file (relative to the directory you are in).
    pub path: String,
    /// Only this hunk of the turn's diff of the file (0 is the first `@@` of `show --diff`).
    #[arg(long, value_name = "H")]
    pub hunk: Option<u16>,
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub conflicts: ConflictFlags,
    #[command(flatten)]
    pub json: JsonFlag,
}

pub fn revert(client: &Client, args: &ServeArgs, cmd: RevertCmd) -> anyhow::Result<ExitCode> {
    let session = resolve_session(client, cmd.session.session)?;
    let path = workspace_relative(client, args, &cmd.path)?;
    let body = request::Revert {
        path: Some(path.clone()),
        hunk: cmd.hunk,
        on_conflict: cmd.conflicts.on_conflict(),
        dry_run: cmd.conflicts.dry_run,
        ..request::Revert::default()
    };
    let route = format!(
        "/v1/sessions/{}/turns/{}/revert",
        encode(&session),
        encode(&cmd.turn)
    );
    let what = match cmd.hunk {
        Some(hunk) => format!("revert of hunk {hunk} of {}", escape::quoted(&path)),
        None => format!("revert of {}", escape::quoted(&path)),
    };
    rollback::post_plan(
        client,
        &route,
        &body,
        super::LIST_TURNS,
        cmd.json.json,
        Some(&what),
    )
}

#[derive(Debug, Args)]
pub struct ReviewCmd {
    /// The turn to mark (a number, a ref or `current`).
    #[arg(long, value_name = "N")]
    pub turn: String,
    /// Mark only this file of the turn (relative to the directory you are in).
    pub path: Option<String>,
    /// Take the mark away (for the turn: its files' marks too).
    #[arg(long)]
    pub undo: bool,
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub json: JsonFlag,
}

pub fn review(client: &Client, args: &ServeArgs, cmd: ReviewCmd) -> anyhow::Result<()> {
    let session = resolve_session(client, cmd.session.session)?;
    let path = cmd.path.as_deref();
    let body = request::Review {
        reviewed: Some(!cmd.undo),
        path: path.map(|p| workspace_relative(client, args, p)).transpose()?,
    };
    let route = format!(
        "/v1/sessions/{}/turns/{}/review",
        encode(&session),
        encode(&cmd.turn)
    );
    let answer: Review = client
        .put_as(&route, &body)
        .hint(ErrorCode::NotFound, super::LIST_TURNS)?;
    print::answer(&answer, cmd.json.json, print_review)
}

fn print_review(answer: &Review) {
    let turn = format!("turn {} of {}", answer.turn, escape::text(&answer.session));
    let files = &answer.reviewed_paths;
    let state = match (answer.reviewed, files.len()) {
        (true, _) => paint("reviewed", Paint::Added),
        (false, 0) => paint("not reviewed", Paint::Dim),
        (false, n) => format!(
            "not reviewed ({} of it reviewed)",
            super::style::counted(n as u64, "file")
        ),
    };
    println!("{}: {state}", paint(&turn, Paint::Bold));
    for file in files {
        println!("  reviewed: {}", escape::quoted(file));
    }
}
