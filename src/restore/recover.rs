//! Recovery at start-up (G6, CRASH-04): a rollback whose plan is in the journal but which was
//! not committed is finished. Each unfinished step is re-checked: a path already at its target
//! is recorded, one still as expected (or removed, between a removal and an install) is
//! changed, and one holding anything else is left exactly as found and reported. Running it
//! twice gives the same result: it only ever moves paths toward the journaled target.

use std::collections::HashMap;

use rusqlite::Connection;

use super::apply::{self, Check, Finished};
use super::chain::Target;
use super::outcome::Outcome;
use super::plan::Step;
use super::temp_name;
use crate::capture::Context;
use crate::store::journal::{self, RollbackRow};

/// Finishes every interrupted rollback; returns their answers.
pub fn recover(conn: &mut Connection, ctx: &mut Context) -> rusqlite::Result<Vec<Outcome>> {
    let mut finished = Vec::new();
    for row in journal::prepared_rollbacks(conn)? {
        let steps: Vec<(i64, Step)> = journal::steps(conn, row.id)?
            .into_iter()
            .filter(|s| !s.done)
            .map(|s| {
                let step = Step {
                    path: s.path,
                    path_id: s.path_id,
                    current_seq: s.current_seq,
                    current: s.current,
                    target_seq: s.target_seq,
                    target: s.target,
                    checked: None,
                };
                (s.ord, step)
            })
            .collect();
        remove_temps(ctx, row.id, &steps);
        let results = apply::execute(conn, ctx, row.id, &steps, &mut HashMap::new(), Check::Recovery);
        let mut outcome = stored_outcome(&row);
        let left = results.iter().filter(|r| !matches!(r, Finished::Done(_))).count();
        outcome.recovery = Some(format!(
            "interrupted by a crash and finished at start-up: {} paths completed, {left} left as found",
            results.len() - left
        ));
        apply::record(conn, ctx, row.id, &steps, &results, &mut outcome, "recovered")?;
        tracing::warn!(
            rollback = row.id,
            left,
            "finished a rollback interrupted by a crash"
        );
        finished.push(outcome);
    }
    Ok(finished)
}

/// Temp files of the journaled steps: registered names only (CRASH-06).
fn remove_temps(ctx: &Context, rollback_id: i64, steps: &[(i64, Step)]) {
    for (ord, step) in steps {
        if let Ok(parent) = ctx.root.parent_of(&step.path) {
            parent.remove_temp(&temp_name(rollback_id, *ord));
        }
    }
}

fn stored_outcome(row: &RollbackRow) -> Outcome {
    let stored = row
        .outcome
        .as_deref()
        .and_then(|json| serde_json::from_str(json).ok());
    stored.unwrap_or_else(|| Outcome {
        operation: row.kind.clone(),
        session: None,
        rollback_id: Some(row.id),
        target: Target {
            to: "seq".into(),
            turn: None,
            seq: row.target_seq,
            at: None,
        },
        on_conflict: "abort".into(),
        dry_run: false,
        applied: false,
        actions: Vec::new(),
        conflicts: Vec::new(),
        skipped: Vec::new(),
        not_restorable: Vec::new(),
        kept: Vec::new(),
        recovery: None,
    })
}
