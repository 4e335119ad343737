//! SQL of the timeline: sessions with their agent, first prompt and latest activity, the
//! paths a rollback was restricted to, a rollback's stored answer (read one by one, for the
//! entries shown: the rollbacks themselves are `store::briefs`), and the writes outside any
//! turn between two turn boundaries.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::model::Origin;
use crate::model::answer::Outcome;
use crate::store::sql::{
    AFTER_VERSION_ROW, Result, SessionRow, TURN_SELECT, TurnRow, VERSION_COLUMNS, VersionRow, turn_from_row,
    version_from_row,
};

/// Every session, oldest first, with its turn counts, fork point, agent and first prompt.
/// Its latest activity is its latest turn start, turn end or rollback.
pub fn list_sessions(conn: &Connection) -> Result<Vec<SessionRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.id, s.name, p.name, s.fork_turn, s.created_at,
                (SELECT count(*) FROM turns t WHERE t.session_id = s.id),
                (SELECT t.number FROM turns t WHERE t.session_id = s.id AND t.end_seq IS NULL),
                max(coalesce((SELECT max(max(t.started_at, coalesce(t.ended_at, 0))) FROM turns t
                               WHERE t.session_id = s.id), 0),
                    coalesce((SELECT max(r.created_at) FROM rollbacks r
                               WHERE r.session_id = s.id), 0)),
                s.agent,
                (SELECT t.label FROM turns t WHERE t.session_id = s.id ORDER BY t.number LIMIT 1)
         FROM sessions s LEFT JOIN sessions p ON p.id = s.parent_id ORDER BY s.id",
    )?;
    let rows = stmt.query_map([], session_from_row)?;
    rows.collect()
}

fn session_from_row(r: &Row<'_>) -> Result<SessionRow> {
    let created_at: i64 = r.get(4)?;
    Ok(SessionRow {
        id: r.get(0)?,
        name: r.get(1)?,
        parent: r.get(2)?,
        fork_turn: r.get(3)?,
        created_at,
        turns: r.get(5)?,
        open_turn: r.get(6)?,
        last_activity: r.get::<_, i64>(7)?.max(created_at),
        agent: r.get(8)?,
        first_label: r.get(9)?,
    })
}

/// Says which agent drives the session (the latest one named wins).
pub fn set_session_agent(conn: &Connection, session_id: i64, agent: &str) -> Result<()> {
    conn.prepare_cached("UPDATE sessions SET agent = ?2 WHERE id = ?1 AND agent IS NOT ?2")?
        .execute(params![session_id, agent])?;
    Ok(())
}

/// Records the paths a rollback was restricted to (a JSON array).
pub fn set_rollback_paths(conn: &Connection, rollback_id: i64, paths_json: &str) -> Result<()> {
    conn.prepare_cached("UPDATE rollbacks SET paths = ?2 WHERE id = ?1")?
        .execute(params![rollback_id, paths_json])?;
    Ok(())
}

/// The answer stored with one rollback, if any.
pub fn rollback_outcome(conn: &Connection, rollback_id: i64) -> Result<Option<Outcome>> {
    conn.prepare_cached("SELECT id, outcome FROM rollbacks WHERE id = ?1")?
        .query_row([rollback_id], |r| {
            crate::store::journal::decoded(r, 1, rollback_id)
        })
        .optional()
        .map(Option::flatten)
}

/// Every turn of every session, oldest first.
pub fn all_turns(conn: &Connection) -> Result<Vec<TurnRow>> {
    let sql = format!("{TURN_SELECT} ORDER BY t.started_at, t.id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], turn_from_row)?;
    rows.collect()
}

/// A turn boundary: a turn's start or end sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundaryAt {
    pub seq: i64,
    /// When the earliest turn (or rollback) that starts there started (ms); `None`: only ends
    /// are there.
    pub started_at: Option<i64>,
}

/// Every turn boundary, and the point each rollback began at (what was recorded before it),
/// ascending, each once: a run of writes outside any turn never spans a rollback.
pub fn turn_boundaries(conn: &Connection) -> Result<Vec<BoundaryAt>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, min(at) FROM (SELECT start_seq AS seq, started_at AS at FROM turns
                                   UNION ALL
                                   SELECT end_seq, NULL FROM turns WHERE end_seq IS NOT NULL
                                   UNION ALL
                                   SELECT from_seq, created_at FROM rollbacks)
         GROUP BY seq ORDER BY seq",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(BoundaryAt {
            seq: r.get(0)?,
            started_at: r.get(1)?,
        })
    })?;
    rows.collect()
}

/// The versions of one origin with `after < seq <= upto`, in brief: where they start and end.
#[derive(Debug, Clone, Copy)]
pub struct OriginSpan {
    pub origin: Origin,
    pub first_seq: i64,
    pub last_seq: i64,
    /// When the last of them was recorded (ms).
    pub time_ms: i64,
}

/// The span of the versions of `origin` (outside or offline) between two sequence numbers:
/// two probes of the `versions_unattributed` index, and one row read.
pub fn origin_span(conn: &Connection, origin: Origin, after: i64, upto: i64) -> Result<Option<OriginSpan>> {
    // The literal origin is what lets SQLite pick the partial index (migration 0011).
    let literal = unattributed(origin);
    let sql = format!(
        "SELECT min(seq), max(seq) FROM versions WHERE origin = {literal} AND seq > ?1 AND seq <= ?2"
    );
    let row: (Option<i64>, Option<i64>) = conn
        .prepare_cached(&sql)?
        .query_row([after, upto], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let (Some(first_seq), Some(last_seq)) = row else {
        return Ok(None);
    };
    let time_ms = conn
        .prepare_cached("SELECT recorded_at FROM versions WHERE seq = ?1")?
        .query_row([last_seq], |r| r.get(0))?;
    Ok(Some(OriginSpan {
        origin,
        first_seq,
        last_seq,
        time_ms,
    }))
}

/// The versions of a span, oldest first, each with its path's id.
pub fn span_versions(conn: &Connection, span: &OriginSpan) -> Result<Vec<(i64, VersionRow)>> {
    let literal = unattributed(span.origin);
    let sql = format!(
        "SELECT v.seq, p.path, v.origin, v.recorded_at, {VERSION_COLUMNS}, v.decided, v.path_id
         FROM versions v JOIN paths p ON p.id = v.path_id
         WHERE v.origin = {literal} AND v.seq >= ?1 AND v.seq <= ?2 ORDER BY v.seq"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([span.first_seq, span.last_seq], |r| {
        Ok((r.get(AFTER_VERSION_ROW)?, version_from_row(r)?))
    })?;
    rows.collect()
}

/// Every version recorded after `from` up to `to` (sequence numbers), oldest first: what
/// changed between two points of the record (`GET /v1/diff`).
pub fn range_versions(conn: &Connection, from: i64, to: i64) -> Result<Vec<(i64, VersionRow)>> {
    let sql = format!(
        "SELECT v.seq, p.path, v.origin, v.recorded_at, {VERSION_COLUMNS}, v.decided, v.path_id
         FROM versions v JOIN paths p ON p.id = v.path_id
         WHERE v.seq > ?1 AND v.seq <= ?2 ORDER BY v.seq"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([from, to], |r| {
        Ok((r.get(AFTER_VERSION_ROW)?, version_from_row(r)?))
    })?;
    rows.collect()
}

/// The origin's number, for the two origins the partial index holds (offline for any other).
fn unattributed(origin: Origin) -> i64 {
    match origin {
        Origin::Outside => Origin::Outside as i64,
        _ => Origin::Offline as i64,
    }
}
