//! Reverting one file of a turn, or one hunk of it, as a rollback of the session
//! restricted to that path, so `redo` takes it back exactly.
//!
//! A file: the path back to its state when the turn started, planned as a rollback to the
//! turn's start (the same conflict checks), and a conflict too when anything (the session's
//! own later turns included) changed it since the turn ended; the session's own rollbacks
//! count only when they leave it holding something else than what the turn left (an undo
//! of the turn and its redo give the turn's file back: it reverts). A hunk (its index in the turn's
//! unified diff of the path): the path's current content with that hunk's change taken back.
//! The hunk's lines are found in the current content by a diff from what the turn left; when
//! they no longer match it, the path is a conflict (`changed_by_other`) that no policy can
//! apply (skip and force leave it as it is). The content a hunk revert writes is a new blob,
//! stored before the apply (unless a dry run), so the apply writes it as any version.

use std::collections::HashMap;
use std::ops::Range;

use rusqlite::Connection;
use similar::{Algorithm, DiffOp, DiffTag, DiffableStr, TextDiff};

use super::plan::{self, Note, Plan, Step};
use super::{RollbackError, Workspace, chain::Resolved};
use crate::history::{self, ChangeKind};
use crate::model::answer::NoteCode;
use crate::model::{Content, FileState, Hash, Origin, State};
use crate::paths::RelPath;
use crate::sessions::Lineage;
use crate::sessions::turns::{self, TurnSelector};
use crate::store::sql::{self, TurnRow};
use crate::store::{journal, read_blob};

/// What a revert asks for: one path of one turn, whole or one hunk.
pub struct Revert<'a> {
    pub session: &'a str,
    pub turn: &'a TurnSelector,
    pub path: &'a RelPath,
    pub hunk: Option<usize>,
    pub dry_run: bool,
}

/// Why a revert names nothing it can do: a request the user can fix.
#[derive(Debug, thiserror::Error)]
pub enum RevertError {
    #[error(
        "turn {turn} of session {session:?} did not change {path}: `filewatchd show {turn} --session {session}` lists what it changed"
    )]
    NotInTurn {
        session: String,
        turn: i64,
        path: String,
    },
    #[error(
        "turn {turn} changed {path} in {}; there is no hunk {hunk}: `filewatchd show {turn} --session {session} --diff` shows them in order",
        hunks_numbered(*count)
    )]
    NoSuchHunk {
        session: String,
        turn: i64,
        path: String,
        hunk: usize,
        count: usize,
    },
    #[error("{0}")]
    NotText(String),
}

/// "1 hunk (hunk 0)", "3 hunks (0 to 2)".
fn hunks_numbered(count: usize) -> String {
    match count {
        0 => "no hunks".into(),
        1 => "1 hunk (hunk 0)".into(),
        n => format!("{n} hunks (0 to {})", n - 1),
    }
}

/// The plan of a revert.
pub fn build(
    conn: &Connection,
    ws: &Workspace,
    resolved: &Resolved,
    revert: &Revert<'_>,
) -> Result<Plan, RollbackError> {
    let turn = turns::find(conn, revert.session, revert.turn)?;
    let change = history::turn_changes(conn, &turn)?
        .into_iter()
        .find(|c| &c.path == revert.path)
        .ok_or_else(|| RevertError::NotInTurn {
            session: revert.session.to_string(),
            turn: turn.number,
            path: revert.path.to_text(),
        })?;
    match revert.hunk {
        None => file_plan(conn, ws, resolved, &turn, revert.path),
        Some(hunk) => hunk_plan(conn, ws, &turn, &change, hunk, revert.dry_run),
    }
}

/// The path back to its state at the turn's start; changed since the turn ended is a conflict.
fn file_plan(
    conn: &Connection,
    ws: &Workspace,
    resolved: &Resolved,
    turn: &TurnRow,
    path: &RelPath,
) -> Result<Plan, RollbackError> {
    let mut plan = plan::build(
        conn,
        ws,
        resolved.lineage.as_ref(),
        turn.start_seq,
        std::slice::from_ref(path),
    )?;
    for step in &plan.steps {
        if plan.conflicts.iter().any(|n| n.path == step.path) {
            continue;
        }
        // Others' later changes the plan merged around the turn's are kept: no conflict,
        // unless the session's own later turns wrote it too (their change would go with it).
        let merged = plan.merged.iter().any(|n| n.path == step.path);
        if merged && !own_turn_since(conn, resolved.lineage.as_ref(), turn, step)? {
            continue;
        }
        if let Some(latest) = changed_since_turn(conn, resolved.lineage.as_ref(), turn, step)? {
            let reason = format!(
                "{} (since turn {} ended)",
                super::foreign::describe(&latest),
                turn.number
            );
            plan.conflicts.push(Note {
                path: step.path.clone(),
                code: NoteCode::ChangedByOther,
                reason,
            });
        }
    }
    Ok(plan)
}

