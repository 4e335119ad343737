//! `filewatchd diff --from WHEN [--to WHEN] [PATH]`: what changed between two points of the
//! record, as `git diff A B -- PATH` shows it (`GET /v1/diff`).

use std::fmt::Write;

use clap::Args;

use super::flags::{JsonFlag, ServeArgs, SessionArg, valid_time};
use super::{Client, encode, escape, pager, print, resolve_session, rollback, workspace_relative};
use crate::wire::turn::Difference;

#[derive(Debug, Args)]
pub struct DiffCmd {
    /// The earlier point: before:N or after:N (a turn of the session), seq:S, a time (RFC 3339
    /// or local) or a duration ago (10m).
    #[arg(long, value_name = "WHEN")]
    pub from: String,
    /// The later point, as --from (default: now).
    #[arg(long, value_name = "WHEN", default_value = "now")]
    pub to: String,
    /// Only the changes at or beneath this path.
    pub path: Option<String>,
    #[command(flatten)]
    pub session: SessionArg,
    /// The changed paths only, without their diffs.
    #[arg(long)]
    pub stat: bool,
    /// Print straight to the terminal, never through $PAGER.
    #[arg(long)]
    pub no_pager: bool,
    #[command(flatten)]
    pub json: JsonFlag,
}

pub(super) fn diff(client: &Client, args: &ServeArgs, cmd: DiffCmd) -> anyhow::Result<()> {
    let names_a_turn = |w: &str| w.starts_with("before:") || w.starts_with("after:");
    let mut query = format!(
        "/v1/diff?from={}&to={}",
        encode(&point(&cmd.from)?),
        encode(&point(&cmd.to)?)
    );
    if names_a_turn(&cmd.from) || names_a_turn(&cmd.to) {
        let session = resolve_session(client, cmd.session.session.clone())?;
        query.push_str(&format!("&session={}", encode(&session)));
    }
    if let Some(path) = &cmd.path {
        query.push_str(&format!(
            "&path={}",
            encode(&workspace_relative(client, args, path)?)
        ));
    }
    if !cmd.stat {
        query.push_str("&diff=true");
    }
    let answer: Difference = client.get_whole(&query)?;
    if cmd.json.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(());
    }
    let mut out = format!(
        "from {} (seq {}) to {} (seq {})\n",
        spelled(&cmd.from),
        answer.from_seq,
        spelled(&cmd.to),
        answer.to_seq
    );
    if answer.changes.is_empty() {
        out.push_str("  nothing changed\n");
    }
    for change in &answer.changes {
        let _ = writeln!(out, "{}", print::change_line(change));
        if let Some(text) = &change.diff {
            out.push_str(&print::diff_lines(text));
        } else if change.binary {
            out.push_str("    (binary content differs)\n");
        }
    }
    let _ = writeln!(out, "{}", super::show::turn_counts(&answer.counts));
    pager::show(&out, !cmd.no_pager)?;
    Ok(())
}

/// A point as a person says it: `before turn 2`, `now`, a time or a duration as given.
fn spelled(when: &str) -> String {
    match when.split_once(':') {
        Some((side @ ("before" | "after"), turn)) => format!("{side} turn {}", escape::text(turn)),
        _ => escape::text(when).into_owned(),
    }
}

/// A point as the API takes it: a duration ago and a local time become an RFC 3339 time.
fn point(when: &str) -> anyhow::Result<String> {
    let named = when == "now" || ["before:", "after:", "seq:"].iter().any(|p| when.starts_with(p));
    if named {
        return Ok(when.to_string());
    }
    match valid_time(when) {
        Ok(utc) => Ok(utc),
        Err(_) => rollback::time_ago(when),
    }
}
