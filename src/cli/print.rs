//! Human-readable output of the CLI; `--json` prints the daemon's answer instead.

use serde_json::Value;

use super::escape;
use super::style::{self, Paint};

use crate::history::ChangeKind;
use crate::model::answer::{ActionLine, ActionStatus, PathLine, TargetTo};
use crate::model::{Decided, Kind};
use crate::store::journal::Status;
use crate::wire::history::{History, Version};
use crate::wire::rollback::RollbackAnswer;
use crate::wire::turn::{Change, TurnStarted, TurnSummary};
use crate::wire::upkeep::{GcReport, Verified};

/// The markers of `log`, `show` and `turn`, for their `--help`.
pub const LEGEND: &str = "Markers: counts +N added, ~N modified, -N deleted, RN renamed; \
per path A added, M modified, D deleted, R renamed (from -> to). A rollback's counts are the \
paths it created (+), restored (~: content, mode or link target) and deleted (-).";

/// Prints `answer` as JSON or through `human`.
pub fn answer<T: serde::Serialize>(answer: &T, json: bool, human: impl FnOnce(&T)) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(answer)?);
    } else {
        human(answer);
    }
    Ok(())
}

pub fn turn_started(a: &TurnStarted) {
    if let Some(ended) = &a.ended {
        println!(
            "ended turn {} of {} first",
            ended.summary.turn,
            escape::text(&a.session)
        );
    }
    println!(
        "started turn {} of {} (seq {})",
        a.turn,
        escape::text(&a.session),
        a.start_seq
    );
}

pub(super) fn heading(t: &TurnSummary) -> String {
    let c = &t.counts;
    let label = t
        .label
        .as_deref()
        .and_then(|l| l.lines().next())
        .map(|l| format!("  {}", escape::text(l)))
        .unwrap_or_default();
    let ended = t.ended_at.as_deref().map_or("open".into(), escape::text);
    let ambiguous = match c.ambiguous {
        0 => String::new(),
        n => format!("  ({n} ambiguous: written while turns of several sessions were open)"),
    };
    format!(
        "turn {} of {}{label}\n  {} .. {}  +{} ~{} -{} R{}{ambiguous}",
        t.turn,
        escape::text(&t.session),
        escape::text(&t.started_at),
        ended,
        c.added,
        c.modified,
        c.deleted,
        c.renamed
    )
}

/// A change's letter in the lists of `show`, `turn` and `log --paths` (`LEGEND`).
pub(super) fn change_letter(change: ChangeKind) -> &'static str {
    match change {
        ChangeKind::Added => "A",
        ChangeKind::Modified => "M",
        ChangeKind::Deleted => "D",
        ChangeKind::Renamed => "R",
    }
}

/// A changed path as one line, a rename as `from -> to`.
pub(super) fn changed_path(path: &str, from: Option<&str>) -> String {
    match from {
        None => escape::quoted(path).into_owned(),
        Some(from) => format!("{} -> {}", escape::quoted(from), escape::quoted(path)),
    }
}

pub(super) fn change_line(c: &Change) -> String {
    let mark = change_letter(c.change);
    let path = changed_path(&c.path, c.from.as_deref());
    let mut notes = vec![match &c.state.target {
        Some(target) => format!("symlink to {}", escape::quoted(target)),
        None => c.kind.name().to_string(),
    }];
    if let Some(size) = c.state.size {
        notes.push(style::size(size));
    }
    if c.mode_changed == Some(true) {
        notes.push(match &c.state.mode {
            Some(mode) => format!("mode {}", escape::text(mode)),
            None => "mode".into(),
        });
    }
    if c.state.too_large {
        notes.push("too large: content not stored".into());
    }
    if c.state.unreadable {
        notes.push("unreadable: filewatchd cannot read it, content not recorded".into());
    }
    if c.ambiguous {
        notes.push("ambiguous: another session's turn was open too".into());
    }
    match c.decided {
        Some(Decided::ToolCall) => notes.push("in a tool call".into()),
        Some(Decided::EditTool) => notes.push("named by its edit tool".into()),
        Some(Decided::Process) => notes.push("written by its agent's process".into()),
        _ => {}
    }
    if !c.also_written_by.is_empty() {
        let others: Vec<String> = c
            .also_written_by
            .iter()
            .map(|w| escape::text(w).into_owned())
            .collect();
        notes.push(format!("also written by {} meanwhile", others.join(", ")));
    }
    format!("  {mark} {path}  ({})", notes.join(", "))
}