/// Whether a later turn of the session wrote the step's path after `turn` ended.
fn own_turn_since(
    conn: &Connection,
    lineage: Option<&Lineage>,
    turn: &TurnRow,
    step: &Step,
) -> Result<bool, RollbackError> {
    let end = turn.end_seq.unwrap_or(turn.start_seq);
    let later = journal::versions_after(conn, step.path_id, end)?;
    Ok(later
        .iter()
        .any(|v| v.origin == Origin::Turn && lineage.is_some_and(|l| l.owns(v.session_id, v.seq))))
}

/// The latest change to the step's path since the turn ended that the revert would take
/// back with the turn's: anything but the session's own rollbacks (its later turns
/// included), or, when only those wrote it, the latest of them unless the path holds again
/// what the turn left (an undo and its redo of the turn: the file is the turn's own).
fn changed_since_turn(
    conn: &Connection,
    lineage: Option<&Lineage>,
    turn: &TurnRow,
    step: &Step,
) -> Result<Option<journal::LaterVersion>, RollbackError> {
    let end = turn.end_seq.unwrap_or(turn.start_seq);
    let mut later = journal::versions_after(conn, step.path_id, end)?;
    let own_rollback = |v: &journal::LaterVersion| {
        v.origin == Origin::Rollback && lineage.is_some_and(|l| l.owns(v.session_id, v.seq))
    };
    if let Some(i) = later.iter().rposition(|v| !own_rollback(v)) {
        return Ok(Some(later.swap_remove(i)));
    }
    let left = journal::version_at(conn, step.path_id, end)?.map(|(_, state)| state);
    if left.as_ref() == Some(&step.current) {
        return Ok(None);
    }
    Ok(later.pop())
}

/// One hunk of a turn's diff of a path: the lines it replaced and the lines it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    old: Range<usize>,
    new: Range<usize>,
}

/// The hunks of the unified diff `?diff=true` gives (3 lines of context), without context.
fn hunks(diff: &TextDiff<'_, '_, str>) -> Vec<Hunk> {
    let mut out = Vec::new();
    for group in diff.grouped_ops(3) {
        let changes: Vec<&DiffOp> = group.iter().filter(|op| op.tag() != DiffTag::Equal).collect();
        if let (Some(first), Some(last)) = (changes.first(), changes.last()) {
            out.push(Hunk {
                old: first.old_range().start..last.old_range().end,
                new: first.new_range().start..last.new_range().end,
            });
        }
    }
    out
}

fn hunk_plan(
    conn: &Connection,
    ws: &Workspace,
    turn: &TurnRow,
    change: &history::Change,
    index: usize,
    dry_run: bool,
) -> Result<Plan, RollbackError> {
    let path = change.path.to_text();
    let (before, after, hunk) = turn_hunk(conn, ws, turn, change, index)?;
    let path_id =
        sql::path_id(conn, &change.path)?.ok_or_else(|| RollbackError::NeverRecorded(path.clone()))?;
    let Some((current_seq, current)) = journal::version_at(conn, path_id, i64::MAX)? else {
        return Err(RollbackError::NeverRecorded(path));
    };
    let here = (path_id, current_seq);
    if let Some(reason) = written_by_others_during(conn, turn, change, path_id)? {
        return Ok(refused(conn, ws, here, current, change, &reason));
    }
    let (file, now) = match &current {
        State::File(f) if f.stored().is_some() => (f.clone(), text(conn, ws, &current, &path)?),
        _ => {
            return Ok(refused(
                conn,
                ws,
                here,
                current,
                change,
                "it is no longer a text file",
            ));
        }
    };
    let bytes = match reverted(&before, &after, &now, &hunk) {
        Ok(text) => text.into_bytes(),
        Err(lines) => {
            let reason = format!("{lines} as turn {} left them changed since", turn.number);
            return Ok(refused(conn, ws, here, current, change, &reason));
        }
    };
    let target = State::File(FileState {
        content: Content::Stored(Hash::of(&bytes)),
        size: bytes.len() as u64,
        ..file
    });
    if target == current {
        return Ok(Plan::default());
    }
    if !dry_run {
        crate::store::write_blob(conn, &ws.blobs, &bytes)?;
    }
    let step = Step {
        path: change.path.clone(),
        path_id,
        current_seq,
        current,
        target_seq: None,
        target,
        checked: None,
    };
    let contents = HashMap::from([(Hash::of(&bytes), bytes)]);
    Ok(plan::check_with(conn, ws, vec![(step, None)], contents))
}

