//! How a rollback ends (G12: all or nothing). `apply` has checked every path against its
//! target after applying. A step that failed (an I/O error, a path not at its target), or,
//! under `abort`, a conflict found while applying, makes the whole rollback fail: every path
//! it had changed is put back to its state before the rollback, from the journal, and the
//! failure is answered as what it is. If putting back fails too, the journal
//! stays `reverting`, the answer says which path is in which state, and the next start-up
//! finishes putting back. A rollback that succeeds is recorded as versions of origin
//! `rollback` and committed.

use std::collections::HashMap;

use rusqlite::{Connection, TransactionBehavior};

use super::apply::{Applied, Cause, Check, Finished, execute};
use super::journaled::to_json;
use super::plan::{Ordered, Step};
use super::{Effects, RollbackError, Workspace};
use crate::fs::temp::TempNames;
use crate::model::answer::{ActionStatus, NoteCode, OnConflict, Outcome, PathLine};
use crate::model::{FileState, StatKey, State, now_ms, now_ns, permission_bits};
use crate::store::journal::{self, Status};
use crate::store::sql;

/// A rollback that failed: the first failure, and where every path of it ended. Its JSON is
/// what a `rollback_failed` (or `workspace_lost`) error adds to its code and message.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    pub rollback_id: i64,
    pub cause: Cause,
    pub path: String,
    #[serde(rename = "detail")]
    pub message: String,
    /// True when every path it had changed was put back: the rollback did not happen.
    pub reverted: bool,
    /// When not reverted: each path the plan names, with its state now.
    pub paths: Vec<PathNow>,
    /// Temp files that could not be removed (`TempNames::left_note`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temps_left: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PathNow {
    pub path: String,
    pub state: PathState,
}

/// Where one path of a failed rollback that could not put everything back is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathState {
    /// Put back, or never changed.
    AsBefore,
    /// At the rollback's target.
    RolledBack,
    /// Between a removal and its re-creation.
    Absent,
    /// Changed by someone else.
    Changed,
    /// Behind a symlink swapped in for one of its directories: what it holds cannot be seen
    /// from the root (the directory the rollback wrote in may be elsewhere now).
    Unreachable,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the rollback failed at {}: {} ({})",
            self.path, self.message, self.cause
        )?;
        if self.reverted {
            return f.write_str("; every path it had changed was put back: nothing changed");
        }
        let moved = self
            .paths
            .iter()
            .filter(|p| p.state != PathState::AsBefore)
            .count();
        write!(
            f,
            "; putting back failed too: {moved} path(s) are not as before (listed in `paths`); \
             the next start of the daemon finishes putting them back"
        )
    }
}

/// Ends an applied rollback: committed (recorded), or failed and put back. A committed one
/// comes back with what its steps changed for the watcher, recorded yet or not.
#[allow(clippy::too_many_arguments)]
pub fn conclude(
    conn: &mut Connection,
    ws: &Workspace,
    on_conflict: OnConflict,
    id: i64,
    temps: &TempNames,
    steps: &[Ordered],
    applied: Applied,
    outcome: Outcome,
    status: Status,
) -> Result<(Concluded, Effects), RollbackError> {
    let failure = applied.results.iter().find_map(|r| match r {
        Finished::Failed(note, cause) => Some((note.clone(), cause.clone())),
        _ => None,
    });
    let late = |r: &Finished| matches!(r, Finished::Skipped(_));
    let late_conflict = on_conflict == OnConflict::Abort && applied.results.iter().any(late);
    let mut outcome = outcome;
    if applied.temps_left {
        outcome.temps_left = Some(temps.left_note());
    }
    if failure.is_none() && !late_conflict {
        let effects = Effects::of(steps, &applied.results);
        let committed = commit(conn, id, steps, &applied, &mut outcome, status);
        let concluded = match committed {
            Ok(()) => Concluded::Recorded(outcome),
            Err(err) => pending_or(
                err,
                Pending::Commit {
                    id,
                    steps: steps.to_vec(),
                    applied,
                    outcome: Box::new(outcome),
                    status,
                },
            )?,
        };
        return Ok((concluded, effects));
    }
    let (back, reverted) = revert(conn, ws, id, temps, steps, &applied.results);
    let temps_left = applied.temps_left || back.temps_left;
    let journaled = journal_failure(conn, ws, id, steps, reverted, temps_left);
    if let Err(err) = journaled {
        let pending = Pending::Failed {
            id,
            steps: steps.to_vec(),
            reverted,
        };
        return Ok((pending_or(err, pending)?, Effects::default()));
    }
    let Some((first, cause)) = failure else {
        // Under abort, a path someone changed while the rollback ran refuses it whole, as a
        // conflict found before the first change would have.
        let refused = refused_late(conn, id, &applied.results, outcome)?;
        return Ok((Concluded::Recorded(refused), Effects::default()));
    };
    let paths = if reverted {
        Vec::new()
    } else {
        paths_now(ws, steps)
    };
    Err(RollbackError::Failed(Box::new(Failure {
        rollback_id: id,
        cause,
        path: first.path.to_text(),
        message: first.reason,
        reverted,
        paths,
        temps_left: temps_left.then(|| temps.left_note()),
    })))
}

