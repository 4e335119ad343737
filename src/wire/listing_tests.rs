use super::*;
use crate::model::Kind;
use crate::model::answer::{
    Action, ActionLine, ActionStatus, NoteCode, OnConflict, Outcome, PathLine, TargetTo,
};
use crate::store::{briefs, journal};

fn outcome(target: Target, statuses: &[ActionStatus], recovery: Option<&str>) -> Outcome {
    let action = |(i, status): (usize, &ActionStatus)| ActionLine {
        path: format!("f{i}"),
        action: Action::Restore,
        kind: Kind::File,
        status: *status,
        lines_added: None,
        lines_removed: None,
        diff: None,
    };
    let skipped = statuses.iter().filter(|s| **s == ActionStatus::Skipped);
    Outcome {
        operation: RollbackKind::Undo,
        session: Some("s".into()),
        rollback_id: Some(1),
        target,
        on_conflict: OnConflict::Skip,
        dry_run: false,
        applied: true,
        actions: statuses.iter().enumerate().map(action).collect(),
        conflicts: vec![],
        skipped: skipped
            .map(|_| PathLine {
                path: "x".into(),
                code: NoteCode::ChangedByOther,
                reason: "changed".into(),
            })
            .collect(),
        not_restorable: vec![],
        kept: vec![],
        merged: vec![],
        turn_wide: false,
        recovery: recovery.map(String::from),
        temps_left: None,
        actor: None,
        git: Vec::new(),
    }
}

fn to_json(outcome: &Outcome) -> String {
    serde_json::to_string(outcome).expect("answer")
}

fn target(to: TargetTo, turn: Option<i64>, at: Option<&str>, pin: Option<&str>) -> Target {
    let text = |s: &str| s.to_string();
    Target {
        to,
        turn,
        seq: 41,
        at: at.map(text),
        pin: pin.map(text),
    }
}

/// SQLite's brief of each stored answer (migration 0014) says what the answer says,
/// whichever writer stored it last; a rollback with no answer has none.
#[test]
fn a_listing_reads_from_the_brief_what_the_whole_answer_says() {
    use ActionStatus::{Done, Kept, Planned, Skipped};
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = crate::store::db::open_writer(&dir.path().join("index.sqlite")).expect("db");
    conn.execute(
        "INSERT INTO sessions (id, name, created_at) VALUES (1, 's', 0)",
        [],
    )
    .expect("session");
    let answers = [
        outcome(
            target(TargetTo::Before, Some(3), None, None),
            &[Done, Skipped, Done],
            None,
        ),
        outcome(
            target(TargetTo::Time, None, Some("2026-11-30T10:00:00.000Z"), None),
            &[Planned, Kept],
            Some("finished at start-up"),
        ),
        outcome(target(TargetTo::Time, None, None, Some("v1")), &[], None),
    ];
    let insert = "INSERT INTO rollbacks (session_id, kind, target_seq, from_seq, status, created_at)
                  VALUES (1, 'undo', 1, 2, 'prepared', 5)";
    for answer in &answers {
        conn.execute(insert, []).expect("rollback");
        let id = conn.last_insert_rowid();
        let planned = to_json(&outcome(answer.target.clone(), &[Planned], None));
        journal::finish_rollback(&conn, id, Status::Reverted, &planned, 6).expect("planned");
        let json = to_json(answer);
        journal::finish_rollback(&conn, id, Status::Committed, &json, 7).expect("finished");
    }
    conn.execute(insert, []).expect("unanswered");
    let summary = |id, target: Option<Target>, paths_done, skipped, recovery: Option<&str>| RollbackSummary {
        rollback_id: id,
        operation: RollbackKind::Undo,
        target,
        status: if id < 4 {
            Status::Committed
        } else {
            Status::Prepared
        },
        time: "1970-01-01T00:00:00.005Z".into(),
        paths_done,
        skipped,
        recovery: recovery.map(String::from),
    };
    let expected = vec![
        summary(1, Some(answers[0].target.clone()), 2, 1, None),
        summary(
            2,
            Some(answers[1].target.clone()),
            0,
            0,
            Some("finished at start-up"),
        ),
        summary(3, Some(answers[2].target.clone()), 0, 0, None),
        summary(4, None, 0, 0, None),
    ];
    let rows = briefs::of_session(&conn, 1).expect("briefs");
    let listed: Vec<_> = rows.into_iter().map(RollbackSummary::of).collect();
    assert_eq!(listed, expected);
}

/// The listing's JSON, with and without a readable answer, field for field.
#[test]
fn past_rollbacks_list_as_before() {
    let summary = RollbackSummary {
        rollback_id: 3,
        operation: RollbackKind::Undo,
        target: Some(target(
            TargetTo::Time,
            None,
            Some("2026-11-30T10:00:00.000Z"),
            None,
        )),
        status: Status::Recovered,
        time: crate::model::format_time(0),
        paths_done: 1,
        skipped: 1,
        recovery: Some("finished at start-up".into()),
    };
    let json = serde_json::to_string(&summary).expect("summary");
    let expected = r#"{"rollback_id":3,"operation":"undo","target":{"to":"time","turn":null,"seq":41,"at":"2026-11-30T10:00:00.000Z"},"status":"recovered","time":"1970-01-01T00:00:00.000Z","paths_done":1,"skipped":1,"recovery":"finished at start-up"}"#;
    assert_eq!(json, expected);
    let unlisted = RollbackSummary {
        target: None,
        paths_done: 0,
        skipped: 0,
        recovery: None,
        ..summary
    };
    let json = serde_json::to_string(&unlisted).expect("summary");
    let expected = r#"{"rollback_id":3,"operation":"undo","target":null,"status":"recovered","time":"1970-01-01T00:00:00.000Z","paths_done":0,"skipped":0,"recovery":null}"#;
    assert_eq!(json, expected);
}