/// Why the turn's diff of the path may hold someone else's lines: a version of it written
/// during the turn by anything but this turn (another session's turn while both were open,
/// a rollback, an editor). Its hunks are then not the turn's alone to take back.
fn written_by_others_during(
    conn: &Connection,
    turn: &TurnRow,
    change: &history::Change,
    path_id: i64,
) -> Result<Option<String>, RollbackError> {
    if change.ambiguous {
        return Ok(Some(
            "it was written while turns of several sessions were open: its hunks may be another session's"
                .into(),
        ));
    }
    let end = turn.end_seq.unwrap_or(i64::MAX);
    let later = journal::versions_after(conn, path_id, turn.start_seq)?;
    let own = |v: &journal::LaterVersion| {
        v.origin == Origin::Turn && v.session_id == Some(turn.session_id) && v.turn == Some(turn.number)
    };
    Ok(later.iter().find(|v| v.seq <= end && !own(v)).map(|v| {
        format!(
            "{} during turn {}: its hunks may not be the turn's own",
            super::foreign::describe(v),
            turn.number
        )
    }))
}

/// The two sides of a turn's change of a text file, and its hunk `index`.
fn turn_hunk(
    conn: &Connection,
    ws: &Workspace,
    turn: &TurnRow,
    change: &history::Change,
    index: usize,
) -> Result<(String, String, Hunk), RollbackError> {
    let path = change.path.to_text();
    if change.kind != ChangeKind::Modified && change.kind != ChangeKind::Added {
        return Err(RevertError::NotText(format!(
            "turn {} {} {path}: a hunk is part of a file's diff; revert the whole file instead",
            turn.number,
            change.kind.name()
        ))
        .into());
    }
    let before = text(conn, ws, &change.before, &path)?;
    let after = text(conn, ws, &change.after, &path)?;
    let all = hunks(&TextDiff::from_lines(before.as_str(), after.as_str()));
    let hunk = all.get(index).cloned().ok_or_else(|| RevertError::NoSuchHunk {
        session: turn.session.clone(),
        turn: turn.number,
        path,
        hunk: index,
        count: all.len(),
    })?;
    Ok((before, after, hunk))
}

/// `now` with `hunk` (of the diff from `before` to `after`) taken back; or, when the lines the
/// hunk wrote are no longer in `now` unchanged and together, those lines in words.
fn reverted(before: &str, after: &str, now: &str, hunk: &Hunk) -> Result<String, String> {
    let (old_lines, new_lines, now_lines) = (
        before.tokenize_lines(),
        after.tokenize_lines(),
        now.tokenize_lines(),
    );
    let at = locate(&new_lines, &now_lines, &hunk.new).ok_or_else(|| describe_lines(&hunk.new))?;
    let mut out = now_lines[..at.start].concat();
    out.push_str(&old_lines[hunk.old.clone()].concat());
    out.push_str(&now_lines[at.end..].concat());
    Ok(out)
}

/// A hunk whose lines changed since: a conflict no policy applies (the step is planned back to
/// the turn's start only to be named; it is never written).
fn refused(
    conn: &Connection,
    ws: &Workspace,
    (path_id, current_seq): (i64, i64),
    current: State,
    change: &history::Change,
    reason: &str,
) -> Plan {
    let step = Step {
        path: change.path.clone(),
        path_id,
        current_seq,
        current,
        target_seq: None,
        target: change.before.clone(),
        checked: None,
    };
    let note = Note {
        path: change.path.clone(),
        code: NoteCode::ChangedByOther,
        reason: format!("the hunk cannot be taken back: {reason}"),
    };
    let mut plan = plan::check_with(conn, ws, vec![(step, Some(note.clone()))], HashMap::new());
    plan.not_restorable.retain(|n| n.path != note.path);
    plan.not_restorable.push(note);
    plan
}

fn describe_lines(range: &Range<usize>) -> String {
    match range.len() {
        0 => format!("the lines around line {}", range.start.max(1)),
        1 => format!("line {}", range.start + 1),
        _ => format!("lines {}-{}", range.start + 1, range.end),
    }
}

