//! A session's rollback takes back the session's own writes, not the tree's (docs/rollback.md,
//! "Several agents"). For each path changed since the boundary:
//! - nothing of it is the session's (another session's, the person's, a time rollback's): it is
//!   not touched and is no conflict;
//! - a version that may be the session's (`ambiguous`), or someone else's change between the
//!   session's own writes: a conflict, as any change by others was before;
//! - others changed it before the session first wrote it: it goes back to what they left;
//! - others changed it after the session's last write: their change is kept by a three-way
//!   merge of lines (`merge`) when the two do not touch; else a conflict naming the lines.

use rusqlite::Connection;

use super::foreign::{describe, taken_back};
use super::merge::{self, Merged};
use super::steps::{Note, Step};
use super::{RollbackError, Workspace};
use crate::model::answer::NoteCode;
use crate::model::{Content, Decided, FileState, Hash, Origin, State};
use crate::sessions::Lineage;
use crate::store::journal::{self, LaterVersion};
use crate::store::read_blob;

/// What a session's rollback does to one path.
pub(super) enum Own {
    /// Nobody's but others': left alone.
    NotOurs,
    /// The step, maybe with a new target, and its conflict if any.
    Step(Step, Option<Note>),
    /// The step's target is a merge: its content, and the note that says whose change it kept.
    Merged(Step, Vec<u8>, Note),
}

/// Decides `step` (planned back to the state at `boundary`) for the session `owner`; and
/// whether any of the session's versions of it was the session's only because a turn was
/// open (its agent reports no tool calls, or it was recorded before they were told apart):
/// a person's edit made then went with it.
pub(super) fn decide_path(
    conn: &Connection,
    ws: &Workspace,
    step: Step,
    boundary: i64,
    owner: &Lineage,
) -> Result<(Own, bool), RollbackError> {
    let all = journal::versions_after(conn, step.path_id, boundary)?;
    let turn_wide = all.iter().any(|v| {
        v.origin == Origin::Turn
            && owner.owns(v.session_id, v.seq)
            && !matches!(
                v.decided,
                Some(Decided::ToolCall | Decided::EditTool | Decided::Process)
            )
    });
    Ok((decide(conn, ws, step, &all, owner)?, turn_wide))
}

fn decide(
    conn: &Connection,
    ws: &Workspace,
    mut step: Step,
    all: &[LaterVersion],
    owner: &Lineage,
) -> Result<Own, RollbackError> {
    let undone = taken_back(all);
    let later: Vec<&LaterVersion> = all.iter().filter(|v| !undone.contains(&v.seq)).collect();
    let own = |v: &&LaterVersion| {
        matches!(v.origin, Origin::Turn | Origin::Rollback) && owner.owns(v.session_id, v.seq)
    };
    let ambiguous = later.iter().find(|v| v.origin == Origin::Ambiguous);
    let (Some(first), Some(last)) = (later.iter().position(own), later.iter().rposition(own)) else {
        // Found changed at a start (the daemon was down) may be the session's too.
        let unseen = later.iter().rev().find(|v| v.origin == Origin::Offline);
        return Ok(match ambiguous.or(unseen) {
            Some(v) => conflicted(step, format!("{} (it may be this session's)", describe(v))),
            None => Own::NotOurs,
        });
    };
    if let Some(v) = ambiguous {
        let reason = format!("{} (it may be this session's)", describe(v));
        return Ok(conflicted(step, reason));
    }
    if let Some(v) = later[first..=last].iter().rev().find(|v| !own(v)) {
        let reason = format!("{} (between this session's own writes)", describe(v));
        return Ok(conflicted(step, reason));
    }
    if first > 0 {
        // Others' changes before the session's first write are theirs to keep.
        let kept = later[first - 1].seq;
        step.target = journal::version_state(conn, kept)?;
        step.target_seq = Some(kept);
    }
    match later.get(last + 1..).and_then(<[_]>::last) {
        None if step.current == step.target => Ok(Own::NotOurs),
        None => Ok(Own::Step(step, None)),
        Some(_) => {
            let since = changes_since(&later[last + 1..]);
            take_back(conn, ws, step, later[last].seq, since)
        }
    }
}

/// Others' changes after the session's last write, in words: the latest, and how many more.
fn changes_since(after: &[&LaterVersion]) -> String {
    let Some(latest) = after.last() else {
        return String::new();
    };
    match after.len() - 1 {
        0 => describe(latest),
        1 => format!("{} (and 1 earlier change by others since)", describe(latest)),
        n => format!("{} (and {n} earlier changes by others since)", describe(latest)),
    }
}

fn conflicted(step: Step, reason: String) -> Own {
    let note = Note {
        path: step.path.clone(),
        code: NoteCode::ChangedByOther,
        reason,
    };
    Own::Step(step, Some(note))
}

