//! One rollback, undo or redo from request to answer: resolve, plan, decide, journal, apply,
//! record.

use rusqlite::Connection;

use super::apply::{self, Check};
use super::finish::Concluded;
use super::plan::{self, Ordered, Plan, Step};
use super::{
    Effects, Operation, Request, RollbackError, Workspace, chain, finish, git, journaled, outside, redo,
    revert,
};
use crate::fs::temp::TempNames;
use crate::model::answer::{OnConflict, Outcome};
use crate::model::{RollbackKind, State};
use crate::paths::RelPath;
use crate::store::journal::{self, Status};
use crate::store::sql;

/// Runs a request; the caller has already recorded every write made before it (barrier).
/// Returns its answer with what the watcher is to do about the directories it changed.
pub fn perform(
    conn: &mut Connection,
    ws: &Workspace,
    request: &Request,
) -> Result<(Concluded, Effects), RollbackError> {
    if let Some(stored) = repeated(conn, request)? {
        return Ok((Concluded::Recorded(stored), Effects::default()));
    }
    let started = std::time::Instant::now();
    let resolved = chain::resolve(conn, request)?;
    if let Some(path) = never_recorded(conn, &request.paths)? {
        return Err(RollbackError::NeverRecorded(path.to_text()));
    }
    let mut plan = in_one_snapshot(conn, |conn| {
        plan_for(conn, ws, &resolved, request, &request.paths)
    })?;
    if request.on_conflict == OnConflict::Force && !request.dry_run {
        // What was just recorded is planned again, and only that (each path is read once).
        let recorded = outside::record_unrecorded(conn, ws, &plan)?;
        if !recorded.is_empty() {
            let sub = in_one_snapshot(conn, |conn| plan_for(conn, ws, &resolved, request, &recorded))?;
            plan.replace_within(sub, &recorded);
        }
    }
    let git_plan = in_one_snapshot(conn, |conn| Ok(git::plan(conn, ws, &resolved, &request.paths)?))?;
    plan.conflicts.extend(git_plan.conflicts.iter().cloned());
    let decision = plan::decide(&plan, request.on_conflict);
    let target = resolved.target.clone();
    let planned_at = started.elapsed();
    let mut outcome = Outcome::planned(conn, &ws.blobs, request, resolved.kind, target, &plan, &decision);
    outcome.git = git::lines(conn, ws, &git_plan.moves, None);
    let planned_moves = git_plan.moves.clone();
    let moves = git::decided(git_plan, &decision, request.on_conflict);
    let described_at = started.elapsed();
    if request.dry_run || decision.refused {
        if request.dry_run {
            let would_apply = if decision.refused {
                &plan.steps
            } else {
                &decision.apply
            };
            outcome.predict_kept(&ws.root.path, would_apply);
        }
        return Ok((Concluded::Recorded(outcome), Effects::default()));
    }
    store_new_targets(conn, ws, &decision.apply, &plan.contents)?;
    let steps: Vec<Ordered> = decision
        .apply
        .into_iter()
        .enumerate()
        .map(|(i, step)| Ordered { ord: i as i64, step })
        .collect();
    let plain: Vec<Step> = steps.iter().map(|o| o.step.clone()).collect();
    let temps = TempNames::random();
    let id = journaled::journal(conn, &resolved, &temps, request, &plain, &outcome)?;
    let journaled_at = started.elapsed();
    move_git(conn, ws, id, &moves, &resolved)?;
    if !moves.is_empty() {
        outcome.git = git::lines(conn, ws, &planned_moves, Some(&moves));
    }
    let mut contents = plan.contents;
    let applied = apply::execute(conn, ws, &temps, &steps, &mut contents, Check::Planned);
    let applied_at = started.elapsed();
    let on_conflict = request.on_conflict;
    let concluded = finish::conclude(
        conn,
        ws,
        on_conflict,
        id,
        &temps,
        &steps,
        applied,
        outcome,
        Status::Committed,
    );
    let (concluded, effects) = git_concluded(conn, ws, id, &moves, concluded)?;
    tracing::debug!(
        plan_ms = planned_at.as_millis() as u64,
        describe_ms = (described_at - planned_at).as_millis() as u64,
        journal_ms = (journaled_at - described_at).as_millis() as u64,
        apply_ms = (applied_at - journaled_at).as_millis() as u64,
        record_ms = (started.elapsed() - applied_at).as_millis() as u64,
        "rollback timings"
    );
    tracing::info!(
        rollback = id,
        kind = resolved.kind.name(),
        paths = steps.len(),
        "rollback applied"
    );
    Ok((concluded, effects))
}

/// Moves git (`git`) once the rollback is journaled, before any file: if it cannot, what
/// moved is put back and the rollback did not happen.
fn move_git(
    conn: &Connection,
    ws: &Workspace,
    id: i64,
    moves: &[crate::git::change::Move],
    resolved: &chain::Resolved,
) -> Result<(), RollbackError> {
    journal_git(conn, id, moves)?;
    if !moves.is_empty() {
        // K = 0 of the crash tests: journaled, nothing moved yet, git included.
        super::pause::PauseHook::from_knobs().before_first();
    }
    if let Err(err) = git::apply(
        conn,
        ws,
        id,
        moves,
        &format!("{} (rollback {id})", resolved.kind.name()),
    ) {
        journal::set_status(conn, id, Status::Reverted)?;
        return Err(RollbackError::Git(err.to_string()));
    }
    Ok(())
}