/// Where the lines `range` of `from` are in `to`: found unchanged and together by a diff from
/// `from` to `to`. For an empty range, the place between the lines around it.
fn locate(from: &[&str], to: &[&str], range: &Range<usize>) -> Option<Range<usize>> {
    let mut map: Vec<Option<usize>> = vec![None; from.len()];
    for op in similar::capture_diff_slices(Algorithm::Myers, from, to) {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for i in 0..len {
                map[old_index + i] = Some(new_index + i);
            }
        }
    }
    if range.is_empty() {
        let after_prev = range.start.checked_sub(1).map(|i| map[i].map(|c| c + 1));
        let at_next = (range.start < from.len()).then(|| map[range.start]);
        return match (after_prev, at_next) {
            (Some(Some(a)), Some(Some(b))) if a == b => Some(a..a),
            (Some(Some(a)), None) | (None, Some(Some(a))) => Some(a..a),
            (None, None) => Some(0..0),
            _ => None,
        };
    }
    let start = map[range.start]?;
    let together = range.clone().enumerate().all(|(k, i)| map[i] == Some(start + k));
    // Its neighbours too, one line each side: a short or repeated line (`}`, a blank line)
    // matched somewhere else is not the hunk's (a conflict rather than someone else's line).
    let before = range
        .start
        .checked_sub(1)
        .is_none_or(|i| map[i] == start.checked_sub(1));
    let after = range.end >= from.len() || map[range.end] == Some(start + range.len());
    (together && before && after).then_some(start..start + range.len())
}

fn text(conn: &Connection, ws: &Workspace, state: &State, path: &str) -> Result<String, RollbackError> {
    let not_text = || RevertError::NotText(format!("{path} is not text: revert the whole file instead"));
    match state {
        State::Absent => Ok(String::new()),
        State::File(FileState {
            content: Content::Stored(hash),
            ..
        }) => {
            let bytes =
                read_blob(conn, &ws.blobs, *hash).map_err(|e| super::own::store_error(e.into_io()))?;
            String::from_utf8(bytes)
                .ok()
                .filter(|t| !t.contains('\0'))
                .ok_or_else(|| not_text().into())
        }
        _ => Err(not_text().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hunks_are_those_of_the_unified_diff() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let after = "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\nk\nl\n";
        let diff = TextDiff::from_lines(before, after);
        let got = hunks(&diff);
        let unified = diff.unified_diff().context_radius(3).to_string();
        assert_eq!(
            unified.matches("\n@@").count() + usize::from(unified.starts_with("@@")),
            got.len()
        );
        assert_eq!(
            got,
            vec![
                Hunk { old: 1..2, new: 1..2 },
                Hunk {
                    old: 9..11,
                    new: 9..12
                }
            ]
        );
    }

    #[test]
    fn a_hunk_taken_back_keeps_later_edits_elsewhere() {
        let (before, after) = ("a\nb\nc\n", "a\nB\nc\n");
        let hunk = Hunk { old: 1..2, new: 1..2 };
        assert_eq!(
            reverted(before, after, "x\na\nB\nc\ny\n", &hunk).as_deref(),
            Ok("x\na\nb\nc\ny\n")
        );
        assert_eq!(
            reverted(before, after, "a\nBee\nc\n", &hunk),
            Err("line 2".to_string())
        );
    }

    #[test]
    fn a_hunk_is_located_when_its_lines_are_unchanged_and_together() {
        let from = ["a\n", "b\n", "c\n", "d\n"];
        assert_eq!(
            locate(&from, &["x\n", "a\n", "b\n", "c\n", "d\n"], &(1..3)),
            Some(2..4)
        );
        assert_eq!(locate(&from, &["a\n", "B\n", "c\n", "d\n"], &(1..3)), None);
        assert_eq!(locate(&from, &["a\n", "b\n", "y\n", "c\n", "d\n"], &(1..3)), None);
        assert_eq!(locate(&from, &["a\n", "b\n", "c\n", "d\n"], &(2..2)), Some(2..2));
        assert_eq!(locate(&from, &["a\n", "b\n", "z\n", "c\n", "d\n"], &(2..2)), None);
    }

    /// A turn added a blank line between `a` and `b`; someone removed it and added a blank
    /// line of their own below `b`. Their line is not the turn's: a conflict, not a deletion.
    #[test]
    fn a_repeated_line_matched_away_from_its_neighbours_is_not_the_hunk() {
        let after = ["a\n", "\n", "b\n"];
        let now = ["a\n", "b\n", "\n", "c\n"];
        assert_eq!(locate(&after, &now, &(1..2)), None);
        assert_eq!(
            reverted(
                "a\nb\n",
                "a\n\nb\n",
                "a\nb\n\nc\n",
                &Hunk { old: 1..1, new: 1..2 }
            ),
            Err("line 2".to_string())
        );
    }
}