/// A unified diff, its added, removed and hunk lines coloured (`--color`), each line
/// escaped (`escape::text`: the lines are the file's and its name's).
pub(super) fn diff_lines(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len());
    for line in diff.lines() {
        let line = escape::text(line);
        let paint = match line.as_bytes().first() {
            Some(b'+') => Some(Paint::Added),
            Some(b'-') => Some(Paint::Deleted),
            Some(b'@') => Some(Paint::Hunk),
            _ => None,
        };
        out.push_str(&paint.map_or_else(|| line.to_string(), |p| style::paint(&line, p)));
        out.push('\n');
    }
    out
}

/// A rollback's journal status in words.
pub(super) fn rollback_status(status: Status) -> String {
    match status {
        Status::Reverted => "failed: everything it changed was put back, nothing changed".into(),
        Status::Reverting => "failed: putting back what it changed, finished at the next start".into(),
        Status::Prepared => "being applied".into(),
        other => other.name().into(),
    }
}

/// `history`: the path, then one line per version, its columns as wide as their widest entry
/// (a seq of 100 and one of 9 line up).
pub fn history(a: &History) {
    println!("{}", escape::quoted(&a.path));
    let rows: Vec<[String; 4]> = a
        .versions
        .iter()
        .map(|v| {
            [
                format!("#{}", v.seq),
                escape::text(&v.time).into_owned(),
                version_who(v),
                version_what(v),
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (seq_w, time_w, who_w) = (width(0), width(1), width(2));
    for [seq, time, who, what] in &rows {
        println!("  {seq:<seq_w$}  {time:<time_w$}  {who:<who_w$}  {what}");
    }
}

/// Who wrote a version: its origin, and the session's turn; how that was decided when a tool
/// call decided it.
fn version_who(v: &Version) -> String {
    let how = match v.decided {
        Some(Decided::ToolCall) => " (tool call)",
        Some(Decided::EditTool) => " (edit tool)",
        Some(Decided::Process) => " (its agent's process)",
        Some(Decided::BetweenCalls) => " (you: between tool calls)",
        _ => "",
    };
    match (&v.session, v.turn) {
        (Some(s), Some(t)) => format!("{} {} turn {t}{how}", v.origin.name(), escape::text(s)),
        _ => format!("{}{how}", v.origin.name()),
    }
}

/// What a version is: a file's size, hash and mode, a symlink's target, ...
fn version_what(v: &Version) -> String {
    match v.kind {
        Kind::File => {
            let hash = match &v.hash {
                Some(h) => escape::text(h.get(..12).unwrap_or(h)).into_owned(),
                None => "(unreadable: content not recorded)".into(),
            };
            let mode = match &v.mode {
                Some(mode) => format!(" {}", escape::text(mode)),
                None if v.executable == Some(true) => " +x".into(),
                None => String::new(),
            };
            format!("file {} {hash}{mode}", style::size(v.size.unwrap_or(0)))
        }
        Kind::Symlink => match &v.target {
            Some(target) => format!("symlink -> {}", escape::quoted(target)),
            None => "symlink -> -".into(),
        },
        Kind::Untracked => "untracked (an ignore rule hides it: its content is not recorded)".into(),
        other => other.name().to_string(),
    }
}

/// A rollback's answer; `what` names it when it is not the whole workspace's (`restore of
/// a.txt`, `revert of a.txt`), where its operation would (`undo`, `rollback`).
pub fn rollback(answer: &RollbackAnswer, what: Option<&str>) {
    let a = &answer.outcome;
    let target = &a.target;
    let boundary = match target.to {
        TargetTo::Redo if a.session.is_none() => {
            "the state before the latest time rollback, for the paths it changed".to_string()
        }
        TargetTo::Redo => "the state before the latest undo, for the paths it changed".to_string(),
        TargetTo::Time => format!("the state recorded at {}", or_dash(target.at.as_deref())),
        TargetTo::Pin => format!("pin {} (seq {})", or_dash(target.pin.as_deref()), target.seq),
        TargetTo::Seq => format!("the state recorded at seq {}", target.seq),
        to @ (TargetTo::Before | TargetTo::After) => {
            let turn = target.turn.map_or("null".into(), |t| t.to_string());
            format!("{} turn {turn}", spelled(&to))
        }
    };
    let mode = if a.dry_run {
        " (dry run: nothing changed)"
    } else {
        ""
    };
    let whose = match (a.session.as_deref(), what) {
        (Some(session), Some(_)) => format!(" (session {})", escape::text(session)),
        (Some(session), None) => format!(" of session {}", escape::text(session)),
        (None, _) => String::new(),
    };
    let head = what.unwrap_or(a.operation.name());
    println!("{head}{whose}: back to {boundary}{mode}");
    if a.actions.is_empty() && a.git.is_empty() {
        println!("  nothing to change");
    }
    let many = a.dry_run && a.actions.len() > GROUP_OVER && a.actions.iter().all(|x| x.diff.is_none());
    if many {
        grouped_actions(&a.actions);
    }
    for action in a.actions.iter().filter(|_| !many) {
        let stats = match (action.lines_added, action.lines_removed) {
            (Some(0), Some(0)) => String::new(),
            (Some(added), Some(removed)) => format!("  +{added} -{removed}"),
            _ => String::new(),
        };
        let status = match action.status {
            ActionStatus::Planned => String::new(),
            other => format!("  [{}]", spelled(&other)),
        };
        println!(
            "  {:<11} {} ({}){stats}{status}",
            spelled(&action.action),
            escape::quoted(&action.path),
            action.kind.name()
        );
        if let Some(diff) = &action.diff {
            if a.dry_run && a.conflicts.iter().any(|c| c.path == action.path) {
                println!("    (a conflict: what --force would write over the file now)");
            }
            print!("{}", diff_lines(diff));
        }
    }
    for line in &a.git {
        let status = match line.status {
            ActionStatus::Planned => String::new(),
            other => format!("  [{}]", spelled(&other)),
        };
        println!("  {:<11} {}{status}", "git", escape::text(&line.change));
    }
    let skipped: Vec<PathLine> = a
        .skipped
        .iter()
        // A conflict that `--skip-conflicts` skipped is said once.
        .filter(|s| {
            !a.conflicts
                .iter()
                .any(|c| (&c.path, c.code, &c.reason) == (&s.path, s.code, &s.reason))
        })
        .cloned()
        .collect();
    let to_a_turn = matches!(target.to, TargetTo::Before | TargetTo::After);
    // Not for a restore or a revert (`what`): those name their own paths.
    if a.dry_run && a.turn_wide && to_a_turn && what.is_none() && !a.actions.is_empty() {
        // An agent that reports no tool calls owns every write made while its turn was open
        // (docs/tracking.md): said where the plan is reviewed.
        println!(
            "note: some of these paths were written while the session's turns were open, and its agent does not report its tool calls, so filewatchd cannot tell its writes from yours made then: check any file you edited during those turns"
        );
    }
    notes("merged", &a.merged);
    notes("conflicts", &a.conflicts);
    notes("skipped", &skipped);
    notes("not restorable", &a.not_restorable);
    notes("kept", &a.kept);
    if let Some(note) = &a.recovery {
        println!("recovery: {}", escape::text(note));
    }
    if let Some(note) = &a.temps_left {
        println!("temp files left: {note}");
    }
    if answer.refused() {
        println!(
            "refused: nothing was changed. Re-run with --skip-conflicts to leave those paths as they are, or --force to roll them back too."
        );
    } else if answer.dry_run_would_be_refused() {
        println!(
            "without --dry-run this would be refused: add --skip-conflicts to leave those paths as they are, or --force to roll them back too."
        );
    }
}

/// Above this many actions, a dry run's plan is grouped by top directory, as `show` groups a
/// turn's paths.
const GROUP_OVER: usize = 20;

/// A plan's actions, one line per top directory holding several (`src/  1,204 paths:
/// 1,200 restore, 4 delete`); a directory with one, and the root's own files, as they are.
fn grouped_actions(actions: &[ActionLine]) {
    let mut groups: std::collections::BTreeMap<&str, Vec<&ActionLine>> = Default::default();
    for action in actions {
        let top = action.path.split_once('/').map_or("", |(top, _)| top);
        let top = if top.is_empty() && action.kind == Kind::Dir {
            action.path.as_str()
        } else {
            top
        };
        groups.entry(top).or_default().push(action);
    }
    for (top, members) in &groups {
        if top.is_empty() || members.len() == 1 {
            for action in members {
                println!(
                    "  {:<11} {} ({})",
                    spelled(&action.action),
                    escape::quoted(&action.path),
                    action.kind.name()
                );
            }
            continue;
        }
        let mut by_action: std::collections::BTreeMap<String, usize> = Default::default();
        for action in members {
            *by_action.entry(spelled(&action.action)).or_default() += 1;
        }
        let what: Vec<String> = by_action.iter().map(|(word, n)| format!("{n} {word}")).collect();
        println!(
            "  {}/  {}: {}",
            escape::quoted(top),
            style::counted(members.len() as u64, "path"),
            what.join(", ")
        );
    }
    println!(
        "  ({} in all: --diff shows each with its diff, --json lists each)",
        style::counted(actions.len() as u64, "path")
    );
}

/// A word of an answer as the wire spells it (`restore`, `done`).
pub(super) fn spelled<T: serde::Serialize>(word: &T) -> String {
    match serde_json::to_value(word) {
        Ok(Value::String(word)) => word,
        _ => "?".into(),
    }
}

fn or_dash(text: Option<&str>) -> std::borrow::Cow<'_, str> {
    text.map_or("-".into(), escape::text)
}

/// The paths of one list of the answer with their reasons; nothing when it is empty.
fn notes(title: &str, items: &[PathLine]) {
    if items.is_empty() {
        return;
    }
    println!("{title}:");
    for item in items {
        println!("  {}: {}", escape::quoted(&item.path), escape::text(&item.reason));
    }
}

pub fn gc(a: &GcReport) {
    let verb = if a.dry_run { "would remove" } else { "removed" };
    let collapsed = match a.cutoff_seq {
        seq if seq > 0 => format!("history before seq {seq} is collapsed"),
        _ => "nothing is older than the retention window".to_string(),
    };
    let expire = style::count(a.turns_expired.max(0) as u64, "turn expires", "turns expire");
    let n = |v: i64| v.max(0) as u64;
    println!(
        "{verb} {} and {} ({}); {expire} ({collapsed})",
        style::counted(n(a.versions_removed), "version"),
        style::counted(n(a.blobs_removed), "blob"),
        style::size(n(a.bytes_freed))
    );
    if a.versions_removed > 0 && a.blobs_removed == 0 {
        // Not a leak: each content is stored once, and a kept version still names it.
        let freed = if a.dry_run { "would be" } else { "was" };
        println!("no space {freed} freed: kept versions have the same content (each content is stored once)");
    }
    println!(
        "store: {} before, {} after",
        style::size(n(a.store_bytes_before)),
        style::size(n(a.store_bytes_after))
    );
}

pub fn verified(a: &Verified) {
    println!(
        "verified {} in {} ms: {} recorded",
        style::counted(a.walked as u64, "path"),
        a.duration_ms,
        style::counted(a.changed as u64, "change")
    );
    for v in &a.versions {
        let by = match (&v.session, v.turn) {
            (Some(session), Some(turn)) => format!("{} turn {turn}", escape::text(session)),
            _ => v.origin.name().to_string(),
        };
        println!("  {}  ({by})", escape::quoted(&v.path));
    }
    if a.truncated {
        println!("  ... and more (see `filewatchd log`)");
    }
}
