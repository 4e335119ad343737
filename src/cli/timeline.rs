//! `filewatchd log`: the timeline of one session (the latest by default) or of all, newest
//! first, one line per entry, read page by page from `GET /v1/timeline`.

use clap::Args;
use std::fmt::Write;

use serde_json::{Value, json};

use super::flags::{JsonFlag, SessionArg, valid_duration, valid_time};
use super::localtime;
use super::session;
use super::style::{self, Paint, paint};
use super::{Client, Hint, encode, escape, pager, print, text_of};
use crate::wire::error::ErrorCode;
use crate::wire::session::Session;

#[derive(Debug, Args)]
pub struct LogCmd {
    #[command(flatten)]
    pub session: SessionArg,
    /// Every session's timeline, not one session's (whatever --session or $FILEWATCHD_SESSION say).
    #[arg(long)]
    pub all: bool,
    /// At most N entries (default: a screenful on a terminal, else all).
    #[arg(long, short = 'n', value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Only entries since this time (RFC 3339) or this long ago (10m, 2h, 1day).
    #[arg(long, value_name = "TIME|DURATION", value_parser = valid_since)]
    pub since: Option<String>,
    /// List each entry's paths.
    #[arg(long)]
    pub paths: bool,
    /// List each entry's paths with their sizes (turns) or lines added and removed (rollbacks).
    #[arg(long)]
    pub stat: bool,
    /// Only the turns not marked reviewed (`filewatchd review`); undos and rollbacks stay.
    #[arg(long)]
    pub unreviewed: bool,
    /// Print straight to the terminal, never through $PAGER.
    #[arg(long)]
    pub no_pager: bool,
    #[command(flatten)]
    pub json: JsonFlag,
}

/// `log --since`: an RFC 3339 time or a duration ago.
fn valid_since(text: &str) -> Result<String, String> {
    if let Ok(utc) = valid_time(text) {
        return Ok(utc);
    }
    if valid_duration(text).is_ok() {
        return Ok(text.to_string());
    }
    Err(format!(
        "{text:?} is not a time (2026-11-30T10:00:00Z, or local: 2026-11-30 11:00:00) or a duration ago (10m, 2h, 1day)"
    ))
}

/// Entries the API gives per request at most.
const PAGE_MAX: u64 = 1000;

/// What `log` prints and how.
struct View {
    all: bool,
    paths: bool,
    stat: bool,
    sessions: Vec<Session>,
}

pub(super) fn log(client: &Client, cmd: LogCmd) -> anyhow::Result<()> {
    let sessions = session::listed(client)?;
    let scope = match (cmd.all, cmd.session.session) {
        (true, _) => None,
        // No session at all: the timeline of the rollbacks and restores made without one.
        (false, None) if sessions.is_empty() => None,
        (false, given) => Some(super::resolve_session(client, given)?),
    };
    let rows = pager::terminal_rows();
    // A screenful on a terminal (leaving a line for the prompt and one for the hint).
    let limit = cmd.limit.or(rows.map(|r| r.saturating_sub(2).max(1) as u64));
    let since = match cmd.since.as_deref() {
        Some(text) if crate::model::parse_time(text).is_ok() => Some(text.to_string()),
        Some(ago) => Some(super::rollback::time_ago(ago)?),
        None => None,
    };
    let mut extra = String::new();
    if cmd.paths || cmd.stat {
        extra.push_str("&paths=true");
    }
    if cmd.unreviewed {
        extra.push_str("&unreviewed=true");
    }
    let (entries, more) = fetch(client, scope.as_deref(), since.as_deref(), limit, &extra)?;
    if cmd.json.json {
        let answer =
            json!({"session": scope, "order": "newest_first", "entries": entries, "next_before": more});
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(());
    }
    let view = View {
        all: scope.is_none(),
        paths: cmd.paths,
        stat: cmd.stat,
        sessions,
    };
    let mut out = String::new();
    match (entries.is_empty(), &cmd.since) {
        (true, Some(since)) => out.push_str(&format!("nothing since {since}\n")),
        (true, None) => out.push_str("nothing yet: no turn, rollback or restore\n"),
        _ => {}
    }
    for entry in &entries {
        view.entry(entry, &mut out);
    }
    if more.is_some() && cmd.limit.is_none() {
        let _ = writeln!(
            out,
            "{}",
            paint("(older entries: --limit N shows more)", Paint::Dim)
        );
    }
    pager::show(&out, !cmd.no_pager)?;
    Ok(())
}

