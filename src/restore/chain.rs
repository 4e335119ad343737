//! From a request to a target: the boundary's sequence number, and where the undo/redo chain
//! stands (docs/guarantees.md, "Words": consecutive undos walk back one turn each, redo returns to the state
//! just before the latest undo or rollback, a new turn ends the chain). Time rollbacks have
//! no session; they form their own chain, which `redo` without a session walks. A rollback to
//! a pin is one of them: the workspace at the pin's sequence number.

use rusqlite::Connection;

use super::{Boundary, Operation, Request, RollbackError};
use crate::model::answer::{Target, TargetTo};
use crate::model::{RollbackKind, format_time};
use crate::sessions::Lineage;
use crate::sessions::turns::{self, LookupError};
use crate::store::journal::{self, RollbackRow};
use crate::store::pins;
use crate::store::sql::{self, TurnRow};
use crate::{history, retention};

/// A request resolved against the history.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub session_id: Option<i64>,
    /// The session with its ancestors: whose changes are its own work. `None` for a time
    /// rollback, where only the disk check (G4 b) applies.
    pub lineage: Option<Lineage>,
    pub kind: RollbackKind,
    pub target_seq: i64,
    pub target: Target,
    /// How many of the session's turns are in effect after it, and before it.
    pub position: Option<i64>,
    pub prev_position: Option<i64>,
    pub redo_of: Option<i64>,
}

impl Target {
    fn new(to: TargetTo, turn: Option<i64>, seq: i64) -> Self {
        Self {
            to,
            turn,
            seq,
            at: None,
            pin: None,
        }
    }
}

pub fn resolve(conn: &Connection, request: &Request) -> Result<Resolved, RollbackError> {
    let resolved = match (&request.session, &request.operation) {
        // A restore by number belongs to no session, as a time rollback (`POST /v1/rollback`).
        (_, Operation::Seq { seq }) => seq_target(conn, *seq, &request.paths, request.dry_run)?,
        (Some(name), operation) => resolve_in_session(conn, name, operation, !request.paths.is_empty())?,
        (None, operation) => resolve_in_time(conn, operation)?,
    };
    if let Some(expired) = retention::expired(conn, resolved.target_seq)? {
        return Err(RollbackError::Expired {
            seq: expired.seq,
            horizon: expired.horizon,
        });
    }
    Ok(resolved)
}

/// `partial`: the request names paths (a restore): the session's place in its chain, the
/// turns in effect, stays where it is, as for a revert; the next undo takes back the latest
/// turn not yet undone.
fn resolve_in_session(
    conn: &Connection,
    name: &str,
    operation: &Operation,
    partial: bool,
) -> Result<Resolved, RollbackError> {
    let unknown = || LookupError::UnknownSession(name.to_string());
    let session_id = sql::session_id(conn, name)?.ok_or_else(unknown)?;
    let lineage = Lineage::of(conn, session_id)?;
    let last = lineage.last_turn(conn)?;
    if let Some(open) = last.as_ref().filter(|t| t.end_seq.is_none()) {
        return Err(RollbackError::TurnOpen {
            session: name.to_string(),
            turn: open.number,
        });
    }
    let since = last.as_ref().and_then(|t| t.end_seq).unwrap_or(0);
    let stack = undo_stack(journal::session_chain(conn, Some(session_id), since)?);
    let position = stack
        .last()
        .and_then(|op| op.position)
        .unwrap_or_else(|| last.as_ref().map_or(0, |t| t.number));
    let resolved = |kind, target: Target, after: i64, redo_of| Resolved {
        session_id: Some(session_id),
        lineage: Some(lineage.clone()),
        kind,
        target_seq: target.seq,
        target,
        position: Some(after),
        prev_position: Some(position),
        redo_of,
    };
    match operation {
        Operation::Rollback { to, turn } => {
            let turn = turns::find(conn, name, turn)?;
            let target = match to {
                Boundary::Before => Target::new(TargetTo::Before, Some(turn.number), turn.start_seq),
                Boundary::After => {
                    let seq = turn.end_seq.unwrap_or(turn.start_seq);
                    Target::new(TargetTo::After, Some(turn.number), seq)
                }
            };
            let after = match to {
                _ if partial => position,
                Boundary::Before => turn.number - 1,
                Boundary::After => turn.number,
            };
            Ok(resolved(RollbackKind::Rollback, target, after, None))
        }
        Operation::Revert { turn, .. } => {
            // One path: the session's place in its chain stays where it is.
            let turn = turns::find(conn, name, turn)?;
            let target = Target::new(TargetTo::Before, Some(turn.number), turn.start_seq);
            Ok(resolved(RollbackKind::Rollback, target, position, None))
        }
        Operation::Undo => {
            let nothing = || RollbackError::NothingToUndo(name.to_string());
            let turn = lineage
                .turn(conn, position)?
                .filter(|_| position >= 1)
                .ok_or_else(nothing)?;
            let target = Target::new(TargetTo::Before, Some(turn.number), turn.start_seq);
            let base = base_position(conn, &lineage, &turn)?;
            Ok(resolved(RollbackKind::Undo, target, base, None))
        }
        Operation::Redo => {
            let top = stack
                .last()
                .ok_or_else(|| RollbackError::NothingToRedo(name.to_string()))?;
            let target = Target::new(TargetTo::Redo, None, top.from_seq);
            Ok(resolved(
                RollbackKind::Redo,
                target,
                top.prev_position.unwrap_or(position),
                Some(top.id),
            ))
        }
        Operation::Time { at_ms } => Ok(Resolved {
            session_id: Some(session_id),
            ..time_target(conn, *at_ms)?
        }),
        Operation::Pin { name } => Ok(Resolved {
            session_id: Some(session_id),
            ..pin_target(conn, name)?
        }),
        Operation::Seq { .. } => unreachable!("resolve handles a rollback to a sequence number"),
    }
}

