//! The rollback answers of docs/api.md, built from what restore returns (`Outcome`, a failed
//! rollback's `Failure`) and from the journal's past rollbacks: the answer stored with a
//! rollback and the HTTP JSON can each change without the other.

use serde::Serialize;

use super::error::ErrorCode;
use crate::model::{Kind, RollbackKind, format_time};
use crate::restore::OnConflict;
use crate::restore::chain::{Target, TargetTo};
use crate::restore::finish::{Cause, Failure, PathNow, PathState};
use crate::restore::outcome::{ActionLine, ActionStatus, Outcome, PathLine};
use crate::restore::past::{PastRollback, Status, Summary};
use crate::restore::plan::{Action, NoteCode};

/// The answer of a rollback, undo, redo or time rollback: 200, or 409 with `error` when
/// conflicts refused it.
#[derive(Debug, Serialize)]
pub struct RollbackAnswer {
    operation: RollbackKind,
    session: Option<String>,
    rollback_id: Option<i64>,
    target: TargetView,
    on_conflict: OnConflict,
    dry_run: bool,
    applied: bool,
    actions: Vec<ActionView>,
    conflicts: Vec<PathView>,
    skipped: Vec<PathView>,
    not_restorable: Vec<PathView>,
    kept: Vec<PathView>,
    recovery: Option<String>,
    /// Who asked for it, when not the user (`mcp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    actor: Option<crate::restore::Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Refusal>,
}

/// Why a rollback was refused (409): its conflicts, or content it cannot restore.
#[derive(Debug, Serialize)]
struct Refusal {
    code: ErrorCode,
    message: String,
}

impl RollbackAnswer {
    /// The answer to `outcome`; a refused one says so in `error`.
    pub fn of(outcome: Outcome) -> Self {
        let error = outcome.refused().then(|| {
            let paths = match outcome.conflicts.len() + outcome.not_restorable.len() {
                1 => "1 path conflicts or cannot".to_string(),
                n => format!("{n} paths conflict or cannot"),
            };
            Refusal {
                code: ErrorCode::Conflicts,
                message: format!("{paths} be restored; nothing was changed (use skip or force)"),
            }
        });
        Self {
            operation: outcome.operation,
            session: outcome.session,
            rollback_id: outcome.rollback_id,
            target: TargetView::of(&outcome.target),
            on_conflict: outcome.on_conflict,
            dry_run: outcome.dry_run,
            applied: outcome.applied,
            actions: outcome.actions.into_iter().map(ActionView::of).collect(),
            conflicts: PathView::all(outcome.conflicts),
            skipped: PathView::all(outcome.skipped),
            not_restorable: PathView::all(outcome.not_restorable),
            kept: PathView::all(outcome.kept),
            recovery: outcome.recovery,
            actor: outcome.actor,
            error,
        }
    }

