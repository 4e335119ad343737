//! SQL of rollbacks in brief: everything of a rollback but its stored answer, which can be
//! large, and the listing's part of that answer (target, paths done and skipped, recovery
//! note), which SQLite derives from it whenever it is written (migration 0014): the timeline
//! and a session's listing read these, never the answers themselves.

use rusqlite::{Connection, Row};

use crate::model::RollbackKind;
use crate::store::journal::{Status, word};
use rusqlite::Result;

/// One rollback without its stored answer.
#[derive(Debug, Clone)]
pub struct RollbackBrief {
    pub id: i64,
    pub session_id: Option<i64>,
    pub session: Option<String>,
    pub kind: RollbackKind,
    pub target_seq: i64,
    pub from_seq: i64,
    pub position: Option<i64>,
    pub prev_position: Option<i64>,
    pub redo_of: Option<i64>,
    pub status: Status,
    pub created_at: i64,
    /// The JSON array of the paths it was restricted to; `None`: the whole workspace.
    pub paths: Option<String>,
    /// `None` when no answer is stored or it is not JSON.
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

const SELECT: &str = "SELECT r.id, r.session_id, s.name, r.kind, r.target_seq, r.from_seq, r.position,
        r.prev_position, r.redo_of, r.status, r.created_at, r.paths, r.brief_target, r.brief_done,
        r.brief_skipped, r.brief_recovery
    FROM rollbacks r LEFT JOIN sessions s ON s.id = r.session_id";

fn from_row(r: &Row<'_>) -> Result<RollbackBrief> {
    let brief = match r.get::<_, Option<i64>>(13)? {
        Some(done) => Some(Brief {
            target: r.get(12)?,
            done,
            skipped: r.get::<_, Option<i64>>(14)?.unwrap_or(0),
            recovery: r.get(15)?,
        }),
        None => None,
    };
    Ok(RollbackBrief {
        id: r.get(0)?,
        session_id: r.get(1)?,
        session: r.get(2)?,
        kind: word(r, 3, RollbackKind::from_name)?,
        target_seq: r.get(4)?,
        from_seq: r.get(5)?,
        position: r.get(6)?,
        prev_position: r.get(7)?,
        redo_of: r.get(8)?,
        status: word(r, 9, Status::from_name)?,
        created_at: r.get(10)?,
        paths: r.get(11)?,
        brief,
    })
}

/// Every rollback of the journal, oldest first.
pub fn all(conn: &Connection) -> Result<Vec<RollbackBrief>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} ORDER BY r.id"))?;
    let rows = stmt.query_map([], from_row)?;
    rows.collect()
}

/// A session's rollbacks, oldest first.
pub fn of_session(conn: &Connection, session_id: i64) -> Result<Vec<RollbackBrief>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE r.session_id = ?1 ORDER BY r.id"))?;
    let rows = stmt.query_map([session_id], from_row)?;
    rows.collect()
}
