//! SQL of the counts stored for ended turns (`history::counts`): read, written, the turns
//! still lacking them, and the rows a collapse makes stale.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::sql::Result;

/// A turn's counts as stored: added, modified, deleted, renamed, ambiguous.
pub type Stored = [i64; 5];

/// The stored counts of some turns (those without a row are missing from the map). A
/// session's thousands of turns are mostly adjacent ids: those are read in one pass over
/// their range, scattered ones one by one.
pub fn of_turns(conn: &Connection, turn_ids: &[i64]) -> Result<HashMap<i64, Stored>> {
    let (Some(&low), Some(&high)) = (turn_ids.iter().min(), turn_ids.iter().max()) else {
        return Ok(HashMap::new());
    };
    let dense = high - low < 4 * i64::try_from(turn_ids.len()).unwrap_or(i64::MAX / 8);
    let mut found = HashMap::with_capacity(turn_ids.len());
    if !dense {
        let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE turn_id = ?1"))?;
        for &id in turn_ids {
            if let Some((id, counts)) = stmt.query_row([id], row_counts).optional()? {
                found.insert(id, counts);
            }
        }
        return Ok(found);
    }
    let wanted: HashSet<i64> = turn_ids.iter().copied().collect();
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE turn_id BETWEEN ?1 AND ?2"))?;
    for row in stmt.query_map([low, high], row_counts)? {
        let (id, counts) = row?;
        if wanted.contains(&id) {
            found.insert(id, counts);
        }
    }
    Ok(found)
}

const SELECT: &str = "SELECT turn_id, added, modified, deleted, renamed, ambiguous FROM turn_counts";

fn row_counts(r: &Row<'_>) -> Result<(i64, Stored)> {
    Ok((r.get(0)?, [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?]))
}

pub fn store(conn: &Connection, turn_id: i64, counts: Stored) -> Result<()> {
    let [added, modified, deleted, renamed, ambiguous] = counts;
    conn.prepare_cached(
        "INSERT INTO turn_counts (turn_id, added, modified, deleted, renamed, ambiguous)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (turn_id) DO UPDATE SET added = ?2, modified = ?3, deleted = ?4,
           renamed = ?5, ambiguous = ?6",
    )?
    .execute(params![turn_id, added, modified, deleted, renamed, ambiguous])?;
    Ok(())
}

/// Up to `limit` ended turns with no stored counts, oldest first.
pub fn missing(conn: &Connection, limit: usize) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.id FROM turns t WHERE t.end_seq IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM turn_counts c WHERE c.turn_id = t.id)
         ORDER BY t.id LIMIT ?1",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map([limit], |r| r.get(0))?;
    rows.collect()
}

/// Collapsing the history at or before `cutoff` changes what the turns that started before
/// it count (their versions and the states they started from): their rows go.
pub fn forget_before(conn: &Connection, cutoff: i64) -> Result<usize> {
    conn.prepare_cached(
        "DELETE FROM turn_counts WHERE turn_id IN (SELECT id FROM turns WHERE start_seq < ?1)",
    )?
    .execute([cutoff])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adjacent ids (read as one range) and scattered ones (read one by one) find the same
    /// rows, and only those asked for.
    #[test]
    fn the_counts_asked_for_are_found_whether_their_ids_are_adjacent_or_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = crate::store::db::open_writer(&dir.path().join("index.sqlite")).expect("db");
        conn.execute(
            "INSERT INTO sessions (id, name, created_at) VALUES (1, 's', 0)",
            [],
        )
        .expect("session");
        for id in 1..=100 {
            conn.execute(
                "INSERT INTO turns (id, session_id, number, start_seq, started_at) VALUES (?1, 1, ?1, 0, 0)",
                [id],
            )
            .expect("turn");
            if id % 10 != 0 {
                store(&conn, id, [id, 0, 0, 0, 1]).expect("counts");
            }
        }
        let adjacent: Vec<i64> = (20..=40).collect();
        let found = of_turns(&conn, &adjacent).expect("adjacent");
        assert_eq!(found.len(), 18, "21 asked, 20, 30 and 40 have no row");
        assert_eq!(found.get(&21), Some(&[21, 0, 0, 0, 1]));
        let scattered = [1, 50, 99, 100];
        let found = of_turns(&conn, &scattered).expect("scattered");
        let mut ids: Vec<i64> = found.keys().copied().collect();
        ids.sort();
        assert_eq!(ids, [1, 99], "50 and 100 have no row");
        assert!(of_turns(&conn, &[]).expect("none").is_empty());
    }
}
