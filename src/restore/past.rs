//! Past rollbacks as the journal keeps them: a session's as its listing summarises them (read
//! from their briefs, never their whole answers), and with their stored answers those a
//! failure left putting back and the last one a start-up recovery finished.

use rusqlite::Connection;

use super::chain::Target;
use super::outcome::Outcome;
use crate::model::RollbackKind;
use crate::store::briefs::{self, RollbackBrief};
/// Where a past rollback stands (the journal's status).
pub use crate::store::journal::Status;
use crate::store::journal::{self, RollbackRow};

/// One rollback of the journal.
#[derive(Debug, Clone)]
pub struct PastRollback {
    pub id: i64,
    pub kind: RollbackKind,
    pub status: Status,
    pub created_at: i64,
    /// Its answer as last stored; `None` when none was stored or it cannot be read.
    pub outcome: Option<Outcome>,
}

impl PastRollback {
    fn of(row: RollbackRow) -> Self {
        let outcome = Outcome::stored(&row);
        Self {
            id: row.id,
            kind: row.kind,
            status: row.status,
            created_at: row.created_at,
            outcome,
        }
    }
}

fn all(rows: Vec<RollbackRow>) -> Vec<PastRollback> {
    rows.into_iter().map(PastRollback::of).collect()
}

/// One rollback as a session's listing shows it, what it did and how it ended: read from its
/// brief (which SQLite derives from the stored answer, the one place that rule lives) and
/// answered as it is (`GET /v1/sessions/{s}/turns`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    #[serde(rename = "rollback_id")]
    pub id: i64,
    #[serde(rename = "operation")]
    pub kind: RollbackKind,
    /// `None` when no answer was stored or it cannot be read.
    pub target: Option<Target>,
    pub status: Status,
    #[serde(rename = "time", serialize_with = "as_time")]
    pub created_at: i64,
    pub paths_done: usize,
    pub skipped: usize,
    pub recovery: Option<String>,
}

fn as_time<S: serde::Serializer>(ms: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&crate::model::format_time(*ms))
}

impl Summary {
    fn read(row: RollbackBrief) -> Self {
        let brief = row.brief;
        let target = brief.as_ref().and_then(|b| b.target.as_deref());
        let count = |n: i64| usize::try_from(n).unwrap_or(0);
        Self {
            id: row.id,
            kind: row.kind,
            status: row.status,
            created_at: row.created_at,
            target: target.and_then(|json| serde_json::from_str(json).ok()),
            paths_done: brief.as_ref().map_or(0, |b| count(b.done)),
            skipped: brief.as_ref().map_or(0, |b| count(b.skipped)),
            recovery: brief.and_then(|b| b.recovery),
        }
    }
}

/// Every rollback of a session, oldest first, summarised.
pub fn of_session(conn: &Connection, session_id: i64) -> rusqlite::Result<Vec<Summary>> {
    let rows = briefs::of_session(conn, session_id)?;
    Ok(rows.into_iter().map(Summary::read).collect())
}

/// Rollbacks that failed and are not fully put back yet (G12): the next start finishes them.
pub fn reverting(conn: &Connection) -> rusqlite::Result<Vec<PastRollback>> {
    Ok(all(journal::reverting_rollbacks(conn)?))
}

/// The latest rollback a start-up recovery finished after a crash interrupted it (G6).
pub fn last_recovered(conn: &Connection) -> rusqlite::Result<Option<PastRollback>> {
    Ok(journal::last_recovered(conn)?.map(PastRollback::of))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;
    use crate::restore::OnConflict;
    use crate::restore::chain::TargetTo;
    use crate::restore::outcome::{ActionLine, ActionStatus, PathLine};
    use crate::restore::plan::{Action, NoteCode};

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
            recovery: recovery.map(String::from),
            temps_left: None,
            actor: None,
        }
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
            let planned =
                crate::restore::journaled::to_json(&outcome(answer.target.clone(), &[Planned], None));
            journal::finish_rollback(&conn, id, Status::Reverted, &planned, 6).expect("planned");
            let json = crate::restore::journaled::to_json(answer);
            journal::finish_rollback(&conn, id, Status::Committed, &json, 7).expect("finished");
        }
        conn.execute(insert, []).expect("unanswered");
        let summary = |id, target: Option<Target>, paths_done, skipped, recovery: Option<&str>| Summary {
            id,
            kind: RollbackKind::Undo,
            target,
            status: if id < 4 {
                Status::Committed
            } else {
                Status::Prepared
            },
            created_at: 5,
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
        assert_eq!(of_session(&conn, 1).expect("briefs"), expected);
    }
}
