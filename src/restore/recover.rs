//! Recovery at start-up (G6): a rollback whose plan is in the journal but which was
//! not committed is finished. Each unfinished step is re-checked: a path already at its target
//! is recorded, one still as expected (or removed, between a removal and an install) is
//! changed, and one holding anything else is left exactly as found and reported. Running it
//! twice gives the same result: it only ever moves paths toward the journaled target.

use std::collections::HashMap;

use rusqlite::Connection;

use super::apply::{self, Check, Finished};
use super::plan::{Ordered, Step};
use super::{Effects, RollbackError, Workspace, finish, outside};
use crate::fs::temp::TempNames;
use crate::model::State;
use crate::model::answer::{OnConflict, Outcome, Target, TargetTo};
use crate::store::journal::{self, RollbackRow, Status};

/// Finishes every interrupted rollback, then every revert a failure left unfinished, then
/// removes the temp files a read-only file system kept; returns the answers, and what the
/// watcher is to do about the directories they changed.
pub fn recover(conn: &mut Connection, ws: &Workspace) -> rusqlite::Result<(Vec<Outcome>, Effects)> {
    let mut finished = Vec::new();
    let mut effects = Effects::default();
    for row in journal::prepared_rollbacks(conn)? {
        let steps = unfinished_steps(conn, &row)?;
        let temps = TempNames::of_rollback(row.id, row.temp_tag.clone());
        remove_temps(conn, ws, &temps, &steps)?;
        finish_git(conn, ws, row.id)?;
        let applied = apply::execute(conn, ws, &temps, &steps, &mut HashMap::new(), Check::Recovery);
        let mut outcome = stored_outcome(&row);
        let left = applied
            .results
            .iter()
            .filter(|r| !matches!(r, Finished::Done(_)))
            .count();
        outcome.recovery = Some(format!(
            "interrupted by a crash and finished at start-up: {} paths completed, {left} left as found",
            applied.results.len() - left
        ));
        // Recovery goes forward whatever the conflicts: skip is what it can do with them.
        let concluded = finish::conclude(
            conn,
            ws,
            OnConflict::Skip,
            row.id,
            &temps,
            &steps,
            applied,
            outcome,
            Status::Recovered,
        )
        .map(|(concluded, done)| {
            effects.extend(done);
            concluded
        });
        match concluded {
            Ok(finish::Concluded::Recorded(outcome)) => finished.push(outcome),
            Ok(finish::Concluded::NotRecorded(not_recorded)) => tracing::warn!(
                rollback = row.id,
                error = %not_recorded.fault,
                "an interrupted rollback finished at start-up cannot be recorded: the next start records it"
            ),
            Err(RollbackError::Store(e)) => return Err(e),
            Err(err) => {
                tracing::warn!(rollback = row.id, error = %err, "an interrupted rollback failed at start-up")
            }
        }
        tracing::warn!(
            rollback = row.id,
            left,
            "finished a rollback interrupted by a crash"
        );
    }
    for row in journal::reverting_rollbacks(conn)? {
        effects.extend(finish_revert(conn, ws, &row)?);
    }
    for row in journal::with_temps_left(conn)? {
        let steps = all_steps(conn, &row)?;
        let temps = TempNames::of_rollback(row.id, row.temp_tag.clone());
        let inverse = finish::inverse(&steps);
        let forward = remove_temps(conn, ws, &temps, &steps)?;
        let reverse = remove_temps(conn, ws, &temps.reverting(), &inverse)?;
        // A directory moved (or swapped for a symlink) while the rollback ran took its temp
        // files along: they are found by their tag, wherever they are beneath the root.
        let swept = row.temp_tag.is_none() || temps.sweep(&ws.root);
        journal::set_temps_left(conn, row.id, !(forward && reverse && swept))?;
    }
    Ok((finished, effects))
}

/// A failed rollback whose putting back could not finish: every path still at the rollback's
/// target goes back to its state before it.
fn finish_revert(conn: &mut Connection, ws: &Workspace, row: &RollbackRow) -> rusqlite::Result<Effects> {
    let steps = all_steps(conn, row)?;
    super::git::put_back(conn, ws, row.id, &crate::store::git::moves_of(conn, row.id)?);
    let inverse = finish::inverse(&steps);
    let temps = TempNames::of_rollback(row.id, row.temp_tag.clone()).reverting();
    remove_temps(conn, ws, &temps, &inverse)?;
    let back = apply::execute(conn, ws, &temps, &inverse, &mut HashMap::new(), Check::Recovery);
    let done = finish::all_put_back(&back.results);
    finish::record_reverted(conn, row.id, &inverse, &back.results)?;
    if done {
        journal::set_status(conn, row.id, Status::Reverted)?;
    } else {
        // What is still at the rollback's target is its own write, not someone else's: the
        // start-up's survey, right after, must find it recorded.
        finish::record_partial(conn, ws, row.id, &steps)?;
    }
    if back.temps_left {
        journal::set_temps_left(conn, row.id, true)?;
    }
    tracing::warn!(
        rollback = row.id,
        done,
        "putting back a failed rollback at start-up"
    );
    Ok(Effects::of(&inverse, &back.results))
}

