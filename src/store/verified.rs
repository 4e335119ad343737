//! SQL of the verification pass (`capture::verify`): which turns were open at a moment, and
//! what a pass recorded.

use rusqlite::{Connection, params};

use crate::model::Origin;
use crate::paths::RelPath;
use crate::store::sql::Result;

/// When a turn was open: from `started_at` to `ended_at` (unix ms; `None` while open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnSpan {
    pub turn_id: i64,
    pub session_id: i64,
    pub started_at: i64,
    pub ended_at: Option<i64>,
}

/// Every turn open at some moment from `from_ms` to `to_ms`, in the order they started.
pub fn turns_open_between(conn: &Connection, from_ms: i64, to_ms: i64) -> Result<Vec<TurnSpan>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, session_id, started_at, ended_at FROM turns
         WHERE started_at <= ?2 AND (ended_at IS NULL OR ended_at >= ?1)
         ORDER BY started_at, id",
    )?;
    let rows = stmt.query_map(params![from_ms, to_ms], |r| {
        Ok(TurnSpan {
            turn_id: r.get(0)?,
            session_id: r.get(1)?,
            started_at: r.get(2)?,
            ended_at: r.get(3)?,
        })
    })?;
    rows.collect()
}

/// One version a pass recorded, with the turn it was attributed to.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FoundVersion {
    pub path: String,
    pub origin: Origin,
    pub session: Option<String>,
    pub turn: Option<i64>,
}

/// The first `limit` versions recorded after `seq`, oldest first.
pub fn versions_after(conn: &Connection, seq: i64, limit: usize) -> Result<Vec<FoundVersion>> {
    let mut stmt = conn.prepare_cached(
        "SELECT p.path, v.origin, s.name, t.number
         FROM versions v JOIN paths p ON p.id = v.path_id
         LEFT JOIN turns t ON t.id = v.turn_id LEFT JOIN sessions s ON s.id = t.session_id
         WHERE v.seq > ?1 ORDER BY v.seq LIMIT ?2",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![seq, limit], |r| {
        let origin = Origin::from_i64(r.get(1)?).unwrap_or(Origin::Outside);
        Ok(FoundVersion {
            path: RelPath::from_fs_bytes(r.get(0)?).to_text(),
            origin,
            session: r.get(2)?,
            turn: r.get(3)?,
        })
    })?;
    rows.collect()
}