/// The session's change (`left`, its last version) taken back from the file now, someone's
/// change since (`since`) kept: the content by a merge of lines when both changed it, the
/// permission bits likewise.
fn take_back(
    conn: &Connection,
    ws: &Workspace,
    mut step: Step,
    left: i64,
    since: String,
) -> Result<Own, RollbackError> {
    let left = journal::version_state(conn, left)?;
    let (State::File(mine), State::File(before), State::File(now)) = (&left, &step.target, &step.current)
    else {
        let reason = format!(
            "{since}, after this session's change, and one of the two created, removed or replaced it"
        );
        return Ok(conflicted(step, reason));
    };
    if now == mine {
        // Others' writes since left it as the session did (a rollback and its redo).
        return Ok(Own::Step(step, None));
    }
    let bits = match (now.same_mode(mine), before.same_mode(mine)) {
        (true, _) => before,
        (false, true) => now,
        (false, false) => {
            let reason = format!("{since}, and both changed its permission bits");
            return Ok(conflicted(step, reason));
        }
    };
    let bytes = match kept_content(conn, ws, [mine, before, now], &since) {
        Ok(bytes) => bytes,
        Err(reason) => return Ok(conflicted(step, reason)),
    };
    let target = State::File(FileState {
        content: Content::Stored(Hash::of(&bytes)),
        size: bytes.len() as u64,
        executable: bits.executable,
        mode: bits.mode,
    });
    if target == step.current {
        return Ok(Own::NotOurs);
    }
    step.target = target;
    step.target_seq = None;
    let kept = kept_note(&step, &since);
    Ok(Own::Merged(step, bytes, kept))
}

/// The content the file gets: what it held before the session's change when nobody changed it
/// since, the file now when the session did not change the content (only its bits), else the
/// two changes merged by lines. The reason it cannot be had, as a conflict's.
fn kept_content(
    conn: &Connection,
    ws: &Workspace,
    [mine, before, now]: [&FileState; 3],
    since: &str,
) -> Result<Vec<u8>, String> {
    let read = |f: &FileState| {
        content(conn, ws, &State::File(f.clone()))
            .ok_or_else(|| format!("{since}; its content then was never stored"))
    };
    if now.content == mine.content {
        return read(before);
    }
    if before.content == mine.content {
        return read(now);
    }
    merged(conn, ws, [mine, before, now], since)
}

fn kept_note(step: &Step, since: &str) -> Note {
    Note {
        path: step.path.clone(),
        code: NoteCode::Merged,
        reason: format!("{since}: that change is kept, this session's is taken out (a three-way merge)"),
    }
}

/// The lines of `[mine, before, now]` merged; the reason it cannot be, as a conflict's.
fn merged(conn: &Connection, ws: &Workspace, sides: [&FileState; 3], since: &str) -> Result<Vec<u8>, String> {
    let read = |f: &FileState| content(conn, ws, &State::File(f.clone()));
    let [Some(mine), Some(before), Some(now)] = sides.map(read) else {
        return Err(format!(
            "{since}, after this session's change; its content was not stored to merge"
        ));
    };
    match merge::take_back(&mine, &before, &now) {
        Merged::Clean(bytes) => Ok(bytes),
        Merged::Overlap(lines) => Err(format!(
            "{since}, and that change meets this session's at {}",
            lines_words(&lines)
        )),
        Merged::NotText => Err(format!(
            "{since}, after this session's change; binary content does not merge"
        )),
    }
}

/// A file state's stored content; `None` for anything else (absent, a directory, a symlink,
/// content never stored).
fn content(conn: &Connection, ws: &Workspace, state: &State) -> Option<Vec<u8>> {
    let State::File(file) = state else {
        return None;
    };
    read_blob(conn, &ws.blobs, file.stored()?).ok()
}

/// "line 3", "lines 3-5 and 9".
fn lines_words(lines: &[(usize, usize)]) -> String {
    let one = |&(from, to): &(usize, usize)| {
        if from == to {
            from.to_string()
        } else {
            format!("{from}-{to}")
        }
    };
    let listed: Vec<String> = lines.iter().map(one).collect();
    let word = if lines.len() == 1 && lines[0].0 == lines[0].1 {
        "line"
    } else {
        "lines"
    };
    match listed.as_slice() {
        [] => "the same lines".into(),
        [only] => format!("{word} {only} of the file now"),
        [rest @ .., last] => format!("{word} {} and {last} of the file now", rest.join(", ")),
    }
}

/// A blob that cannot be read or written: a fault of the store, as the index's own.
pub(super) fn store_error(e: std::io::Error) -> RollbackError {
    RollbackError::Store(rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_lines_read_as_words() {
        assert_eq!(lines_words(&[(3, 3)]), "line 3 of the file now");
        assert_eq!(lines_words(&[(3, 5), (9, 9)]), "lines 3-5 and 9 of the file now");
        assert_eq!(
            lines_words(&[(1, 1), (4, 4), (9, 9)]),
            "lines 1, 4 and 9 of the file now"
        );
    }
}
