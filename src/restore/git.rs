//! A rollback's moves in git (docs/rollback.md, "Git"): HEAD, the branches and tags, the stash
//! and the index go back to their recorded state at the boundary with the files, checked as
//! files are. A component someone else moved since, after the session did, is a conflict; one
//! only others moved is not the session's to take back. A redo moves back what its undo moved,
//! each component only from where the undo left it. Applied before the files (`apply`), put
//! back if they fail, and finished by recovery after a crash, from the journaled moves.

use rusqlite::Connection;

use super::plan::{Decision, Note};
use super::{Workspace, chain::Resolved};
use crate::git::Repo;
use crate::git::change::{self, Move, Recorded};
use crate::git::write::{Moves, WriteError};
use crate::model::Origin;
use crate::model::answer::{ActionStatus, GitLine, NoteCode, OnConflict};
use crate::paths::RelPath;
use crate::sessions::Lineage;
use crate::store::git::{self as rows, GitRow};

/// What a rollback would move in git, and the components it may not.
#[derive(Default)]
pub(super) struct GitPlan {
    pub moves: Vec<Move>,
    pub conflicts: Vec<Note>,
}

/// The path git keeps a component at, as conflicts and the answer name it.
fn path_of(change: &Move) -> String {
    match change {
        Move::Ref { name, .. } => format!(".git/{name}"),
        Move::Stash { .. } => ".git/refs/stash".to_string(),
        other => format!(".git/{}", other.key()),
    }
}

fn note(change: &Move, reason: String) -> Note {
    Note {
        path: RelPath::from_fs_bytes(path_of(change).into_bytes()),
        code: NoteCode::ChangedByOther,
        reason,
    }
}

/// Plans the git moves of a rollback to `resolved`'s target; none for a rollback of some paths.
pub(super) fn plan(
    conn: &Connection,
    ws: &Workspace,
    resolved: &Resolved,
    only: &[RelPath],
) -> rusqlite::Result<GitPlan> {
    let Some(repo) = Repo::at(&ws.root.path).filter(|_| only.is_empty()) else {
        return Ok(GitPlan::default());
    };
    let Some(now) = rows::at(conn, i64::MAX)? else {
        return Ok(GitPlan::default());
    };
    let mut plan = match resolved.redo_of {
        Some(undone) => redo(conn, undone, &now.state)?,
        None => back(conn, resolved, &now)?,
    };
    if let Some(what) = repo.in_progress().filter(|_| !plan.moves.is_empty()) {
        let reason = format!("{what} is in progress in the repository: finish or abort it first");
        let stopped = plan.moves.iter().map(|m| note(m, reason.clone())).collect();
        plan.conflicts = stopped;
    }
    Ok(plan)
}

/// The moves of a redo: what the undo moved, back, each from where the undo left it.
fn redo(conn: &Connection, undone: i64, now: &Recorded) -> rusqlite::Result<GitPlan> {
    let mut plan = GitPlan::default();
    for undo in rows::moves_of(conn, undone)? {
        let back = undo.reversed();
        if let Some(moved) = back.since(now) {
            let reason = format!("{} since the undo", change::words(&moved));
            plan.conflicts.push(note(&back, reason));
        }
        plan.moves.push(back);
    }
    Ok(plan)
}

/// The moves back to the target's state: every component for a rollback to a time, the
/// session's own for a session's (`owned`).
fn back(conn: &Connection, resolved: &Resolved, now: &GitRow) -> rusqlite::Result<GitPlan> {
    let Some(target) = rows::at(conn, resolved.target_seq)? else {
        return Ok(GitPlan::default());
    };
    let mut plan = GitPlan::default();
    let later = rows::after(conn, resolved.target_seq)?;
    for change in change::between(&target.state, &now.state) {
        let Some(owner) = &resolved.lineage else {
            plan.moves.push(change.reversed());
            continue;
        };
        match owned(&change, &target, &later, owner) {
            Owned::NotOurs => {}
            Owned::Back(change) => plan.moves.push(change),
            Owned::Conflict(change, reason) => {
                plan.conflicts.push(note(&change, reason));
                plan.moves.push(change.reversed());
            }
        }
    }
    Ok(plan)
}

enum Owned {
    NotOurs,
    Back(Move),
    Conflict(Move, String),
}

