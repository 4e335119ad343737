//! The SQL of reviewed marks (migration 0010): a turn's own mark (an empty path) and its
//! files'.

use rusqlite::{Connection, Result, params};

use crate::paths::RelPath;

/// Sets or clears one mark: the turn's (`path` `None`) or one of its files'.
pub fn set(
    conn: &Connection,
    turn_id: i64,
    path: Option<&RelPath>,
    reviewed: bool,
    now_ms: i64,
) -> Result<()> {
    let key: &[u8] = path.map_or(&[], RelPath::as_bytes);
    if reviewed {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO reviews (turn_id, path, reviewed_at) VALUES (?1, ?2, ?3)",
        )?
        .execute(params![turn_id, key, now_ms])?;
    } else {
        conn.prepare_cached("DELETE FROM reviews WHERE turn_id = ?1 AND path = ?2")?
            .execute(params![turn_id, key])?;
    }
    Ok(())
}

/// Clears every mark of a turn, its own and its files'.
pub fn clear(conn: &Connection, turn_id: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM reviews WHERE turn_id = ?1")?
        .execute([turn_id])?;
    Ok(())
}

/// A turn's marks: whether it is marked itself, and the files marked, in path order.
pub fn of_turn(conn: &Connection, turn_id: i64) -> Result<(bool, Vec<RelPath>)> {
    let mut stmt = conn.prepare_cached("SELECT path FROM reviews WHERE turn_id = ?1 ORDER BY path")?;
    let rows = stmt.query_map([turn_id], |r| r.get::<_, Vec<u8>>(0))?;
    let (mut turn, mut paths) = (false, Vec::new());
    for key in rows {
        let key = key?;
        if key.is_empty() {
            turn = true;
        } else {
            paths.push(RelPath::from_fs_bytes(key));
        }
    }
    Ok((turn, paths))
}
