//! SQL of a path's history: every version of one path with the turn that made it, in one
//! query (a path written in every turn of a long session names thousands of turns).

use rusqlite::{Connection, Row};

use crate::paths::RelPath;
use crate::store::sql::{Result, TurnRow, VERSION_COLUMNS, VersionRow, version_from_row};

/// Every version of `path`, oldest first, each with its turn (`None`: made outside any turn).
pub fn with_turns(conn: &Connection, path: &RelPath) -> Result<Vec<(VersionRow, Option<TurnRow>)>> {
    let sql = format!(
        "SELECT v.seq, p.path, v.origin, v.turn_id, v.recorded_at, {VERSION_COLUMNS},
                t.id, t.session_id, s.name, t.number, t.ref, t.label, t.start_seq, t.end_seq,
                t.started_at, t.ended_at
         FROM paths p JOIN versions v ON v.path_id = p.id
         LEFT JOIN turns t ON t.id = v.turn_id
         LEFT JOIN sessions s ON s.id = t.session_id
         WHERE p.path = ?1 ORDER BY v.seq"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([path.as_bytes()], |r| Ok((version_from_row(r)?, turn_at(r, 11)?)))?;
    rows.collect()
}

/// The turn columns from `at` on, `None` when the version has no turn.
fn turn_at(r: &Row<'_>, at: usize) -> Result<Option<TurnRow>> {
    let Some(id) = r.get::<_, Option<i64>>(at)? else {
        return Ok(None);
    };
    Ok(Some(TurnRow {
        id,
        session_id: r.get(at + 1)?,
        session: r.get(at + 2)?,
        number: r.get(at + 3)?,
        turn_ref: r.get(at + 4)?,
        label: r.get(at + 5)?,
        start_seq: r.get(at + 6)?,
        end_seq: r.get(at + 7)?,
        started_at: r.get(at + 8)?,
        ended_at: r.get(at + 9)?,
    }))
}
