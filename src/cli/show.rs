//! How a turn reads: `show` lists its paths, grouped by top directory when there are many,
//! with their diffs as the pages of them come (`turn_pages`), and ends with the totals;
//! `turn end` says the totals in one line.

use clap::Args;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;

use super::escape;
use super::flags::{JsonFlag, SessionArg, valid_duration, valid_time};
use super::pager::Paged;
use super::print::{change_line, heading};
use super::style::{self, Paint, paint};
use super::turn_pages::{First, Pages};
use crate::client::Client;
use crate::history::{ChangeKind, Counts};
use crate::model::Kind;
use crate::wire::turn::{Change, Turn, TurnSummary};

#[derive(Debug, Args)]
pub struct ShowCmd {
    /// A turn number or ref (default: the latest turn); with --at, a path.
    pub turn: Option<String>,
    /// Only the turn's changes at or beneath this path (`show 3 --diff src/app.rs`).
    #[arg(value_name = "PATH")]
    pub path: Option<String>,
    /// Print the content the path had at a boundary (`before:N`, `after:N`, `seq:S`), a time
    /// (RFC 3339) or a duration ago (`10m`).
    #[arg(long, value_name = "WHEN", value_parser = valid_when)]
    pub at: Option<String>,
    #[command(flatten)]
    pub session: SessionArg,
    /// Include unified diffs of text files.
    #[arg(long)]
    pub diff: bool,
    /// List every path, even when there are many (they are grouped by directory otherwise).
    #[arg(long, visible_alias = "paths")]
    pub all: bool,
    /// Print straight to the terminal, never through $PAGER.
    #[arg(long)]
    pub no_pager: bool,
    #[command(flatten)]
    pub json: JsonFlag,
}

/// `show --at`: a boundary, a time or a duration ago.
fn valid_when(text: &str) -> Result<String, String> {
    let boundary = matches!(text.split_once(':'), Some(("before" | "after" | "seq", _)));
    if let (false, Ok(utc)) = (boundary, valid_time(text)) {
        return Ok(utc);
    }
    if boundary || valid_duration(text).is_ok() {
        return Ok(text.to_string());
    }
    Err(format!(
        "{text:?} is not before:N, after:N, seq:S, an RFC 3339 time (2026-11-30T10:00:00Z) or a duration ago (10m)"
    ))
}

/// Above this many paths, `show` groups them by top directory (`--all` lists each).
const GROUP_OVER: usize = 20;

/// `+2 ~5 -1 R0`, coloured like a diff: a turn's counts.
pub(super) fn turn_counts(c: &Counts) -> String {
    format!("{} R{}", added_modified_deleted(c), c.renamed)
}

/// `+2 ~5 -1`: a run of outside writes' counts, without renames.
pub(super) fn added_modified_deleted(c: &Counts) -> String {
    coloured(c.added, c.modified, c.deleted)
}

/// `+2 ~5 -1`, coloured like a diff.
pub(super) fn coloured(added: usize, modified: usize, deleted: usize) -> String {
    format!(
        "{} {} {}",
        paint(&format!("+{added}"), Paint::Added),
        paint(&format!("~{modified}"), Paint::Changed),
        paint(&format!("-{deleted}"), Paint::Deleted),
    )
}

/// `+2 ~5 -1 R0, 8 paths`.
fn totals(t: &TurnSummary, paths: usize) -> String {
    format!(
        "{}, {}",
        turn_counts(&t.counts),
        style::counted(paths as u64, "path")
    )
}

/// `turn end`: one line, whatever the turn changed.
pub(super) fn turn_ended(t: &Turn) {
    let ambiguous = match t.summary.counts.ambiguous {
        0 => String::new(),
        n => format!(" ({n} ambiguous: written while turns of several sessions were open)"),
    };
    println!(
        "turn {} of {} ended: {}{ambiguous}",
        t.summary.turn,
        escape::text(&t.summary.session),
        totals(&t.summary, t.changes.len())
    );
    print!("{}", git_lines(&t.summary));
}

/// `  git: main 1a2b3c4 → 9f8e7d6`: a line for each thing that moved in git during the turn.
fn git_lines(t: &TurnSummary) -> String {
    t.git
        .iter()
        .map(|moved| format!("  git: {}\n", escape::text(moved)))
        .collect()
}

/// `show`: the heading, the paths (grouped when many, unless `all` or diffs are asked for),
/// and the totals; the paths and their diffs printed page by page as they come.
pub(super) fn turn(
    client: &Client,
    session: &str,
    turn: &str,
    path: Option<&str>,
    cmd: &ShowCmd,
) -> anyhow::Result<()> {
    let first = Pages::first(client, session, turn, cmd.diff, path)?;
    if cmd.json.json {
        return as_json(first);
    }
    let mut out = Paged::new(!cmd.no_pager);
    let printed = print_pages(first, cmd, &mut out);
    // The pager is waited for (and the terminal given back) before an error is told.
    out.finish()?;
    printed
}

fn print_pages(first: First, cmd: &ShowCmd, out: &mut Paged) -> anyhow::Result<()> {
    let First {
        turn,
        changes,
        mut pages,
    } = first;
    let summary = &turn.summary;
    let total = pages.total();
    out.write(&format!("{}\n{}", heading(summary), git_lines(summary)))?;
    if let Some(path) = &cmd.path {
        return print_narrowed(Some(changes), pages, cmd, summary, path, out);
    }
    if cmd.diff || cmd.all || total <= GROUP_OVER {
        let mut page = Some(changes);
        while let Some(changes) = page {
            if !out.write(&listed(&changes, cmd.diff, summary))? {
                return Ok(());
            }
            page = pages.next()?;
        }
    } else {
        let mut all = changes;
        while let Some(more) = pages.next()? {
            all.extend(more);
        }
        let mut text = String::new();
        grouped(&all, &mut text);
        let _ = writeln!(
            text,
            "  (`filewatchd show {} --session {} --all` lists every path)",
            summary.turn,
            escape::text(&summary.session)
        );
        out.write(&text)?;
    }
    out.write(&format!("{}\n", totals(summary, total)))?;
    Ok(())
}

