//! From a request to a target: the boundary's sequence number, and where the session's
//! undo/redo chain stands (PRODUCT.md 2: consecutive undos walk back one turn each, redo
//! returns to the state just before the latest undo or rollback, a new turn ends the chain).

use rusqlite::Connection;
use serde::Serialize;

use super::{Boundary, Operation, Request, RollbackError};
use crate::capture::{TurnError, turns};
use crate::store::journal::{self, RollbackRow};
use crate::store::sql;

/// A request resolved against the history.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub session_id: i64,
    pub kind: &'static str,
    pub target_seq: i64,
    pub target: Target,
    /// How many of the session's turns are in effect after it, and before it.
    pub position: i64,
    pub prev_position: i64,
    pub redo_of: Option<i64>,
}

/// The target as the answer names it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Target {
    /// `before` or `after` a turn, or `redo` (the state before an earlier rollback).
    pub to: String,
    pub turn: Option<i64>,
    pub seq: i64,
}

pub fn resolve(conn: &Connection, request: &Request) -> Result<Resolved, RollbackError> {
    let name = &request.session;
    let session_id =
        sql::session_id(conn, name)?.ok_or_else(|| RollbackError::UnknownSession(name.clone()))?;
    let last = sql::last_turn(conn, session_id)?;
    if let Some(open) = last.as_ref().filter(|t| t.end_seq.is_none()) {
        return Err(RollbackError::TurnOpen {
            session: name.clone(),
            turn: open.number,
        });
    }
    let since = last.as_ref().and_then(|t| t.end_seq).unwrap_or(0);
    let stack = undo_stack(journal::session_chain(conn, session_id, since)?);
    let position = stack
        .last()
        .and_then(|op| op.position)
        .unwrap_or_else(|| last.as_ref().map_or(0, |t| t.number));
    let base = Resolved {
        session_id,
        kind: "rollback",
        target_seq: 0,
        target: Target {
            to: String::new(),
            turn: None,
            seq: 0,
        },
        position: 0,
        prev_position: position,
        redo_of: None,
    };
    match &request.operation {
        Operation::Rollback { to, turn } => {
            let turn = turns::find(conn, name, turn).map_err(turn_error)?;
            let (label, seq, after) = match to {
                Boundary::Before => ("before", turn.start_seq, turn.number - 1),
                Boundary::After => ("after", turn.end_seq.unwrap_or(turn.start_seq), turn.number),
            };
            let target = Target {
                to: label.into(),
                turn: Some(turn.number),
                seq,
            };
            Ok(Resolved {
                target_seq: seq,
                target,
                position: after,
                ..base
            })
        }
        Operation::Undo => {
            if position < 1 {
                return Err(RollbackError::NothingToUndo(name.clone()));
            }
            let turn = sql::turn_by_number(conn, session_id, position)?
                .ok_or_else(|| RollbackError::NothingToUndo(name.clone()))?;
            let target = Target {
                to: "before".into(),
                turn: Some(turn.number),
                seq: turn.start_seq,
            };
            Ok(Resolved {
                kind: "undo",
                target_seq: turn.start_seq,
                target,
                position: position - 1,
                ..base
            })
        }
        Operation::Redo => {
            let top = stack
                .last()
                .ok_or_else(|| RollbackError::NothingToRedo(name.clone()))?;
            let target = Target {
                to: "redo".into(),
                turn: None,
                seq: top.from_seq,
            };
            Ok(Resolved {
                kind: "redo",
                target_seq: top.from_seq,
                target,
                position: top.prev_position.unwrap_or(position),
                redo_of: Some(top.id),
                ..base
            })
        }
    }
}

/// The rollbacks a redo could still return from: each redo cancels the latest one.
fn undo_stack(chain: Vec<RollbackRow>) -> Vec<RollbackRow> {
    let mut stack = Vec::new();
    for op in chain {
        if op.kind == "redo" {
            stack.pop();
        } else {
            stack.push(op);
        }
    }
    stack
}

fn turn_error(err: TurnError) -> RollbackError {
    match err {
        TurnError::UnknownSession(s) => RollbackError::UnknownSession(s),
        TurnError::UnknownTurn { session, turn } => RollbackError::UnknownTurn { session, turn },
        TurnError::NotOpen { session, turn } => RollbackError::TurnOpen { session, turn },
        TurnError::Store(e) => RollbackError::Store(e),
        TurnError::Unavailable => RollbackError::Unavailable,
    }
}
