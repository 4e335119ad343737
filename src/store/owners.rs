//! Which turns report their tool calls (`windowed`, schema 17): a turn is once a call of it
//! is reported, and a new turn is from its start when its session or its agent's sessions in
//! this workspace reported calls before (`crate::capture::owners`).

use rusqlite::{Connection, Result};

/// Marks a new turn windowed when its session, or another session of its agent, has a
/// windowed turn.
pub fn inherit_windowed(conn: &Connection, turn_id: i64, session_id: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE turns SET windowed = 1 WHERE id = ?1 AND EXISTS (
           SELECT 1 FROM turns t JOIN sessions s ON s.id = t.session_id
            WHERE t.windowed = 1 AND t.id != ?1
              AND (t.session_id = ?2 OR s.agent = (SELECT agent FROM sessions WHERE id = ?2)))",
    )?
    .execute([turn_id, session_id])?;
    Ok(())
}

/// A call of the turn was reported: it is windowed from now on, and so are the open turns of
/// other sessions of its agent (their calls are reported too, the first maybe still to come).
pub fn set_windowed(conn: &Connection, turn_id: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE turns SET windowed = 1 WHERE windowed = 0 AND (id = ?1 OR (end_seq IS NULL AND session_id IN (
           SELECT s.id FROM sessions s WHERE s.agent = (
             SELECT a.agent FROM turns t JOIN sessions a ON a.id = t.session_id WHERE t.id = ?1))))",
    )?
    .execute([turn_id])?;
    Ok(())
}

/// The open turns that are windowed.
pub fn windowed_open(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached("SELECT id FROM turns WHERE end_seq IS NULL AND windowed = 1")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect()
}

/// Who else wrote a path while a turn was open: a version of it in the turn's span that is
/// not the turn's.
pub struct OtherWrite {
    pub path: crate::paths::RelPath,
    pub origin: crate::model::Origin,
    /// The other turn's session and number (origin `turn`).
    pub turn: Option<(String, i64)>,
}

/// At most this many other writes are read for one turn's listing (a huge span of someone
/// else's writes names the first of them).
const OTHERS_MAX: i64 = 100_000;

/// Every write in `turn`'s span that is not the turn's own (another session's turn, the
/// person's, a rollback), oldest first; `ambiguous` ones are the turn's too (listed with it).
pub fn others_during(conn: &Connection, turn: &crate::store::sql::TurnRow) -> Result<Vec<OtherWrite>> {
    let mut stmt = conn.prepare_cached(
        "SELECT p.path, v.origin, s.name, t.number FROM versions v
           JOIN paths p ON p.id = v.path_id
           LEFT JOIN turns t ON t.id = v.turn_id
           LEFT JOIN sessions s ON s.id = t.session_id
          WHERE v.seq > ?1 AND v.seq <= ?2 AND v.turn_id IS NOT ?3 AND v.origin != ?4
          ORDER BY v.seq LIMIT ?5",
    )?;
    let end = turn.end_seq.unwrap_or(i64::MAX);
    let ambiguous = crate::model::Origin::Ambiguous as i64;
    let bounds = rusqlite::params![turn.start_seq, end, turn.id, ambiguous, OTHERS_MAX];
    let rows = stmt.query_map(bounds, |r| {
        let origin = crate::model::Origin::from_i64(r.get(1)?).unwrap_or(crate::model::Origin::Outside);
        let turn = match (r.get::<_, Option<String>>(2)?, r.get::<_, Option<i64>>(3)?) {
            (Some(session), Some(number)) => Some((session, number)),
            _ => None,
        };
        Ok(OtherWrite {
            path: crate::paths::RelPath::from_fs_bytes(r.get(0)?),
            origin,
            turn,
        })
    })?;
    rows.collect()
}
