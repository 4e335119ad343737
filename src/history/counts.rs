//! A turn's counts (`Counts`: its net changes by kind) stored when it ends, so that listing a
//! session's 5,000 turns reads 5,000 rows instead of computing every turn's changes. The
//! stored numbers are the computed ones: they are computed by `turn_changes` at the end, a
//! row goes stale (and is deleted) when a later version is attributed to the turn or
//! retention collapses history it counted, and a turn without a row is computed on read.

use rusqlite::{Connection, TransactionBehavior};

use super::{Counts, turn_changes};
use crate::store::sql::TurnRow;
use crate::store::turn_counts::{self, Stored};

/// Turns whose counts one `fill_missing` call computes, in one transaction.
pub const FILL_CHUNK: usize = 20;

/// The counts of each turn, in order: stored ones read, the others (open turns, turns ended
/// before counts were stored, stale rows) computed.
pub fn of_turns(conn: &Connection, turns: &[TurnRow]) -> rusqlite::Result<Vec<Counts>> {
    let ids: Vec<i64> = turns.iter().map(|t| t.id).collect();
    let stored = turn_counts::of_turns(conn, &ids)?;
    turns
        .iter()
        .map(|turn| match (turn.end_seq, stored.get(&turn.id)) {
            (Some(_), Some(row)) => Ok(from_stored(*row)),
            _ => Ok(Counts::of(&turn_changes(conn, turn)?)),
        })
        .collect()
}

/// Computes and stores the counts of an ended turn (the engine, right after ending it).
pub fn store(conn: &Connection, turn: &TurnRow) -> rusqlite::Result<Counts> {
    let counts = Counts::of(&turn_changes(conn, turn)?);
    if turn.end_seq.is_some() {
        turn_counts::store(conn, turn.id, to_stored(counts))?;
    }
    Ok(counts)
}

/// Stores the counts of up to `FILL_CHUNK` ended turns that have none, in one transaction;
/// returns how many it stored (0: none is missing).
pub fn fill_missing(conn: &mut Connection) -> rusqlite::Result<usize> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let missing = turn_counts::missing(&tx, FILL_CHUNK)?;
    for id in &missing {
        if let Some(turn) = crate::store::sql::turn_by_id(&tx, *id)? {
            store(&tx, &turn)?;
        }
    }
    tx.commit()?;
    Ok(missing.len())
}

fn to_stored(c: Counts) -> Stored {
    let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    [
        n(c.added),
        n(c.modified),
        n(c.deleted),
        n(c.renamed),
        n(c.ambiguous),
    ]
}

fn from_stored(row: Stored) -> Counts {
    let n = |v: i64| usize::try_from(v).unwrap_or(0);
    Counts {
        added: n(row[0]),
        modified: n(row[1]),
        deleted: n(row[2]),
        renamed: n(row[3]),
        ambiguous: n(row[4]),
    }
}