/// A turn narrowed to `path`: its changes there, and their own counts (not the turn's); a turn
/// that changed nothing there says so.
fn print_narrowed(
    mut page: Option<Vec<Change>>,
    mut pages: Pages<'_>,
    cmd: &ShowCmd,
    summary: &TurnSummary,
    path: &str,
    out: &mut Paged,
) -> anyhow::Result<()> {
    let mut counts = Counts::default();
    let mut paths = 0;
    while let Some(changes) = page {
        let members: Vec<&Change> = changes.iter().collect();
        let c = group_counts(&members);
        (counts.added, counts.modified) = (counts.added + c.added, counts.modified + c.modified);
        (counts.deleted, counts.renamed) = (counts.deleted + c.deleted, counts.renamed + c.renamed);
        paths += changes.len();
        if !out.write(&listed(&changes, cmd.diff, summary))? {
            return Ok(());
        }
        page = pages.next()?;
    }
    let shown = escape::quoted(path);
    let last = match paths {
        0 => format!("turn {} changed nothing at or beneath {shown}\n", summary.turn),
        n => format!(
            "{}, {} at or beneath {shown}\n",
            turn_counts(&counts),
            style::counted(n as u64, "path")
        ),
    };
    out.write(&last)?;
    Ok(())
}

/// One line per change, each followed by its diff when `with_diff`.
fn listed(changes: &[Change], with_diff: bool, turn: &TurnSummary) -> String {
    let mut out = String::new();
    for change in changes {
        let _ = writeln!(out, "{}", change_line(change));
        if with_diff {
            diff_of(change, turn, &mut out);
        }
    }
    out
}

fn diff_of(change: &Change, turn: &TurnSummary, out: &mut String) {
    if let Some(diff) = &change.diff {
        out.push_str(&super::print::diff_lines(diff));
    } else if change.binary {
        let _ = writeln!(out, "    (binary content differs)");
    } else if change.diff_omitted {
        let _ = writeln!(
            out,
            "    (diff too large for one answer: `filewatchd show --at before:{n} --session {s} {path}` and `--at after:{n}` print the two sides)",
            n = turn.turn,
            s = escape::quoted(&turn.session),
            path = escape::quoted(&change.path),
        );
    }
}

/// `--json`: the turn as the API gives it in one answer (docs/api.md), its changes written
/// page by page as they come.
fn as_json(first: First) -> anyhow::Result<()> {
    let First {
        turn,
        changes,
        mut pages,
    } = first;
    let whole = serde_json::to_string_pretty(&turn)?;
    let head = whole.strip_suffix("[]\n}").unwrap_or(&whole);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(head.as_bytes())?;
    stdout.write_all(b"[")?;
    let mut any = false;
    let mut page = Some(changes);
    while let Some(changes) = page {
        for change in &changes {
            let text = serde_json::to_string_pretty(change)?;
            // A change's place in the whole, as `to_string_pretty` of it would indent it.
            let indented = text.replace('\n', "\n    ");
            let sep = if any { ",\n    " } else { "\n    " };
            stdout.write_all(format!("{sep}{indented}").as_bytes())?;
            any = true;
        }
        page = pages.next()?;
    }
    stdout.write_all(if any { b"\n  ]\n}\n" } else { b"]\n}\n" })?;
    Ok(stdout.flush()?)
}

/// One line per top directory holding several changed paths (`src/  12 paths  +3 ~9 -0 R0`);
/// a directory with one, and the root's own files (unless they are many too), are listed as
/// they are.
fn grouped(changes: &[Change], out: &mut String) {
    let mut groups: BTreeMap<String, Vec<&Change>> = BTreeMap::new();
    for change in changes {
        let path = change.path.as_str();
        // A top directory's own entry goes with what lies beneath it.
        let key = match path.split_once('/') {
            Some((top, _)) => format!("{top}/"),
            None if change.kind == Kind::Dir => format!("{path}/"),
            None => String::new(),
        };
        groups.entry(key).or_default().push(change);
    }
    let mut shown = 0;
    for (dir, members) in &groups {
        let listed = if dir.is_empty() {
            members.len() <= GROUP_OVER
        } else {
            members.len() == 1
        };
        if listed {
            for change in members {
                let _ = writeln!(out, "{}", change_line(change));
            }
            continue;
        }
        shown += 1;
        let name = if dir.is_empty() {
            "./".into()
        } else {
            escape::quoted(dir)
        };
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            paint(&name, Paint::Bold),
            style::counted(members.len() as u64, "path"),
            turn_counts(&group_counts(members))
        );
    }
    let _ = writeln!(
        out,
        "  ({} in {})",
        style::counted(changes.len() as u64, "path"),
        style::count(shown, "directory", "directories")
    );
}

fn group_counts(members: &[&Change]) -> Counts {
    let mut counts = Counts::default();
    for change in members {
        match change.change {
            ChangeKind::Added => counts.added += 1,
            ChangeKind::Modified => counts.modified += 1,
            ChangeKind::Deleted => counts.deleted += 1,
            ChangeKind::Renamed => counts.renamed += 1,
        }
    }
    counts
}