/// Up to `limit` entries (all without one), newest first, and where more would start.
fn fetch(
    client: &Client,
    session: Option<&str>,
    since: Option<&str>,
    limit: Option<u64>,
    extra: &str,
) -> anyhow::Result<(Vec<Value>, Option<Value>)> {
    let mut entries: Vec<Value> = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let wanted = limit.map_or(PAGE_MAX, |l| (l - entries.len() as u64).min(PAGE_MAX));
        let mut query = format!("/v1/timeline?limit={wanted}");
        if let Some(session) = session {
            query.push_str(&format!("&session={}", encode(session)));
        }
        if let Some(since) = since {
            query.push_str(&format!("&since={}", encode(since)));
        }
        if let Some(before) = &before {
            query.push_str(&format!("&before={}", encode(before)));
        }
        // `&paths=true`, `&unreviewed=true`.
        query.push_str(extra);
        let page = client
            .get(&query)
            .hint(ErrorCode::NotFound, "`filewatchd sessions` lists the sessions")?;
        entries.extend(page["entries"].as_array().into_iter().flatten().cloned());
        let next = page["next_before"].clone();
        let full = limit.is_some_and(|l| entries.len() as u64 >= l);
        match next.as_str() {
            Some(cursor) if !full => before = Some(cursor.to_string()),
            _ => return Ok((entries, next.as_str().map(|_| next.clone()))),
        }
    }
}

impl View {
    fn entry(&self, e: &Value, out: &mut String) {
        let time = paint(&localtime::answer_time(&e["time"]), Paint::Dim);
        let line = match e["kind"].as_str() {
            Some("turn") => self.turn(e),
            Some("outside" | "found") => outside(e),
            _ => self.rollback(e),
        };
        let _ = writeln!(out, "{time}  {line}");
        if let Some(note) = e["recovery"].as_str() {
            let _ = writeln!(out, "    {}", escape::text(note));
        }
        if self.paths || self.stat {
            for change in e["changes"].as_array().into_iter().flatten() {
                let _ = writeln!(out, "    {}", self.path_line(change));
            }
        }
    }

    /// Whose entry, in the timeline of every session.
    fn of(&self, session: &Value) -> String {
        match session.as_str() {
            Some(name) if self.all => format!(" of {}", session::short_name(name, &self.sessions)),
            _ => String::new(),
        }
    }

    fn turn(&self, e: &Value) -> String {
        let head = paint(&format!("turn {}", e["turn"]), Paint::Bold);
        let mut line = format!(
            "{head}{}  {}",
            self.of(&e["session"]),
            super::show::counts(&e["counts"])
        );
        if let Some(n) = e["counts"]["ambiguous"].as_u64().filter(|n| *n > 0) {
            line.push_str(&format!(" ({n} ambiguous)"));
        }
        if let Some(prompt) = e["prompt"].as_str().filter(|p| !p.is_empty()) {
            line.push_str(&format!("  {}", escape::text(prompt)));
        }
        if e["open"] == Value::Bool(true) {
            line.push_str(&format!("  {}", paint("(open)", Paint::Warning)));
        }
        if e["undone"] == Value::Bool(true) {
            line.push_str(&format!("  {}", paint("(undone)", Paint::Warning)));
        }
        if e["reviewed"] == Value::Bool(true) {
            line.push_str(&format!("  {}", paint("(reviewed)", Paint::Added)));
        }
        line
    }

    fn rollback(&self, e: &Value) -> String {
        let name = match e["kind"].as_str() {
            Some("time_rollback") => "time rollback",
            Some(kind) => &escape::text(kind),
            None => "?",
        };
        let head = paint(&format!("{name} #{}", e["rollback_id"]), Paint::Bold);
        let mut line = format!("{head}{}  {}", self.of(&e["session"]), what_it_went_to(e));
        let c = &e["counts"];
        if c.is_object() {
            line.push_str(&format!(": {}", rollback_counts(c)));
        }
        if let Some(actor) = e["actor"].as_str() {
            line.push_str(&format!("  (by {})", escape::text(actor)));
        }
        match e["status"].as_str() {
            Some("committed") | None => {}
            Some("recovered") => line.push_str("  (interrupted by a crash, finished at start-up)"),
            Some(_) => line.push_str(&format!("  ({})", print::rollback_status(&e["status"]))),
        }
        line
    }

