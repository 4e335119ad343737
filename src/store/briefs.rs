//! SQL of rollback briefs: what a session's listing says of each of its rollbacks (target,
//! paths done and skipped, recovery note), which SQLite derives from the stored answer
//! whenever it is written (migration 0014), so a listing never parses the answers themselves.

use rusqlite::{Connection, Row};

use crate::model::RollbackKind;
use crate::store::journal::{Status, word};
use rusqlite::Result;

/// One rollback as a listing shows it. `brief` is `None` when no answer is stored or it is
/// not JSON.
#[derive(Debug, Clone)]
pub struct BriefRow {
    pub id: i64,
    pub kind: RollbackKind,
    pub status: Status,
    pub created_at: i64,
    pub brief: Option<Brief>,
}

/// The listing's part of a stored answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    /// The answer's `target`, as JSON (`None`: the answer has none).
    pub target: Option<String>,
    pub done: i64,
    pub skipped: i64,
    pub recovery: Option<String>,
}

fn brief_from_row(r: &Row<'_>) -> Result<BriefRow> {
    let done: Option<i64> = r.get(5)?;
    let brief = match done {
        Some(done) => Some(Brief {
            target: r.get(4)?,
            done,
            skipped: r.get::<_, Option<i64>>(6)?.unwrap_or(0),
            recovery: r.get(7)?,
        }),
        None => None,
    };
    Ok(BriefRow {
        id: r.get(0)?,
        kind: word(r, 1, RollbackKind::from_name)?,
        status: word(r, 2, Status::from_name)?,
        created_at: r.get(3)?,
        brief,
    })
}

/// The briefs of a session's rollbacks, oldest first.
pub fn of_session(conn: &Connection, session_id: i64) -> Result<Vec<BriefRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, kind, status, created_at, brief_target, brief_done, brief_skipped,
                brief_recovery
         FROM rollbacks WHERE session_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([session_id], brief_from_row)?;
    rows.collect()
}
