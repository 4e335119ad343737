//! How a turn reads (issue 17): `show` lists its paths, grouped by top directory when there
//! are many, and ends with the totals; `turn end` says the totals in one line.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::print::{change_line, heading};
use super::style::{self, Paint, paint};

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
fn totals(t: &Value) -> String {
    let paths = t["changes"].as_array().map_or(0, Vec::len) as u64;
    format!("{}, {}", counts(&t["counts"]), style::counted(paths, "path"))
}

/// `turn end`: one line, whatever the turn changed.
pub(super) fn turn_ended(t: &Value) {
    let ambiguous = match t["counts"]["ambiguous"].as_u64() {
        Some(n) if n > 0 => format!(" ({n} ambiguous: written while turns of several sessions were open)"),
        _ => String::new(),
    };
    println!(
        "turn {} of {} ended: {}{ambiguous}",
        t["turn"],
        super::text_of(&t["session"]),
        totals(t)
    );
}

/// `show`: the heading, the paths (grouped when many, unless `all` or diffs are asked for),
/// and the totals.
pub(super) fn turn(t: &Value, with_diff: bool, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", heading(t));
    let changes = t["changes"].as_array().map_or(&[][..], Vec::as_slice);
    if with_diff || all || changes.len() <= GROUP_OVER {
        for change in changes {
            let _ = writeln!(out, "{}", change_line(change));
            if with_diff {
                diff_of(change, &mut out);
            }
        }
    } else {
        grouped(changes, &mut out);
        let _ = writeln!(
            out,
            "  (`filewatchd show {} --session {} --all` lists every path)",
            t["turn"],
            super::text_of(&t["session"])
        );
    }
    let _ = writeln!(out, "{}", totals(t));
    out
}

fn diff_of(change: &Value, out: &mut String) {
    if let Some(diff) = change["diff"].as_str() {
        for line in diff.lines() {
            let colour = match line.as_bytes().first() {
                Some(b'+') => Some(Paint::Added),
                Some(b'-') => Some(Paint::Deleted),
                Some(b'@') => Some(Paint::Hunk),
                _ => None,
            };
            let _ = writeln!(
                out,
                "{}",
                colour.map_or_else(|| line.to_string(), |c| paint(line, c))
            );
        }
    } else if change["binary"] == Value::Bool(true) {
        let _ = writeln!(out, "    (binary content differs)");
    }
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
        let name = if dir.is_empty() { "./" } else { dir.as_str() };
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            paint(name, Paint::Bold),
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
