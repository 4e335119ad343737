//! `filewatchd log`: the timeline of one session (the latest by default) or of all, newest
//! first, one line per entry, read page by page from `GET /v1/timeline`.

use clap::Args;
use std::fmt::Write;

use super::flags::{JsonFlag, ServeArgs, SessionArg, valid_duration, valid_time};
use super::style::{self, Paint, paint};
use super::{Client, Hint, encode, escape, localtime, pager, print, session};
use crate::history::ChangeKind;
use crate::model::Kind;
use crate::model::answer::{Action, ActionStatus, RollbackCounts, TargetTo};
use crate::store::journal::Status;
use crate::timeline::{OutsideKind, RollbackEntryKind};
use crate::wire::error::ErrorCode;
use crate::wire::session::Session;
use crate::wire::timeline::{
    Entry, Order, OutsideEntry, PathChange, RollbackEntry, RollbackPath, Timeline, TurnEntry,
};

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
    /// Only the entries that changed these paths (or what lies beneath them), as `git log --
    /// PATH` (after `--`).
    #[arg(last = true, value_name = "PATH")]
    pub only: Vec<String>,
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

pub(super) fn log(client: &Client, args: &ServeArgs, cmd: LogCmd) -> anyhow::Result<()> {
    let only = cmd
        .only
        .iter()
        .map(|p| super::workspace_relative(client, args, p))
        .collect::<anyhow::Result<Vec<_>>>()?;
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
    if cmd.paths || cmd.stat || !only.is_empty() {
        extra.push_str("&paths=true");
    }
    if cmd.unreviewed {
        extra.push_str("&unreviewed=true");
    }
    let timeline = if only.is_empty() {
        fetch(client, scope, since.as_deref(), limit, &extra)?
    } else {
        touching(
            fetch(client, scope, since.as_deref(), None, &extra)?,
            &only,
            limit,
        )
    };
    if cmd.json.json {
        println!("{}", serde_json::to_string_pretty(&timeline)?);
        return Ok(());
    }
    let view = View {
        all: timeline.session.is_none(),
        paths: cmd.paths || !only.is_empty(),
        stat: cmd.stat,
        sessions,
    };
    let mut out = String::new();
    match (timeline.entries.is_empty(), &cmd.since) {
        (true, _) if !only.is_empty() => out.push_str(&format!(
            "no entry changed {}\n",
            only.iter()
                .map(|p| escape::quoted(p).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (true, Some(since)) => out.push_str(&format!("nothing since {since}\n")),
        (true, None) => out.push_str("nothing yet: no turn, rollback or restore\n"),
        _ => {}
    }
    for entry in &timeline.entries {
        view.entry(entry, &mut out);
    }
    if timeline.next_before.is_some() && cmd.limit.is_none() {
        let _ = writeln!(
            out,
            "{}",
            paint("(older entries: --limit N shows more)", Paint::Dim)
        );
    }
    pager::show(&out, !cmd.no_pager)?;
    Ok(())
}

/// The entries that changed a path at or beneath one of `only`, each with those changes
/// alone; at most `limit` of them.
fn touching(mut timeline: Timeline, only: &[String], limit: Option<u64>) -> Timeline {
    let wanted = |path: &str| {
        only.iter().any(|o| {
            o.is_empty() || path == o || path.strip_prefix(o.as_str()).is_some_and(|r| r.starts_with('/'))
        })
    };
    timeline.entries.retain_mut(|entry| match entry {
        Entry::Turn(TurnEntry { changes, .. }) | Entry::Outside(OutsideEntry { changes, .. }) => {
            let list = changes.get_or_insert_with(Vec::new);
            list.retain(|c| wanted(&c.path));
            !list.is_empty()
        }
        Entry::Rollback(rollback) => {
            let list = rollback.changes.get_or_insert_with(Vec::new);
            list.retain(|c| wanted(&c.path));
            !list.is_empty()
        }
    });
    if let Some(limit) = limit {
        timeline.entries.truncate(limit as usize);
    }
    timeline.next_before = None;
    timeline
}

/// Up to `limit` entries (all without one), newest first, and where more would start, as
/// one timeline.
fn fetch(
    client: &Client,
    session: Option<String>,
    since: Option<&str>,
    limit: Option<u64>,
    extra: &str,
) -> anyhow::Result<Timeline> {
    let mut timeline = Timeline {
        session,
        order: Order::NewestFirst,
        entries: Vec::new(),
        next_before: None,
    };
    loop {
        let wanted = limit.map_or(PAGE_MAX, |l| (l - timeline.entries.len() as u64).min(PAGE_MAX));
        let mut query = format!("/v1/timeline?limit={wanted}");
        if let Some(session) = &timeline.session {
            query.push_str(&format!("&session={}", encode(session)));
        }
        if let Some(since) = since {
            query.push_str(&format!("&since={}", encode(since)));
        }
        if let Some(before) = &timeline.next_before {
            query.push_str(&format!("&before={}", encode(before)));
        }
        // `&paths=true`, `&unreviewed=true`.
        query.push_str(extra);
        let page: Timeline = client
            .get_whole(&query)
            .hint(ErrorCode::NotFound, "`filewatchd sessions` lists the sessions")?;
        timeline.entries.extend(page.entries);
        timeline.next_before = page.next_before;
        let full = limit.is_some_and(|l| timeline.entries.len() as u64 >= l);
        if full || timeline.next_before.is_none() {
            return Ok(timeline);
        }
    }
}

impl View {
    fn entry(&self, e: &Entry, out: &mut String) {
        let time = paint(&localtime::answer_time(e.time()), Paint::Dim);
        let line = match e {
            Entry::Turn(turn) => self.turn(turn),
            Entry::Outside(run) => outside(run),
            Entry::Rollback(rollback) => self.rollback(rollback),
        };
        let _ = writeln!(out, "{time}  {line}");
        if let Entry::Rollback(RollbackEntry {
            recovery: Some(note), ..
        }) = e
        {
            let _ = writeln!(out, "    {}", escape::text(note));
        }
        if !(self.paths || self.stat) {
            return;
        }
        let lines: Vec<String> = match e {
            Entry::Turn(TurnEntry { changes, .. }) | Entry::Outside(OutsideEntry { changes, .. }) => {
                changes.iter().flatten().map(|c| self.path_line(c)).collect()
            }
            Entry::Rollback(RollbackEntry { changes, .. }) => changes
                .iter()
                .flatten()
                .map(|c| self.rollback_path_line(c))
                .collect(),
        };
        for line in lines {
            let _ = writeln!(out, "    {line}");
        }
    }

    /// Whose entry, in the timeline of every session.
    fn of(&self, session: Option<&str>) -> String {
        match session {
            Some(name) if self.all => format!(" of {}", session::short_name(name, &self.sessions)),
            _ => String::new(),
        }
    }

    fn turn(&self, e: &TurnEntry) -> String {
        let head = paint(&format!("turn {}", e.turn), Paint::Bold);
        let mut line = format!(
            "{head}{}  {}",
            self.of(Some(&e.session)),
            super::show::turn_counts(&e.counts)
        );
        if e.counts.ambiguous > 0 {
            line.push_str(&format!(" ({} ambiguous)", e.counts.ambiguous));
        }
        if let Some(prompt) = e.prompt.as_deref().filter(|p| !p.is_empty()) {
            line.push_str(&format!("  {}", escape::text(prompt)));
        }
        if !e.git.is_empty() {
            line.push_str(&format!("  git: {}", escape::text(&e.git.join(", "))));
        }
        let undone = undone_words(e);
        for (flag, word, colour) in [
            (e.open, "(open)", Paint::Warning),
            (e.undone, undone.as_str(), Paint::Warning),
            (e.reviewed, "(reviewed)", Paint::Added),
        ] {
            if flag {
                line.push_str(&format!("  {}", paint(word, colour)));
            }
        }
        line
    }

    fn rollback(&self, e: &RollbackEntry) -> String {
        let name = match e.kind {
            RollbackEntryKind::TimeRollback => "time rollback".to_string(),
            kind => print::spelled(&kind),
        };
        let head = paint(&format!("{name} #{}", e.rollback_id), Paint::Bold);
        let mut line = format!("{head}{}  {}", self.of(e.session.as_deref()), what_it_went_to(e));
        if let Some(counts) = &e.counts {
            line.push_str(&format!(": {}", rollback_counts(counts)));
        }
        if let Some(actor) = &e.actor {
            line.push_str(&format!("  (by {})", print::spelled(actor)));
        }
        match e.status {
            Status::Committed => {}
            Status::Recovered => line.push_str("  (interrupted by a crash, finished at start-up)"),
            status => line.push_str(&format!("  ({})", print::rollback_status(status))),
        }
        line
    }

    fn path_line(&self, c: &PathChange) -> String {
        let path = print::changed_path(&c.path, c.from.as_deref());
        self.with_detail(change_mark(c.change), path, turn_path_detail(c))
    }

    fn rollback_path_line(&self, c: &RollbackPath) -> String {
        let mut path = escape::quoted(&c.path).into_owned();
        // A path the rollback planned but did not change is said to be so, not listed as a change.
        if c.status != ActionStatus::Done {
            path.push_str(&format!("  [{}]", super::print::spelled(&c.status)));
        }
        self.with_detail(action_mark(c.action), path, rollback_path_detail(c))
    }

    fn with_detail(&self, mark: String, path: String, detail: Option<String>) -> String {
        match detail {
            Some(detail) if self.stat => format!("{mark} {path}  {}", paint(&detail, Paint::Dim)),
            _ => format!("{mark} {path}"),
        }
    }
}

fn turn_path_detail(c: &PathChange) -> Option<String> {
    match c.size {
        Some(size) if c.change != ChangeKind::Deleted => Some(style::size(size)),
        _ if c.kind != Kind::File => Some(c.kind.name().to_string()),
        _ => None,
    }
}

/// A run of writes outside any turn: `outside  3 paths +1 ~2 -0  (you / an editor)`.
fn outside(e: &OutsideEntry) -> String {
    let (head, who) = match e.kind {
        OutsideKind::Found => ("found  ", "found at start-up"),
        OutsideKind::Outside => ("outside", "you / an editor"),
    };
    let noun = if e.paths == 1 { "path" } else { "paths" };
    // Written and changed differ when a path is back as it was by the run's end: the counts,
    // and `--paths`, are what changed.
    let c = &e.counts;
    let changed = c.added + c.modified + c.deleted + 2 * c.renamed; // a rename: two paths
    let back = match e.paths.saturating_sub(changed) {
        0 => String::new(),
        n => format!(" ({n} back as {})", if n == 1 { "it was" } else { "they were" }),
    };
    format!(
        "{}  {} {noun}{back} {}  {}",
        paint(head, Paint::Bold),
        e.paths,
        super::show::added_modified_deleted(&e.counts),
        paint(&format!("({who})"), Paint::Dim)
    )
}

/// Where a rollback-like entry went: `to before turn 3`, `a.txt to seq 12`, `of undo #4`.
fn what_it_went_to(e: &RollbackEntry) -> String {
    let or_null = |n: Option<i64>| n.map_or_else(|| "null".to_string(), |n| n.to_string());
    let to = match &e.target {
        Some(t) => match t.to {
            TargetTo::Before | TargetTo::After => {
                format!("to {} turn {}", print::spelled(&t.to), or_null(t.turn))
            }
            TargetTo::Time => format!(
                "to {}",
                t.at.as_deref().map_or("null".into(), localtime::answer_time)
            ),
            TargetTo::Seq => format!("to seq {}", t.seq),
            TargetTo::Pin => format!(
                "to pin {} (seq {})",
                t.pin.as_deref().map_or("null".into(), escape::text),
                t.seq
            ),
            TargetTo::Redo => match e.redo_of {
                Some(id) => format!("undid #{id}"),
                None => "undid the latest undo".to_string(),
            },
        },
        None => "to ?".to_string(),
    };
    let paths: Vec<String> = e
        .paths
        .iter()
        .flatten()
        .map(|p| escape::quoted(p).into_owned())
        .collect();
    match paths.as_slice() {
        [] => to,
        [one] => format!("{one} {to}"),
        [first, second] => format!("{first}, {second} {to}"),
        [first, rest @ ..] => format!("{first} and {} more {to}", rest.len()),
    }
}

/// `+0 ~2 -1`, with what was skipped or kept.
fn rollback_counts(c: &RollbackCounts) -> String {
    let mut text = super::show::coloured(c.added, c.modified, c.deleted);
    for (n, word) in [(c.skipped, "skipped"), (c.kept, "kept")] {
        if n > 0 {
            text.push_str(&format!(", {n} {word}"));
        }
    }
    text
}

fn change_mark(change: ChangeKind) -> String {
    let colour = match change {
        ChangeKind::Added => Paint::Added,
        ChangeKind::Deleted => Paint::Deleted,
        ChangeKind::Renamed | ChangeKind::Modified => Paint::Changed,
    };
    paint(print::change_letter(change), colour)
}

fn action_mark(action: Action) -> String {
    let (mark, colour) = match action {
        Action::Create => ("A", Paint::Added),
        Action::Delete | Action::RemoveDir => ("D", Paint::Deleted),
        Action::Restore | Action::SetMode | Action::Relink => ("M", Paint::Changed),
    };
    paint(mark, colour)
}

fn rollback_path_detail(c: &RollbackPath) -> Option<String> {
    let status = match c.status {
        ActionStatus::Done | ActionStatus::Planned => String::new(),
        other => format!(" [{}]", print::spelled(&other)),
    };
    match (c.lines_added, c.lines_removed) {
        (Some(added), Some(removed)) => Some(format!("+{added} -{removed} lines{status}")),
        _ => (!status.is_empty()).then(|| status.trim_start().to_string()),
    }
}

/// `(undone)`, or what an undo that skipped or kept some of the turn's paths left:
/// `(partly undone: Cargo.toml kept)`.
fn undone_words(e: &TurnEntry) -> String {
    match e.kept.as_slice() {
        [] => "(undone)".to_string(),
        [one] => format!("(partly undone: {} kept)", escape::quoted(one)),
        [first, rest @ ..] => format!(
            "(partly undone: {} and {} more kept)",
            escape::quoted(first),
            rest.len()
        ),
    }
}
