//! The plan written durably before the first file is touched: the rollback's
//! row, its steps, its temp-file tag and its planned answer, in one transaction.

use rusqlite::{Connection, TransactionBehavior};

use super::Request;
use super::chain::Resolved;
use super::plan::Step;
use crate::fs::temp::TempNames;
use crate::model::answer::Outcome;
use crate::model::{State, now_ms};
use crate::store::{journal, sql, timeline};

/// Writes the plan and its planned answer durably, with the paths the request was restricted
/// to (the timeline tells a restore from a rollback by them); returns the rollback's id.
pub fn journal(
    conn: &mut Connection,
    resolved: &Resolved,
    temps: &TempNames,
    request: &Request,
    steps: &[Step],
    planned: &Outcome,
) -> rusqlite::Result<i64> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let new = journal::NewRollback {
        session_id: resolved.session_id,
        op_id: request.op_id.as_deref(),
        kind: resolved.kind,
        target_seq: resolved.target_seq,
        from_seq: sql::latest_seq(&tx)?,
        position: resolved.position,
        prev_position: resolved.prev_position,
        redo_of: resolved.redo_of,
    };
    let id = journal::insert_rollback(&tx, &new, now_ms())?;
    journal::set_temp_tag(&tx, id, &temps.tag)?;
    if !request.paths.is_empty() {
        let paths: Vec<String> = request.paths.iter().map(|p| p.to_text()).collect();
        let paths = serde_json::to_string(&paths).unwrap_or_else(|_| "[]".to_string());
        timeline::set_rollback_paths(&tx, id, &paths)?;
    }
    for (ord, step) in steps.iter().enumerate() {
        let unstored = match &step.target {
            State::File(file) => Some(file),
            _ => None,
        };
        let new = journal::NewStep {
            path_id: step.path_id,
            current_seq: step.current_seq,
            target_seq: step.target_seq,
            unstored,
        };
        journal::insert_step(&tx, id, ord as i64, &new)?;
    }
    let mut planned = planned.clone();
    planned.rollback_id = Some(id);
    tx.execute(
        "UPDATE rollbacks SET outcome = ?2 WHERE id = ?1",
        rusqlite::params![id, to_json(&planned)],
    )?;
    tx.commit()?;
    Ok(id)
}

pub fn to_json(outcome: &Outcome) -> String {
    serde_json::to_string(outcome).unwrap_or_else(|_| "{}".to_string())
}