/// What a failed rollback leaves in the journal: `reverted` (its operation id freed), or
/// `reverting` with the paths still at its target recorded as its versions.
fn journal_failure(
    conn: &mut Connection,
    ws: &Workspace,
    id: i64,
    steps: &[Ordered],
    reverted: bool,
    temps_left: bool,
) -> rusqlite::Result<()> {
    journal::set_temps_left(conn, id, temps_left)?;
    if reverted {
        journal::set_status(conn, id, Status::Reverted)?;
        return journal::forget_op_id(conn, id);
    }
    journal::set_status(conn, id, Status::Reverting)?;
    record_partial(conn, ws, id, steps)
}

/// How an applied rollback ended: recorded, with its answer; or not recorded yet.
// The answer is moved once per rollback, unboxed as `Result<Outcome, _>` was.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Concluded {
    Recorded(Outcome),
    NotRecorded(Box<NotRecorded>),
}

/// A rollback applied on disk whose record the store refused: the fault, and what the engine
/// keeps to record it later.
#[derive(Debug)]
pub struct NotRecorded {
    pub fault: crate::store::fault::StorageFault,
    pub pending: Pending,
}

/// A rollback applied on disk whose record the store could not take yet (G12): kept by the
/// engine and retried before anything else is recorded, so the daemon's own writes are never
/// taken for someone else's; a restart finishes it from the journal meanwhile.
#[derive(Debug)]
pub enum Pending {
    /// Every step done: its versions, then `committed`.
    Commit {
        id: i64,
        steps: Vec<Ordered>,
        applied: Applied,
        outcome: Box<Outcome>,
        status: Status,
    },
    /// A failed rollback, put back (or not): its journal status.
    Failed {
        id: i64,
        steps: Vec<Ordered>,
        reverted: bool,
    },
}

impl Pending {
    /// Records it now: `None` once it is, what is still not recorded while the store fails.
    /// Its effects came back when it was applied.
    pub fn retry(
        mut self,
        conn: &mut Connection,
        ws: &Workspace,
    ) -> Result<Option<Box<NotRecorded>>, RollbackError> {
        let done = match &mut self {
            Pending::Commit {
                id,
                steps,
                applied,
                outcome,
                status,
            } => commit(conn, *id, steps, applied, outcome, *status),
            Pending::Failed { id, steps, reverted } => {
                journal_failure(conn, ws, *id, steps, *reverted, false)
            }
        };
        match done {
            Ok(()) => Ok(None),
            Err(err) => match pending_or(err, self)? {
                Concluded::NotRecorded(not_recorded) => Ok(Some(not_recorded)),
                Concluded::Recorded(_) => Ok(None),
            },
        }
    }

    /// How many paths it changed on disk.
    pub fn paths(&self) -> Vec<crate::paths::RelPath> {
        match self {
            Pending::Commit { steps, .. } | Pending::Failed { steps, .. } => {
                steps.iter().map(|o| o.step.path.clone()).collect()
            }
        }
    }
}

/// Records a rollback every step of which was done, and commits it.
fn commit(
    conn: &mut Connection,
    id: i64,
    steps: &[Ordered],
    applied: &Applied,
    outcome: &mut Outcome,
    status: Status,
) -> rusqlite::Result<()> {
    // On a copy: a record the store refuses is tried again from the same planned answer.
    let mut recorded = outcome.clone();
    record(conn, id, steps, &applied.results, &mut recorded, status)?;
    *outcome = recorded;
    journal::set_temps_left(conn, id, applied.temps_left)
}