fn journal_git(conn: &Connection, id: i64, moves: &[crate::git::change::Move]) -> rusqlite::Result<()> {
    if moves.is_empty() {
        return Ok(());
    }
    crate::store::git::set_moves(conn, id, moves)
}

/// After the files: git put back with them when the rollback failed or was refused late, or
/// its new state recorded as the rollback's when it was applied.
fn git_concluded(
    conn: &Connection,
    ws: &Workspace,
    id: i64,
    moves: &[crate::git::change::Move],
    concluded: Result<(Concluded, Effects), RollbackError>,
) -> Result<(Concluded, Effects), RollbackError> {
    if moves.is_empty() {
        return concluded;
    }
    let applied = matches!(&concluded, Ok((Concluded::Recorded(o), _)) if o.applied)
        || matches!(&concluded, Ok((Concluded::NotRecorded(_), _)));
    if applied {
        git::record_after(conn, ws, id)?;
    } else {
        git::put_back(conn, ws, id, moves);
    }
    concluded
}

/// Stores the content of every target no version holds (a merge's), before the journal names
/// it: planning stores nothing, so a dry run changes nothing.
fn store_new_targets(
    conn: &Connection,
    ws: &Workspace,
    steps: &[Step],
    contents: &std::collections::HashMap<crate::model::Hash, Vec<u8>>,
) -> Result<(), RollbackError> {
    for step in steps.iter().filter(|s| s.target_seq.is_none()) {
        let State::File(file) = &step.target else {
            continue;
        };
        if let Some(bytes) = file.stored().and_then(|hash| contents.get(&hash)) {
            crate::store::write_blob(conn, &ws.blobs, bytes)?;
        }
    }
    Ok(())
}

/// Runs a plan's queries in one transaction: SQLite takes its locks once instead of once per
/// statement (a plan of 10,000 paths asks a few questions of each). It is committed, whatever
/// the plan's result: a hunk revert stores the row of its new blob while planning, kept as it
/// would be outside a transaction.
fn in_one_snapshot<T>(
    conn: &Connection,
    plan: impl FnOnce(&Connection) -> Result<T, RollbackError>,
) -> Result<T, RollbackError> {
    let snapshot = conn.unchecked_transaction()?;
    let result = plan(&snapshot);
    snapshot.commit()?;
    result
}

/// A redo undoes exactly the rollback it names; a revert plans its one path (or hunk);
/// anything else rolls back to the target.
fn plan_for(
    conn: &Connection,
    ws: &Workspace,
    resolved: &chain::Resolved,
    request: &Request,
    only: &[RelPath],
) -> Result<Plan, RollbackError> {
    if let (Operation::Revert { turn, hunk }, Some(session), Some(path)) =
        (&request.operation, &request.session, request.paths.first())
    {
        let asked = revert::Revert {
            session,
            turn,
            path,
            hunk: hunk.map(|h| h as usize),
            dry_run: request.dry_run,
        };
        return revert::build(conn, ws, resolved, &asked);
    }
    Ok(match resolved.redo_of {
        Some(redone) => redo::build(conn, ws, redone, resolved.target_seq, only)?,
        None => plan::build(conn, ws, resolved.lineage.as_ref(), resolved.target_seq, only)?,
    })
}

/// A repeated operation id gets the stored answer and is never applied twice.
fn repeated(conn: &Connection, request: &Request) -> Result<Option<Outcome>, RollbackError> {
    let Some(op_id) = request.op_id.as_deref().filter(|_| !request.dry_run) else {
        return Ok(None);
    };
    let Some(row) = journal::rollback_by_op(conn, op_id)? else {
        return Ok(None);
    };
    let Some(stored) = row.outcome else {
        return Ok(None);
    };
    // A retry goes back (an undo or a rollback) or forward (a redo) in the same session;
    // anything else reused the id.
    let is_redo = |kind: RollbackKind| kind == RollbackKind::Redo;
    if is_redo(stored.operation) != is_redo(request.operation.kind()) || stored.session != request.session {
        return Err(RollbackError::OpIdReused {
            op_id: op_id.to_string(),
            was: format!(
                "{} of {}",
                stored.operation,
                stored.session.as_deref().unwrap_or("the workspace")
            ),
        });
    }
    Ok(Some(stored))
}

/// The first requested path the index knows nothing at or beneath: a typo or an ignored path
/// would otherwise plan "nothing to change".
fn never_recorded<'p>(conn: &Connection, paths: &'p [RelPath]) -> rusqlite::Result<Option<&'p RelPath>> {
    for path in paths {
        if !sql::ever_recorded(conn, path)? {
            return Ok(Some(path));
        }
    }
    Ok(None)
}
