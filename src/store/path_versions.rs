//! SQL of a path's history: every version of one path with the turn that made it, in one
//! query (a path written in every turn of a long session names thousands of turns).

use std::sync::Arc;

use rusqlite::{Connection, Row};

use crate::model::{Decided, Origin, State};
use crate::paths::RelPath;
use crate::store::sql::{
    AFTER_VERSION_ROW, Result, TurnRow, VERSION_COLUMN_COUNT, VERSION_COLUMNS, VersionRow, state_at_column,
    version_from_row,
};

/// One version as a path's history answers it: when, who (the turn's session and number)
/// and what. Only what the answer shows is read: a path written in every turn of a long
/// session has tens of thousands of versions.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRow {
    pub seq: i64,
    pub recorded_at: i64,
    pub origin: Origin,
    /// The session's name (one allocation shared by its versions) and the turn's number.
    pub turn: Option<(Arc<str>, i64)>,
    pub state: State,
    /// How its owner was decided (schema 17 on).
    pub decided: Option<Decided>,
}

/// Every version of `path`, oldest first, as its history shows them.
pub fn for_history(conn: &Connection, path: &RelPath) -> Result<Vec<HistoryRow>> {
    let sql = format!(
        "SELECT v.seq, v.recorded_at, v.origin, s.name, t.number, {VERSION_COLUMNS}, v.decided
         FROM paths p JOIN versions v ON v.path_id = p.id
         LEFT JOIN turns t ON t.id = v.turn_id
         LEFT JOIN sessions s ON s.id = t.session_id
         WHERE p.path = ?1 ORDER BY v.seq"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([path.as_bytes()])?;
    let mut found = Vec::new();
    let mut session: Option<Arc<str>> = None;
    while let Some(r) = rows.next()? {
        let turn = match (r.get_ref(3)?.as_str_or_null()?, r.get::<_, Option<i64>>(4)?) {
            (Some(name), Some(number)) => {
                let shared = match &session {
                    Some(last) if **last == *name => last.clone(),
                    _ => session.insert(Arc::from(name)).clone(),
                };
                Some((shared, number))
            }
            _ => None,
        };
        found.push(HistoryRow {
            seq: r.get(0)?,
            recorded_at: r.get(1)?,
            origin: Origin::from_i64(r.get(2)?).unwrap_or(Origin::Outside),
            turn,
            state: state_at_column(r, 5)?,
            decided: r
                .get::<_, Option<i64>>(5 + VERSION_COLUMN_COUNT)?
                .and_then(Decided::from_i64),
        });
    }
    Ok(found)
}

/// A version with the turn that made it (`None`: made outside any turn) and, for one a
/// rollback wrote, the sequence number that rollback went to (the state it set paths to).
pub type VersionWithTurn = (VersionRow, Option<TurnRow>, Option<i64>);

/// Every version of `path`, oldest first, each with its turn and its rollback's target.
pub fn with_turns(conn: &Connection, path: &RelPath) -> Result<Vec<VersionWithTurn>> {
    let sql = format!(
        "SELECT v.seq, p.path, v.origin, v.recorded_at, {VERSION_COLUMNS}, v.decided,
                t.id, t.session_id, s.name, t.number, t.ref, t.label, t.start_seq, t.end_seq,
                t.started_at, t.ended_at, r.target_seq
         FROM paths p JOIN versions v ON v.path_id = p.id
         LEFT JOIN turns t ON t.id = v.turn_id
         LEFT JOIN sessions s ON s.id = t.session_id
         LEFT JOIN rollbacks r ON r.id = v.rollback_id
         WHERE p.path = ?1 ORDER BY v.seq"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([path.as_bytes()], |r| {
        // The turn's ten columns follow the version's, then the rollback's target.
        Ok((
            version_from_row(r)?,
            turn_at(r, AFTER_VERSION_ROW)?,
            r.get(AFTER_VERSION_ROW + 10)?,
        ))
    })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::file;
    use crate::store::sql::{ensure_path, insert_version};

    /// The history's rows say what the full rows with their turns say, with the sessions of
    /// alternating turns each named right, and a version outside any turn turnless.
    #[test]
    fn the_history_rows_agree_with_the_versions_and_their_turns() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = crate::store::db::open_writer(&dir.path().join("index.sqlite")).expect("db");
        for (id, name) in [(1, "s1"), (2, "s2")] {
            conn.execute(
                "INSERT INTO sessions (id, name, created_at) VALUES (?1, ?2, 0)",
                rusqlite::params![id, name],
            )
            .expect("session");
        }
        for (turn, session) in [(1, 1), (2, 2), (3, 1)] {
            conn.execute(
                "INSERT INTO turns (id, session_id, number, start_seq, started_at) VALUES (?1, ?2, ?1, 0, 0)",
                [turn, session],
            )
            .expect("turn");
        }
        let path = RelPath::parse("a.txt").expect("path");
        let id = ensure_path(&conn, &path).expect("path row");
        let other = ensure_path(&conn, &RelPath::parse("b.txt").expect("path")).expect("path row");
        let made = [(Some(1), 1), (Some(2), 2), (None, 3), (Some(3), 4), (Some(3), 5)];
        for (turn, at) in made {
            let origin = if turn.is_some() {
                Origin::Turn
            } else {
                Origin::Outside
            };
            let state = file(at as u8);
            insert_version(&conn, id, &state, origin, turn, None, at).expect("version");
            insert_version(&conn, other, &state, origin, turn, None, at).expect("version");
        }
        let lean = for_history(&conn, &path).expect("history");
        let full = with_turns(&conn, &path).expect("versions");
        assert_eq!(lean.len(), made.len());
        for (row, (version, turn, _)) in lean.iter().zip(&full) {
            let want = HistoryRow {
                seq: version.seq,
                recorded_at: version.recorded_at,
                origin: version.origin,
                turn: turn.as_ref().map(|t| (Arc::from(t.session.as_str()), t.number)),
                state: version.state.clone(),
                decided: version.decided,
            };
            assert_eq!(*row, want);
        }
        let sessions: Vec<Option<&str>> = lean.iter().map(|r| r.turn.as_ref().map(|t| &*t.0)).collect();
        assert_eq!(sessions, [Some("s1"), Some("s2"), None, Some("s1"), Some("s1")]);
        assert!(
            for_history(&conn, &RelPath::parse("c.txt").expect("path"))
                .expect("none")
                .is_empty()
        );
    }
}