/// Finishes the git moves an interrupted rollback journaled: each component still where it
/// started moves; one already moved is left; one someone else moved stops them, said in the
/// log (the files are finished all the same).
fn finish_git(conn: &Connection, ws: &Workspace, id: i64) -> rusqlite::Result<()> {
    let moves = crate::store::git::moves_of(conn, id)?;
    if moves.is_empty() {
        return Ok(());
    }
    match super::git::apply(
        conn,
        ws,
        id,
        &moves,
        &format!("finishing rollback {id} after a crash"),
    ) {
        Ok(()) => super::git::record_after(conn, ws, id),
        Err(err) => {
            tracing::warn!(rollback = id, error = %err, "an interrupted rollback's git moves cannot be finished");
            Ok(())
        }
    }
}

fn all_steps(conn: &Connection, row: &RollbackRow) -> rusqlite::Result<Vec<Ordered>> {
    steps_of(conn, row, |_| true)
}

fn unfinished_steps(conn: &Connection, row: &RollbackRow) -> rusqlite::Result<Vec<Ordered>> {
    steps_of(conn, row, |done| !done)
}

fn steps_of(
    conn: &Connection,
    row: &RollbackRow,
    keep: impl Fn(bool) -> bool,
) -> rusqlite::Result<Vec<Ordered>> {
    let steps = journal::steps(conn, row.id)?
        .into_iter()
        .filter(|s| keep(s.done))
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
            Ordered { ord: s.ord, step }
        })
        .collect();
    Ok(steps)
}

/// Removes the journaled temp files of these steps: names the journal holds, so
/// only files the daemon made. Another process's bytes are under a temp name only once the
/// exchange swapped them out (`swapped_out_foreign`): they are recorded first (G5). Our own
/// temp, whole or cut short by the crash, never was at its path, and is never recorded
/// (G12). False when one could not be removed.
fn remove_temps(
    conn: &mut Connection,
    ws: &Workspace,
    temps: &TempNames,
    steps: &[Ordered],
) -> rusqlite::Result<bool> {
    let mut all = true;
    for Ordered { ord, step } in steps {
        let name = temps.name(*ord);
        let Ok(parent) = ws.root.parent_of(&step.path) else {
            continue;
        };
        if !matches!(parent.stat_temp(&step.path, &name), Ok(Some(_))) {
            continue;
        }
        let temp = match step.path.parent() {
            Some(dir) => dir.join(name.as_bytes()),
            None => crate::paths::RelPath::from_fs_bytes(name.as_bytes().to_vec()),
        };
        if swapped_out_foreign(ws, step, &temp) {
            outside::store_foreign(conn, ws, step, &temp)?;
        }
        all &= parent.unlink_temp(&name);
    }
    Ok(all)
}

/// Whether the temp file holds what the step's exchange swapped out of its path, and that is
/// neither the step's old content nor its new. Before the exchange the temp name holds the
/// new content as far as it was written (empty, or a part of it, when the crash came
/// mid-write); after it, the path holds the new content in full (synced before any exchange)
/// and the temp what was at the path. A swap back puts our content under the temp again.
fn swapped_out_foreign(ws: &Workspace, step: &Step, temp: &crate::paths::RelPath) -> bool {
    let state_of = |path: &crate::paths::RelPath| ws.state_of(path).filter(State::is_present);
    let Some(held) = state_of(temp) else {
        return false;
    };
    if held == step.current || held == step.target {
        return false;
    }
    state_of(&step.path).is_some_and(|now| now == step.target)
}

fn stored_outcome(row: &RollbackRow) -> Outcome {
    row.outcome.clone().unwrap_or_else(|| Outcome {
        operation: row.kind,
        session: None,
        rollback_id: Some(row.id),
        target: Target {
            to: TargetTo::Seq,
            turn: None,
            seq: row.target_seq,
            at: None,
            pin: None,
        },
        on_conflict: OnConflict::Abort,
        dry_run: false,
        applied: false,
        actions: Vec::new(),
        merged: Vec::new(),
        turn_wide: false,
        conflicts: Vec::new(),
        skipped: Vec::new(),
        not_restorable: Vec::new(),
        kept: Vec::new(),
        recovery: None,
        temps_left: None,
        actor: None,
        git: Vec::new(),
    })
}
