//! Past rollbacks as the journal keeps them: a session's as its listing summarises them (read
//! from their briefs, never their whole answers), and with their stored answers those a
//! failure left putting back and the last one a start-up recovery finished.

use rusqlite::Connection;

use super::chain::Target;
use super::outcome::{ActionStatus, Outcome};
use crate::model::RollbackKind;
use crate::store::briefs::{self, BriefRow};
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

/// One rollback as a session's listing shows it: what it did and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub id: i64,
    pub kind: RollbackKind,
    pub status: Status,
    pub created_at: i64,
    /// `None` when no answer was stored or it cannot be read.
    pub target: Option<Target>,
    pub paths_done: usize,
    pub skipped: usize,
    pub recovery: Option<String>,
}

impl Summary {
    /// The summary of a stored answer, by the rule migration 0014 keeps in SQL.
    pub fn of(past: &PastRollback) -> Self {
        let outcome = past.outcome.as_ref();
        let done = |o: &Outcome| {
            let done = o.actions.iter().filter(|a| a.status == ActionStatus::Done);
            done.count()
        };
        Self {
            id: past.id,
            kind: past.kind,
            status: past.status,
            created_at: past.created_at,
            target: outcome.map(|o| o.target.clone()),
            paths_done: outcome.map_or(0, done),
            skipped: outcome.map_or(0, |o| o.skipped.len()),
            recovery: outcome.and_then(|o| o.recovery.clone()),
        }
    }

    fn read(row: BriefRow) -> Self {
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
    use crate::restore::outcome::{ActionLine, PathLine};
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

    /// SQLite's brief of each stored answer (migration 0014) summarises it as the answer
    /// itself does, whichever writer stored it last.
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
        let rows = journal::session_rollbacks(&conn, 1).expect("rows");
        let whole: Vec<Summary> = rows
            .into_iter()
            .map(|row| Summary::of(&PastRollback::of(row)))
            .collect();
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[0].paths_done, 2);
        assert_eq!(whole[1].recovery.as_deref(), Some("finished at start-up"));
        assert_eq!(whole[3].target, None);
        assert_eq!(of_session(&conn, 1).expect("briefs"), whole);
    }
}