    pub fn refused(&self) -> bool {
        self.error.is_some()
    }
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct TargetView {
    to: TargetTo,
    turn: Option<i64>,
    seq: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pin: Option<String>,
}

impl TargetView {
    pub(super) fn of(target: &Target) -> Self {
        Self {
            to: target.to,
            turn: target.turn,
            seq: target.seq,
            at: target.at.clone(),
            pin: target.pin.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
struct ActionView {
    path: String,
    action: Action,
    kind: Kind,
    status: ActionStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    lines_added: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lines_removed: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
}

impl ActionView {
    fn of(line: ActionLine) -> Self {
        Self {
            path: line.path,
            action: line.action,
            kind: line.kind,
            status: line.status,
            lines_added: line.lines_added,
            lines_removed: line.lines_removed,
            diff: line.diff,
        }
    }
}

/// A path with why it conflicts, was skipped or kept, or cannot be restored.
#[derive(Debug, Clone, Serialize)]
struct PathView {
    path: String,
    code: NoteCode,
    reason: String,
}

impl PathView {
    fn all(lines: Vec<PathLine>) -> Vec<Self> {
        lines
            .into_iter()
            .map(|line| Self {
                path: line.path,
                code: line.code,
                reason: line.reason,
            })
            .collect()
    }
}

/// The fields a `rollback_failed` (or `workspace_lost`) error adds to its code and message.
#[derive(Debug, Serialize)]
pub struct FailureDetails {
    rollback_id: i64,
    cause: Cause,
    path: String,
    detail: String,
    reverted: bool,
    paths: Vec<PathNowView>,
}

#[derive(Debug, Serialize)]
struct PathNowView {
    path: String,
    state: PathState,
}

impl FailureDetails {
    pub fn of(failure: &Failure) -> Self {
        let path_now = |p: &PathNow| PathNowView {
            path: p.path.clone(),
            state: p.state,
        };
        Self {
            rollback_id: failure.rollback_id,
            cause: failure.cause.clone(),
            path: failure.path.clone(),
            detail: failure.message.clone(),
            reverted: failure.reverted,
            paths: failure.paths.iter().map(path_now).collect(),
        }
    }
}

/// One rollback in a session's listing: what it did and how it ended.
#[derive(Debug, Serialize)]
pub struct RollbackSummary {
    rollback_id: i64,
    operation: RollbackKind,
    target: Option<TargetView>,
    status: Status,
    time: String,
    paths_done: usize,
    skipped: usize,
    recovery: Option<String>,
}

impl RollbackSummary {
    pub fn of(summary: &Summary) -> Self {
        Self {
            rollback_id: summary.id,
            operation: summary.kind,
            target: summary.target.as_ref().map(TargetView::of),
            status: summary.status,
            time: format_time(summary.created_at),
            paths_done: summary.paths_done,
            skipped: summary.skipped,
            recovery: summary.recovery.clone(),
        }
    }
}

/// A rollback that failed and is not fully put back yet (G12), in `status`.
#[derive(Debug, Serialize)]
pub struct FailedRollback {
    rollback_id: i64,
    operation: RollbackKind,
    status: Status,
    note: &'static str,
}

impl FailedRollback {
    pub fn of(past: &PastRollback) -> Self {
        Self {
            rollback_id: past.id,
            operation: past.kind,
            status: past.status,
            note: "it failed and could not put back every path it had changed; the next start of the daemon finishes putting them back",
        }
    }
}

/// What the last start-up recovery did, when a crash interrupted a rollback (G6), in `status`.
#[derive(Debug, Serialize)]
pub struct Recovery {
    rollback_id: i64,
    operation: RollbackKind,
    outcome: &'static str,
    note: Option<String>,
    left: Option<Vec<PathView>>,
}

impl Recovery {
    pub fn of(past: &PastRollback) -> Self {
        let outcome = past.outcome.as_ref();
        Self {
            rollback_id: past.id,
            operation: past.kind,
            outcome: "finished",
            note: outcome.and_then(|o| o.recovery.clone()),
            left: outcome.map(|o| PathView::all(o.skipped.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(refused: bool) -> Outcome {
        let line = |path: &str, code| PathLine {
            path: path.into(),
            code,
            reason: format!("{path} is in the way"),
        };
        let action = |path: &str, status, lines: Option<usize>| ActionLine {
            path: path.into(),
            action: Action::Restore,
            kind: Kind::File,
            status,
            lines_added: lines,
            lines_removed: lines,
            diff: lines.map(|_| "--- a/x\n+++ b/x\n".into()),
        };
        Outcome {
            operation: RollbackKind::Undo,
            session: Some("s1".into()),
            rollback_id: (!refused).then_some(3),
            target: Target {
                to: TargetTo::Time,
                turn: None,
                seq: 41,
                at: Some("2026-11-30T10:00:00.000Z".into()),
                pin: None,
            },
            on_conflict: OnConflict::Skip,
            dry_run: false,
            applied: !refused,
            actions: vec![
                action("a.rs", ActionStatus::Done, Some(2)),
                action("b.rs", ActionStatus::Skipped, None),
            ],
            conflicts: vec![line("b.rs", NoteCode::ChangedByOther)],
            skipped: vec![line("b.rs", NoteCode::ChangedByOther)],
            not_restorable: vec![line("c.bin", NoteCode::TooLarge)],
            kept: vec![line("d", NoteCode::NotEmpty)],
            recovery: Some("finished at start-up".into()),
            actor: Some(crate::restore::Actor::Mcp),
        }
    }

    /// The answer has every field of the stored form, in its order, with the same values.
    #[test]
    fn an_answer_says_what_the_stored_outcome_says() {
        let stored = serde_json::to_string(&outcome(false)).expect("stored");
        let answer = serde_json::to_string(&RollbackAnswer::of(outcome(false))).expect("answer");
        assert_eq!(answer, stored);
    }

    #[test]
    fn a_refused_answer_ends_with_its_error() {
        let stored = serde_json::to_string(&outcome(true)).expect("stored");
        let answer = serde_json::to_string(&RollbackAnswer::of(outcome(true))).expect("answer");
        let error = r#","error":{"code":"conflicts","message":"2 paths conflict or cannot be restored; nothing was changed (use skip or force)"}}"#;
        assert_eq!(answer, format!("{}{error}", &stored[..stored.len() - 1]));
    }

    #[test]
    fn a_failure_names_its_cause_and_where_each_path_is() {
        let failure = Failure {
            rollback_id: 7,
            cause: Cause::Io("EIO".into()),
            path: "a.rs".into(),
            message: "Input/output error".into(),
            reverted: false,
            paths: vec![PathNow {
                path: "a.rs".into(),
                state: PathState::RolledBack,
            }],
        };
        let json = serde_json::to_string(&FailureDetails::of(&failure)).expect("details");
        let expected = r#"{"rollback_id":7,"cause":"EIO","path":"a.rs","detail":"Input/output error","reverted":false,"paths":[{"path":"a.rs","state":"rolled_back"}]}"#;
        assert_eq!(json, expected);
    }

    #[test]
    fn past_rollbacks_list_as_before() {
        let past = PastRollback {
            id: 3,
            kind: RollbackKind::Undo,
            status: Status::Recovered,
            created_at: 0,
            outcome: Some(outcome(false)),
        };
        let summary = serde_json::to_string(&RollbackSummary::of(&Summary::of(&past))).expect("summary");
        let expected = r#"{"rollback_id":3,"operation":"undo","target":{"to":"time","turn":null,"seq":41,"at":"2026-11-30T10:00:00.000Z"},"status":"recovered","time":"1970-01-01T00:00:00.000Z","paths_done":1,"skipped":1,"recovery":"finished at start-up"}"#;
        assert_eq!(summary, expected);
        let recovery = serde_json::to_string(&Recovery::of(&past)).expect("recovery");
        let expected = r#"{"rollback_id":3,"operation":"undo","outcome":"finished","note":"finished at start-up","left":[{"path":"b.rs","code":"changed_by_other","reason":"b.rs is in the way"}]}"#;
        assert_eq!(recovery, expected);
        let unread = PastRollback {
            outcome: None,
            ..past
        };
        let summary = serde_json::to_string(&RollbackSummary::of(&Summary::of(&unread))).expect("summary");
        let expected = r#"{"rollback_id":3,"operation":"undo","target":null,"status":"recovered","time":"1970-01-01T00:00:00.000Z","paths_done":0,"skipped":0,"recovery":null}"#;
        assert_eq!(summary, expected);
        let recovery = serde_json::to_string(&Recovery::of(&unread)).expect("recovery");
        let expected = r#"{"rollback_id":3,"operation":"undo","outcome":"finished","note":null,"left":null}"#;
        assert_eq!(recovery, expected);
    }
}