/// A storage fault keeps `pending` for later; any other error is what it is.
fn pending_or(err: rusqlite::Error, pending: Pending) -> Result<Concluded, RollbackError> {
    match crate::store::fault::StorageFault::from_sqlite(&err) {
        Some(fault) => Ok(Concluded::NotRecorded(Box::new(NotRecorded { fault, pending }))),
        None => Err(RollbackError::Store(err)),
    }
}

/// Puts every path of the plan back to its state before the rollback; true when all are.
fn revert(
    conn: &mut Connection,
    ws: &Workspace,
    id: i64,
    temps: &TempNames,
    steps: &[Ordered],
    forward: &[Finished],
) -> (Applied, bool) {
    // Durable before the first path is touched, when the index takes it; when it does not,
    // the put-back goes on all the same (the journal is brought up to date later).
    if let Err(err) = journal::set_status(conn, id, Status::Reverting) {
        tracing::warn!(rollback = id, %err, "cannot journal the put-back of a failed rollback");
    }
    let inverse = inverse(steps);
    let back = execute(
        conn,
        ws,
        &temps.reverting(),
        &inverse,
        &mut HashMap::new(),
        Check::Recovery,
    );
    // A step skipped going forward changed nothing: there is nothing of it to put back.
    let changed = forward
        .iter()
        .map(|f| !matches!(f, Finished::Skipped(_) | Finished::Kept(_)));
    let reverted = back
        .results
        .iter()
        .zip(changed)
        .all(|(back, changed)| !changed || put_back(back));
    tracing::warn!(
        rollback = id,
        reverted,
        "a rollback failed; what it changed was put back"
    );
    (back, reverted)
}

/// Whether every step of a put-back got its path back (see `put_back`).
pub fn all_put_back(results: &[Finished]) -> bool {
    results.iter().all(put_back)
}

/// A put-back step got its path back to its state before the rollback, or found someone
/// else's change there (nothing of the rollback's is left at the path). One that failed, or
/// could not reach the path (a symlink in the way: the directory the rollback wrote in may be
/// elsewhere now, still holding the rollback's content), did not: the rollback is not undone.
fn put_back(result: &Finished) -> bool {
    match result {
        Finished::Failed(..) => false,
        Finished::Skipped(note) => note.code != NoteCode::SymlinkInTheWay,
        Finished::Done(_) | Finished::Kept(_) => true,
    }
}

/// The steps that undo `steps`, in the same order: each from its target back to its state
/// before the rollback.
pub fn inverse(steps: &[Ordered]) -> Vec<Ordered> {
    steps
        .iter()
        .map(|Ordered { ord, step }| Ordered {
            ord: *ord,
            step: Step {
                path: step.path.clone(),
                path_id: step.path_id,
                current_seq: step.target_seq.unwrap_or(step.current_seq),
                current: step.target.clone(),
                target_seq: Some(step.current_seq),
                target: step.current.clone(),
                checked: None,
            },
        })
        .collect()
}

/// A late conflict under abort: nothing changed; the answer is a refusal listing it.
fn refused_late(
    conn: &Connection,
    id: i64,
    results: &[Finished],
    mut outcome: Outcome,
) -> rusqlite::Result<Outcome> {
    for result in results {
        if let Finished::Skipped(note) = result {
            outcome.conflicts.push(PathLine::from(note));
        }
    }
    outcome.rollback_id = None;
    journal::finish_rollback(conn, id, Status::Reverted, &to_json(&outcome), now_ms())?;
    Ok(outcome)
}

/// Where each path of the plan is now, compared with its states before and after.
fn paths_now(ws: &Workspace, steps: &[Ordered]) -> Vec<PathNow> {
    steps
        .iter()
        .map(|Ordered { step, .. }| PathNow {
            path: step.path.to_text(),
            state: match ws.state_of(&step.path) {
                _ if behind_a_symlink(ws, step) => PathState::Unreachable,
                Some(s) if s == step.current => PathState::AsBefore,
                Some(s) if s == step.target => PathState::RolledBack,
                Some(State::Absent) => PathState::Absent,
                _ => PathState::Changed,
            },
        })
        .collect()
}

fn behind_a_symlink(ws: &Workspace, step: &Step) -> bool {
    matches!(
        ws.root.parent_of(&step.path),
        Err(crate::fs::ops::FsError::SymlinkInTheWay(_))
    )
}

