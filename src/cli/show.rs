//! How a turn reads: `show` lists its paths, grouped by top directory when there are many,
//! with their diffs as the pages of them come (`turn_pages`), and ends with the totals;
//! `turn end` says the totals in one line.

use clap::Args;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;

use serde_json::{Value, json};

use super::flags::{JsonFlag, SessionArg, valid_duration, valid_time};
use super::pager::Paged;
use super::print::{change_line, heading};
use super::style::{self, Paint, paint};
use super::turn_pages::{First, Pages};
use crate::client::Client;

#[derive(Debug, Args)]
pub struct ShowCmd {
    /// A turn number or ref (default: the latest turn); with --at, a path.
    pub turn: Option<String>,
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

/// `+2 ~5 -1 R0`, coloured like a diff.
pub(super) fn counts(c: &Value) -> String {
    format!(
        "{} R{}",
        added_modified_deleted(c),
        c["renamed"].as_u64().unwrap_or(0)
    )
}

/// `+2 ~5 -1`: a turn's counts without renames, or a rollback's.
pub(super) fn added_modified_deleted(c: &Value) -> String {
    let n = |key: &str| c[key].as_u64().unwrap_or(0);
    format!(
        "{} {} {}",
        paint(&format!("+{}", n("added")), Paint::Added),
        paint(&format!("~{}", n("modified")), Paint::Changed),
        paint(&format!("-{}", n("deleted")), Paint::Deleted),
    )
}

/// `+2 ~5 -1 R0, 8 paths`.
fn totals(t: &Value, paths: usize) -> String {
    format!(
        "{}, {}",
        counts(&t["counts"]),
        style::counted(paths as u64, "path")
    )
}

/// `turn end`: one line, whatever the turn changed.
pub(super) fn turn_ended(t: &Value) {
    let ambiguous = match t["counts"]["ambiguous"].as_u64() {
        Some(n) if n > 0 => format!(" ({n} ambiguous: written while turns of several sessions were open)"),
        _ => String::new(),
    };
    let paths = t["changes"].as_array().map_or(0, Vec::len);
    println!(
        "turn {} of {} ended: {}{ambiguous}",
        t["turn"],
        super::text_of(&t["session"]),
        totals(t, paths)
    );
}

/// `show`: the heading, the paths (grouped when many, unless `all` or diffs are asked for),
/// and the totals; the paths and their diffs printed page by page as they come.
pub(super) fn turn(client: &Client, session: &str, turn: &str, cmd: &ShowCmd) -> anyhow::Result<()> {
    let first = Pages::first(client, session, turn, cmd.diff)?;
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
        summary,
        changes,
        mut pages,
    } = first;
    let total = pages.total();
    out.write(&format!("{}\n", heading(&summary)))?;
    if cmd.diff || cmd.all || total <= GROUP_OVER {
        let mut page = Some(changes);
        while let Some(changes) = page {
            if !out.write(&listed(&changes, cmd.diff, &summary))? {
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
            summary["turn"],
            super::text_of(&summary["session"])
        );
        out.write(&text)?;
    }
    out.write(&format!("{}\n", totals(&summary, total)))?;
    Ok(())
}

/// One line per change, each followed by its diff when `with_diff`.
fn listed(changes: &[Value], with_diff: bool, turn: &Value) -> String {
    let mut out = String::new();
    for change in changes {
        let _ = writeln!(out, "{}", change_line(change));
        if with_diff {
            diff_of(change, turn, &mut out);
        }
    }
    out
}

fn diff_of(change: &Value, turn: &Value, out: &mut String) {
    if let Some(diff) = change["diff"].as_str() {
        out.push_str(&super::print::diff_lines(diff));
    } else if change["binary"] == Value::Bool(true) {
        let _ = writeln!(out, "    (binary content differs)");
    } else if change["diff_omitted"] == Value::Bool(true) {
        let _ = writeln!(
            out,
            "    (diff too large for one answer: `filewatchd show --at before:{n} --session {s} {path}` and `--at after:{n}` print the two sides)",
            n = turn["turn"],
            s = super::escape::quoted(turn["session"].as_str().unwrap_or_default()),
            path = super::escape::quoted(change["path"].as_str().unwrap_or_default()),
        );
    }
}

/// `--json`: the turn as the API gives it in one answer (docs/api.md), its changes written
/// page by page as they come.
fn as_json(first: First) -> anyhow::Result<()> {
    let First {
        mut summary,
        changes,
        mut pages,
    } = first;
    summary["changes"] = json!([]);
    let whole = serde_json::to_string_pretty(&summary)?;
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
fn grouped(changes: &[Value], out: &mut String) {
    let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for change in changes {
        let path = change["path"].as_str().unwrap_or_default();
        // A top directory's own entry goes with what lies beneath it.
        let key = match path.split_once('/') {
            Some((top, _)) => format!("{top}/"),
            None if change["kind"] == "dir" => format!("{path}/"),
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
            super::escape::quoted(dir)
        };
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            paint(&name, Paint::Bold),
            style::counted(members.len() as u64, "path"),
            counts(&group_counts(members))
        );
    }
    let _ = writeln!(
        out,
        "  ({} in {})",
        style::counted(changes.len() as u64, "path"),
        style::count(shown, "directory", "directories")
    );
}

fn group_counts(members: &[&Value]) -> Value {
    let mut counts = serde_json::json!({"added": 0, "modified": 0, "deleted": 0, "renamed": 0});
    for change in members {
        let key = change["change"].as_str().unwrap_or("modified");
        if let Some(n) = counts.get_mut(key) {
            *n = Value::from(n.as_u64().unwrap_or(0) + 1);
        }
    }
    counts
}