fn resolve_in_time(conn: &Connection, operation: &Operation) -> Result<Resolved, RollbackError> {
    match operation {
        Operation::Time { at_ms } => time_target(conn, *at_ms),
        Operation::Pin { name } => pin_target(conn, name),
        Operation::Redo => {
            let stack = undo_stack(journal::session_chain(conn, None, 0)?);
            let top = stack.last().ok_or(RollbackError::NothingToRedoInTime)?;
            Ok(Resolved {
                kind: RollbackKind::Redo,
                target_seq: top.from_seq,
                target: Target::new(TargetTo::Redo, None, top.from_seq),
                redo_of: Some(top.id),
                ..at_seq(0)
            })
        }
        Operation::Rollback { .. } | Operation::Undo | Operation::Revert { .. } => {
            Err(RollbackError::NeedsSession)
        }
        Operation::Seq { .. } => unreachable!("resolve handles a rollback to a sequence number"),
    }
}

/// Paths as recorded at `seq` (`restore --seq`). Before the first index finished a path's
/// state there is known only when it is itself a file or symlink recorded by then: anything
/// else (a directory whose entries were not all indexed yet) is refused, as a time is. A dry
/// run may name no paths: the plan is then what differs between `seq` and now, everywhere
/// (`filewatchd mcp`'s `diff_since`).
fn seq_target(
    conn: &Connection,
    seq: i64,
    paths: &[crate::paths::RelPath],
    dry_run: bool,
) -> Result<Resolved, RollbackError> {
    if paths.is_empty() && !dry_run {
        return Err(RollbackError::BadSeq(
            "a rollback to a sequence number restores paths: give \"paths\" (or use \"at\" for the whole workspace)".into(),
        ));
    }
    let latest = sql::latest_seq(conn)?;
    // Seq 0 is the workspace before its first version: empty, for a history that began so
    // (the start of a new project's first turn); for any other the check below refuses it.
    if !(0..=latest).contains(&seq) {
        return Err(RollbackError::BadSeq(format!(
            "seq {seq} names no recorded state: versions are numbered 1 to {latest} (`filewatchd history PATH` lists a path's)"
        )));
    }
    if let Some(begins) = journal::history_begins(conn)?
        && seq < journal::seq_at_time(conn, begins)?
        && (paths.is_empty() || !all_single_at(conn, paths, seq)?)
    {
        return Err(RollbackError::BeforeHistory(history::BeforeHistory {
            at: format!("seq {seq}"),
            begins: format_time(begins),
        }));
    }
    let mut resolved = at_seq(seq);
    resolved.target.to = TargetTo::Seq;
    Ok(resolved)
}

/// Every one of `paths` is a file or a symlink as recorded at `seq`.
fn all_single_at(conn: &Connection, paths: &[crate::paths::RelPath], seq: i64) -> rusqlite::Result<bool> {
    for path in paths {
        let Some(path_id) = sql::path_id(conn, path)? else {
            return Ok(false);
        };
        if !matches!(
            sql::state_at(conn, path_id, seq)?,
            crate::model::State::File(_) | crate::model::State::Symlink { .. }
        ) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The workspace as recorded at a time: every path's latest version recorded by then. A time
/// before the first index finished is refused: its state is unknown, not empty.
fn time_target(conn: &Connection, at_ms: i64) -> Result<Resolved, RollbackError> {
    // A second of slack for clocks read a moment apart (`--ago 0s`).
    if at_ms > crate::model::now_ms() + 1000 {
        return Err(RollbackError::FutureTime(format_time(at_ms)));
    }
    let mut resolved = at_seq(history::seq_at_time(conn, at_ms)??);
    resolved.target.at = Some(format_time(at_ms));
    Ok(resolved)
}

/// The workspace at the point a pin names: a time rollback to its sequence number.
fn pin_target(conn: &Connection, name: &str) -> Result<Resolved, RollbackError> {
    let pin = pins::find(conn, name)?.ok_or_else(|| RollbackError::UnknownPin(name.to_string()))?;
    let mut resolved = at_seq(pin.seq);
    resolved.target.to = TargetTo::Pin;
    resolved.target.pin = Some(pin.name);
    Ok(resolved)
}

/// The whole workspace as of `seq`, for no session.
fn at_seq(seq: i64) -> Resolved {
    Resolved {
        session_id: None,
        lineage: None,
        kind: RollbackKind::Rollback,
        target_seq: seq,
        target: Target::new(TargetTo::Time, None, seq),
        position: None,
        prev_position: None,
        redo_of: None,
    }
}

/// How many turns were in effect when `turn` started: the turn before it, unless undos made
/// between the two had walked further back. Undoing `turn` returns there, so a turn undone
/// before a later turn is never undone twice.
fn base_position(conn: &Connection, lineage: &Lineage, turn: &TurnRow) -> Result<i64, RollbackError> {
    let previous = lineage.turn(conn, turn.number - 1)?;
    let since = previous.as_ref().and_then(|t| t.end_seq).unwrap_or(0);
    let between = journal::session_chain_between(conn, Some(turn.session_id), since, turn.start_seq)?;
    let stack = undo_stack(between);
    Ok(stack.last().and_then(|op| op.position).unwrap_or(turn.number - 1))
}

/// The rollbacks a redo could still return from: each redo cancels the latest one.
pub(super) fn undo_stack(chain: Vec<RollbackRow>) -> Vec<RollbackRow> {
    let mut stack = Vec::new();
    for op in chain {
        if op.kind == RollbackKind::Redo {
            stack.pop();
        } else {
            stack.push(op);
        }
    }
    stack
}
