//! SQL of pins (migration 0009): named points of the history that retention keeps.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::sql::Result;

/// One pin as stored, with the name of its session (if it was made at a turn's end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRow {
    pub name: String,
    pub seq: i64,
    pub session_id: Option<i64>,
    pub session: Option<String>,
    pub turn: Option<i64>,
    pub at: Option<i64>,
    pub created_at: i64,
}

/// A pin about to be stored.
#[derive(Debug, Clone)]
pub struct NewPin<'a> {
    pub name: &'a str,
    pub seq: i64,
    pub session_id: Option<i64>,
    pub turn: Option<i64>,
    pub at: Option<i64>,
    pub created_at: i64,
}

const COLUMNS: &str = "p.name, p.seq, p.session_id, s.name, p.turn, p.at, p.created_at";

fn row(r: &Row) -> Result<PinRow> {
    Ok(PinRow {
        name: r.get(0)?,
        seq: r.get(1)?,
        session_id: r.get(2)?,
        session: r.get(3)?,
        turn: r.get(4)?,
        at: r.get(5)?,
        created_at: r.get(6)?,
    })
}

pub fn insert(conn: &Connection, pin: &NewPin) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO pins (name, seq, session_id, turn, at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        pin.name,
        pin.seq,
        pin.session_id,
        pin.turn,
        pin.at,
        pin.created_at
    ])?;
    Ok(())
}

/// Deletes the pin; false when there is none of that name.
pub fn delete(conn: &Connection, name: &str) -> Result<bool> {
    let deleted = conn
        .prepare_cached("DELETE FROM pins WHERE name = ?1")?
        .execute([name])?;
    Ok(deleted > 0)
}

pub fn find(conn: &Connection, name: &str) -> Result<Option<PinRow>> {
    let sql =
        format!("SELECT {COLUMNS} FROM pins p LEFT JOIN sessions s ON s.id = p.session_id WHERE p.name = ?1");
    conn.prepare_cached(&sql)?.query_row([name], row).optional()
}

/// Every pin, oldest point first.
pub fn all(conn: &Connection) -> Result<Vec<PinRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM pins p LEFT JOIN sessions s ON s.id = p.session_id ORDER BY p.seq, p.name"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], row)?;
    rows.collect()
}

/// Whether some pin stands for the state at `seq`.
pub fn is_pinned(conn: &Connection, seq: i64) -> Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM pins WHERE seq = ?1)")?
        .query_row([seq], |r| r.get(0))
}