/// Whose the moves of `change`'s component after the target were: as `own` decides a path.
fn owned(change: &Move, target: &GitRow, later: &[GitRow], owner: &Lineage) -> Owned {
    let mut previous = &target.state;
    let mut movers: Vec<(&GitRow, &Recorded)> = Vec::new();
    for row in later {
        if change.between_states(previous, &row.state).is_some() {
            movers.push((row, previous));
        }
        previous = &row.state;
    }
    let own = |row: &GitRow| {
        matches!(row.origin, Origin::Turn | Origin::Rollback) && owner.owns(row.session_id, row.seq)
    };
    let Some(first) = movers.iter().position(|(row, _)| own(row)) else {
        return Owned::NotOurs;
    };
    if let Some((row, _)) = movers[first..].iter().find(|(row, _)| !own(row)) {
        let who = match row.origin {
            Origin::Ambiguous => "by a write that may be this session's or another's",
            Origin::Turn => "by another session",
            _ => "by someone else (no turn of this session)",
        };
        return Owned::Conflict(change.clone(), format!("moved {who} since this session moved it"));
    }
    // Others moved it before the session first did: it goes back to what they left.
    let (_, before_own) = movers[first];
    match change.between_states(previous, before_own) {
        Some(back) => Owned::Back(back),
        None => Owned::NotOurs,
    }
}

/// The moves a decision applies: none when refused, all but the skipped under skip.
pub(super) fn decided(plan: GitPlan, decision: &Decision, on_conflict: OnConflict) -> Vec<Move> {
    if decision.refused {
        return Vec::new();
    }
    let skipped = |m: &Move| {
        on_conflict != OnConflict::Force && decision.skipped.iter().any(|n| n.path.to_text() == path_of(m))
    };
    plan.moves.into_iter().filter(|m| !skipped(m)).collect()
}

/// The answer's lines for `planned`: `Planned` before anything moved; once git has moved,
/// `Done` for the moves in `applied`, `Skipped` for the others.
pub(super) fn lines(
    conn: &Connection,
    ws: &Workspace,
    planned: &[Move],
    applied: Option<&[Move]>,
) -> Vec<GitLine> {
    let status = |m: &Move| match applied {
        None => ActionStatus::Planned,
        Some(applied) if applied.contains(m) => ActionStatus::Done,
        Some(_) => ActionStatus::Skipped,
    };
    planned
        .iter()
        .map(|m| GitLine {
            path: path_of(m),
            change: rows::words(conn, &ws.blobs, m),
            status: status(m),
        })
        .collect()
}

/// Applies `moves` for rollback `id`; on failure puts back what moved, and says why.
pub(super) fn apply(
    conn: &Connection,
    ws: &Workspace,
    id: i64,
    moves: &[Move],
    message: &str,
) -> Result<(), WriteError> {
    let Err(err) = write(conn, ws, id, moves, format!("filewatchd: {message}")) else {
        return Ok(());
    };
    put_back(conn, ws, id, moves);
    Err(err)
}

/// Moves every component of `moves` that reached its goal back to where it started.
pub(super) fn put_back(conn: &Connection, ws: &Workspace, id: i64, moves: &[Move]) {
    let reversed: Vec<Move> = moves.iter().rev().map(Move::reversed).collect();
    let message = "filewatchd: putting back a failed rollback".to_string();
    if let Err(err) = write(conn, ws, id, &reversed, message) {
        tracing::warn!(rollback = id, error = %err, "cannot put git back as it was");
    }
}

fn write(
    conn: &Connection,
    ws: &Workspace,
    id: i64,
    moves: &[Move],
    message: String,
) -> Result<(), WriteError> {
    let Some(repo) = Repo::at(&ws.root.path).filter(|_| !moves.is_empty()) else {
        return Ok(());
    };
    let moves = Moves {
        repo: &repo,
        moves,
        rollback_id: id,
        message,
    };
    moves.apply(&|hash| crate::store::read_blob(conn, &ws.blobs, hash).map_err(|e| e.into_io()))?;
    Ok(())
}

/// Records the repository's state after rollback `id` moved it.
pub(super) fn record_after(conn: &Connection, ws: &Workspace, id: i64) -> rusqlite::Result<()> {
    let Some(repo) = Repo::at(&ws.root.path) else {
        return Ok(());
    };
    let Ok(Some(state)) = repo.read() else {
        return Ok(());
    };
    let by = rows::MovedBy {
        origin: Origin::Rollback,
        turn_id: None,
        rollback_id: Some(id),
        decided: None,
    };
    rows::record(conn, &ws.blobs, &state, &by, None)?;
    Ok(())
}
