//! What a failed rollback's error adds to its code and message (docs/api.md), built from
//! restore's `Failure`, and a past rollback's lines in `status` (`wire::status`), built from
//! its row. A rollback's own answer is `wire::rollback::RollbackAnswer`.

use serde::Serialize;

use crate::restore::apply::Cause;
use crate::restore::finish::{Failure, PathNow, PathState};
use crate::restore::past::PastRollback;
use crate::wire::status::{FailedRollback, Recovery};

/// The fields a `rollback_failed` (or `workspace_lost`) error adds to its code and message.
#[derive(Debug, Serialize)]
pub struct FailureDetails {
    rollback_id: i64,
    cause: Cause,
    path: String,
    detail: String,
    reverted: bool,
    paths: Vec<PathNowView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temps_left: Option<String>,
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
            temps_left: failure.temps_left.clone(),
        }
    }
}

/// A rollback that failed and is not fully put back yet (G12), in `status`.
pub fn failed_rollback(past: &PastRollback) -> FailedRollback {
    FailedRollback {
        rollback_id: past.id,
        operation: past.kind,
        status: past.status,
        note: "it failed and could not put back every path it had changed; the next start of the daemon finishes putting them back".into(),
    }
}

/// What the last start-up recovery did, when a crash interrupted a rollback (G6), in `status`.
pub fn recovery(past: &PastRollback) -> Recovery {
    let outcome = past.outcome.as_ref();
    Recovery {
        rollback_id: past.id,
        operation: past.kind,
        outcome: "finished".into(),
        note: outcome.and_then(|o| o.recovery.clone()),
        left: outcome.map(|o| o.skipped.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Kind, RollbackKind};
    use crate::restore::OnConflict;
    use crate::restore::chain::{Target, TargetTo};
    use crate::restore::outcome::Outcome;
    use crate::restore::outcome::PathLine;
    use crate::restore::outcome::{ActionLine, ActionStatus};
    use crate::restore::past::{Status, Summary};
    use crate::restore::plan::{Action, NoteCode};
    use crate::wire::rollback::RollbackAnswer;

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
            temps_left: None,
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

    /// What a client reads back is what the daemon sent, field for field.
    #[test]
    fn an_answer_reads_back_as_it_was_sent() {
        for refused in [false, true] {
            let sent = serde_json::to_string(&RollbackAnswer::of(outcome(refused))).expect("answer");
            let read: RollbackAnswer = serde_json::from_str(&sent).expect("read back");
            assert_eq!(serde_json::to_string(&read).expect("again"), sent);
        }
    }

    #[test]
    fn a_failure_names_its_cause_and_where_each_path_is() {
        let failure = Failure {
            rollback_id: 7,
            cause: Cause::Io(crate::store::fault::FaultCause::Io),
            path: "a.rs".into(),
            message: "Input/output error".into(),
            reverted: false,
            paths: vec![PathNow {
                path: "a.rs".into(),
                state: PathState::RolledBack,
            }],
            temps_left: None,
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
        let summary = Summary {
            id: 3,
            kind: RollbackKind::Undo,
            target: past.outcome.as_ref().map(|o| o.target.clone()),
            status: Status::Recovered,
            created_at: 0,
            paths_done: 1,
            skipped: 1,
            recovery: Some("finished at start-up".into()),
        };
        let json = serde_json::to_string(&summary).expect("summary");
        let expected = r#"{"rollback_id":3,"operation":"undo","target":{"to":"time","turn":null,"seq":41,"at":"2026-11-30T10:00:00.000Z"},"status":"recovered","time":"1970-01-01T00:00:00.000Z","paths_done":1,"skipped":1,"recovery":"finished at start-up"}"#;
        assert_eq!(json, expected);
        let recovered = serde_json::to_string(&recovery(&past)).expect("recovery");
        let expected = r#"{"rollback_id":3,"operation":"undo","outcome":"finished","note":"finished at start-up","left":[{"path":"b.rs","code":"changed_by_other","reason":"b.rs is in the way"}]}"#;
        assert_eq!(recovered, expected);
        let unread = PastRollback {
            outcome: None,
            ..past
        };
        let unlisted = Summary {
            target: None,
            paths_done: 0,
            skipped: 0,
            recovery: None,
            ..summary
        };
        let json = serde_json::to_string(&unlisted).expect("summary");
        let expected = r#"{"rollback_id":3,"operation":"undo","target":null,"status":"recovered","time":"1970-01-01T00:00:00.000Z","paths_done":0,"skipped":0,"recovery":null}"#;
        assert_eq!(json, expected);
        let recovered = serde_json::to_string(&recovery(&unread)).expect("recovery");
        let expected = r#"{"rollback_id":3,"operation":"undo","outcome":"finished","note":null,"left":null}"#;
        assert_eq!(recovered, expected);
    }
}