    fn path_line(&self, c: &Value) -> String {
        let (mark, detail) = match c.get("action") {
            Some(action) => (action_mark(action), rollback_path_detail(c)),
            None => (change_mark(&c["change"]), self.turn_path_detail(c)),
        };
        let path = match &c["from"] {
            Value::Null => print::path_text(&c["path"]),
            from => format!("{} -> {}", print::path_text(from), print::path_text(&c["path"])),
        };
        match detail {
            Some(detail) if self.stat => format!("{mark} {path}  {}", paint(&detail, Paint::Dim)),
            _ => format!("{mark} {path}"),
        }
    }

    fn turn_path_detail(&self, c: &Value) -> Option<String> {
        match (c["kind"].as_str(), c["size"].as_u64()) {
            (_, Some(size)) if c["change"] != "deleted" => Some(style::size(size)),
            (Some(kind), _) if kind != "file" => Some(escape::text(kind).into_owned()),
            _ => None,
        }
    }
}

/// A run of writes outside any turn: `outside  3 paths +1 ~2 -0  (you / an editor)`.
fn outside(e: &Value) -> String {
    let (head, who) = match e["kind"].as_str() {
        Some("found") => ("found  ", "found at start-up"),
        _ => ("outside", "you / an editor"),
    };
    let paths = e["paths"].as_u64().unwrap_or(0);
    let noun = if paths == 1 { "path" } else { "paths" };
    format!(
        "{}  {paths} {noun} {}  {}",
        paint(head, Paint::Bold),
        super::show::added_modified_deleted(&e["counts"]),
        paint(&format!("({who})"), Paint::Dim)
    )
}

/// Where a rollback-like entry went: `to before turn 3`, `a.txt to seq 12`, `of undo #4`.
fn what_it_went_to(e: &Value) -> String {
    let t = &e["target"];
    let to = match t["to"].as_str() {
        Some("before" | "after") => format!("to {} turn {}", text_of(&t["to"]), t["turn"]),
        Some("time") => format!("to {}", localtime::answer_time(&t["at"])),
        Some("seq") => format!("to seq {}", t["seq"]),
        Some("pin") => format!("to pin {} (seq {})", text_of(&t["pin"]), t["seq"]),
        Some("redo") => match e["redo_of"].as_i64() {
            Some(id) => format!("undid #{id}"),
            None => "undid the latest undo".to_string(),
        },
        _ => "to ?".to_string(),
    };
    let paths: Vec<String> = e["paths"]
        .as_array()
        .into_iter()
        .flatten()
        .map(print::path_text)
        .collect();
    match paths.as_slice() {
        [] => to,
        [one] => format!("{one} {to}"),
        [first, second] => format!("{first}, {second} {to}"),
        [first, rest @ ..] => format!("{first} and {} more {to}", rest.len()),
    }
}

/// `+0 ~2 -1`, with what was skipped or kept.
fn rollback_counts(c: &Value) -> String {
    let mut text = super::show::added_modified_deleted(c);
    for (key, word) in [("skipped", "skipped"), ("kept", "kept")] {
        if let Some(n) = c[key].as_u64().filter(|n| *n > 0) {
            text.push_str(&format!(", {n} {word}"));
        }
    }
    text
}

fn change_mark(change: &Value) -> String {
    let (mark, colour) = match change.as_str() {
        Some("added") => ("A", Paint::Added),
        Some("deleted") => ("D", Paint::Deleted),
        Some("renamed") => ("R", Paint::Changed),
        _ => ("M", Paint::Changed),
    };
    paint(mark, colour)
}

fn action_mark(action: &Value) -> String {
    let (mark, colour) = match action.as_str() {
        Some("create") => ("A", Paint::Added),
        Some("delete" | "remove_dir") => ("D", Paint::Deleted),
        _ => ("M", Paint::Changed),
    };
    paint(mark, colour)
}

fn rollback_path_detail(c: &Value) -> Option<String> {
    let status = match c["status"].as_str() {
        Some("done" | "planned") | None => String::new(),
        Some(other) => format!(" [{}]", escape::text(other)),
    };
    match (c["lines_added"].as_u64(), c["lines_removed"].as_u64()) {
        (Some(added), Some(removed)) => Some(format!("+{added} -{removed} lines{status}")),
        _ => (!status.is_empty()).then(|| status.trim_start().to_string()),
    }
}