/// A revert that could not finish: the paths still at the rollback's target (or between a
/// removal and its re-creation) are recorded as its versions, so the record equals the disk
/// and capture does not take them for someone else's writes.
pub(super) fn record_partial(
    conn: &mut Connection,
    ws: &Workspace,
    id: i64,
    steps: &[Ordered],
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_ms();
    for Ordered { step, .. } in steps {
        let state = match ws.state_of(&step.path) {
            // Not seen (the rollback's write may be in the directory swapped away): the next
            // start puts it back once it is.
            _ if behind_a_symlink(ws, step) => continue,
            Some(s) if s == step.target => s,
            Some(State::Absent) if step.current.is_present() => State::Absent,
            _ => continue,
        };
        // A start-up that finds it still not put back records it once.
        if sql::latest(&tx, &step.path)?.is_some_and(|l| l.state == state) {
            continue;
        }
        journal::insert_rollback_version(&tx, step.path_id, &state, id, now)?;
        sql::clear_path_state(&tx, step.path_id)?;
    }
    tx.commit()
}

/// Records what was done as versions of origin `rollback`, marks every step finished, and
/// stores the answer; the rollback is then committed.
pub fn record(
    conn: &mut Connection,
    rollback_id: i64,
    steps: &[Ordered],
    results: &[Finished],
    outcome: &mut Outcome,
    status: Status,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (now, checked_ns) = (now_ms(), now_ns());
    let index = outcome.action_index();
    for (Ordered { ord, step }, finished) in steps.iter().zip(results) {
        let path = step.path.to_text();
        match finished {
            Finished::Done(stat) => {
                let state = as_written(&step.target, *stat);
                let seq = journal::insert_rollback_version(&tx, step.path_id, &state, rollback_id, now)?;
                set_stat(&tx, step, seq, *stat, checked_ns)?;
                outcome.set_status(&index, &path, ActionStatus::Done);
            }
            Finished::Skipped(note) | Finished::Failed(note, _) => {
                outcome.set_status(&index, &path, ActionStatus::Skipped);
                outcome.skipped.push(PathLine::from(note));
            }
            Finished::Kept(note) => {
                outcome.set_status(&index, &path, ActionStatus::Kept);
                outcome.kept.push(PathLine::from(note));
            }
        }
        journal::mark_step_done(&tx, rollback_id, *ord)?;
    }
    outcome.applied = true;
    outcome.rollback_id = Some(rollback_id);
    journal::finish_rollback(&tx, rollback_id, status, &to_json(outcome), now)?;
    tx.commit()
}

/// The state a done step wrote: its target, with the permission bits the file got where the
/// target knew only its executable bit (a version recorded before bits were), so that the
/// latest version of a file always knows its bits and a later chmod is a change.
fn as_written(target: &State, stat: Option<StatKey>) -> State {
    match (target, stat) {
        (State::File(file), Some(stat)) if file.mode.is_none() => State::File(FileState {
            mode: Some(permission_bits(stat.mode)),
            ..file.clone()
        }),
        _ => target.clone(),
    }
}

fn set_stat(
    tx: &Connection,
    step: &Step,
    seq: i64,
    stat: Option<StatKey>,
    checked_ns: i64,
) -> rusqlite::Result<()> {
    match (stat, step.target.is_present()) {
        (Some(stat), true) => sql::set_path_state(tx, step.path_id, seq, &stat, checked_ns),
        _ => sql::clear_path_state(tx, step.path_id),
    }
}

/// Records a revert finished at start-up: a path put back gets a version of origin `rollback`
/// unless its latest version already says so.
pub fn record_reverted(
    conn: &mut Connection,
    rollback_id: i64,
    inverse: &[Ordered],
    results: &[Finished],
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (now, checked_ns) = (now_ms(), now_ns());
    for (Ordered { step, .. }, finished) in inverse.iter().zip(results) {
        let Finished::Done(stat) = finished else {
            continue;
        };
        if sql::latest(&tx, &step.path)?.is_some_and(|l| l.state == step.target) {
            continue;
        }
        let state = as_written(&step.target, *stat);
        let seq = journal::insert_rollback_version(&tx, step.path_id, &state, rollback_id, now)?;
        set_stat(&tx, step, seq, *stat, checked_ns)?;
    }
    tx.commit()
}
