use super::*;
use crate::model::answer::{Action, ActionLine, ActionStatus, NoteCode, PathLine, Target, TargetTo};
use crate::model::{Kind, RollbackKind};
use crate::restore::apply::Cause;
use crate::restore::finish::{Failure, PathNow, PathState};
use crate::store::journal::{RollbackRow, Status};
use crate::wire::status::Recovery;

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
        merged: vec![],
        turn_wide: false,
        recovery: Some("finished at start-up".into()),
        temps_left: None,
        actor: Some(crate::model::answer::Actor::Mcp),
        git: Vec::new(),
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
    let json = serde_json::to_string(&&failure).expect("details");
    let expected = r#"{"rollback_id":7,"cause":"EIO","path":"a.rs","detail":"Input/output error","reverted":false,"paths":[{"path":"a.rs","state":"rolled_back"}]}"#;
    assert_eq!(json, expected);
}

/// What `status` says of the last rollback a start-up recovery finished, from its row: with
/// the stored answer's note and the paths it left, or without, when none was stored.
#[test]
fn a_recovered_rollback_says_what_its_stored_answer_says() {
    let row = RollbackRow {
        id: 3,
        session_id: Some(1),
        session: Some("s1".into()),
        kind: RollbackKind::Undo,
        target_seq: 41,
        from_seq: 42,
        position: Some(3),
        prev_position: None,
        redo_of: None,
        status: Status::Recovered,
        created_at: 0,
        paths: None,
        brief: None,
        temp_tag: None,
        outcome: Some(outcome(false)),
    };
    let recovered = serde_json::to_string(&Recovery::of(&row)).expect("recovery");
    let expected = r#"{"rollback_id":3,"operation":"undo","outcome":"finished","note":"finished at start-up","left":[{"path":"b.rs","code":"changed_by_other","reason":"b.rs is in the way"}]}"#;
    assert_eq!(recovered, expected);
    let unread = RollbackRow { outcome: None, ..row };
    let recovered = serde_json::to_string(&Recovery::of(&unread)).expect("recovery");
    let expected = r#"{"rollback_id":3,"operation":"undo","outcome":"finished","note":null,"left":null}"#;
    assert_eq!(recovered, expected);
}

/// Under `skip`, what was skipped as a conflict, or beneath a conflicting directory, is what
/// was asked for; anything else skipped means not all done, and so does any skip under `force`.
#[test]
fn only_a_skip_not_asked_for_is_partly_done() {
    let mut skip = outcome(false);
    assert!(!RollbackAnswer::of(skip.clone()).partly_done());
    skip.skipped.push(PathLine {
        path: "b.rs/x".into(),
        code: NoteCode::BeneathSkipped,
        reason: "beneath b.rs".into(),
    });
    assert!(!RollbackAnswer::of(skip.clone()).partly_done());
    skip.skipped.push(PathLine {
        path: "e.rs".into(),
        code: NoteCode::SymlinkInTheWay,
        reason: "a symlink is in the way".into(),
    });
    assert!(RollbackAnswer::of(skip).partly_done());
    let mut force = outcome(false);
    force.on_conflict = OnConflict::Force;
    assert!(RollbackAnswer::of(force).partly_done());
}
