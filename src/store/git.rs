//! The repository's recorded states (schema 19, `crate::git`): one row each time it changed
//! at a marker, numbered from the versions' sequence, and a rollback's journaled git moves.

use rusqlite::{Connection, OptionalExtension, Result, params};

use crate::git::Refs;
use crate::git::change::{IndexAt, Move, Recorded};
use crate::model::{Decided, Hash, Origin};

/// One recorded state of the repository, and who moved it there.
#[derive(Debug, Clone)]
pub struct GitRow {
    pub seq: i64,
    pub state: Recorded,
    pub origin: Origin,
    /// The session whose turn or rollback it is.
    pub session_id: Option<i64>,
}

/// Who moved the repository to a new state: a write made then (`capture::owners`), or a
/// rollback.
pub struct MovedBy {
    pub origin: Origin,
    pub turn_id: Option<i64>,
    pub rollback_id: Option<i64>,
    pub decided: Option<Decided>,
}

/// How the index's entries changed from the state recorded before: paths staged (added or
/// changed) and paths removed (`git::index::compare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staged {
    pub staged: usize,
    pub removed: usize,
}

/// Takes the next number of the versions' sequence (`AUTOINCREMENT`'s `sqlite_sequence` row,
/// which SQLite lets a program raise): the next version is numbered after it.
fn next_seq(conn: &Connection) -> Result<i64> {
    let seq = crate::store::sql::latest_seq(conn)? + 1;
    let raised = conn
        .prepare_cached("UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'versions'")?
        .execute([seq])?;
    if raised == 0 {
        conn.prepare_cached("INSERT INTO sqlite_sequence (name, seq) VALUES ('versions', ?1)")?
            .execute([seq])?;
    }
    Ok(seq)
}

/// Records the repository's state as read (its index's bytes stored as a blob); returns it as
/// recorded.
pub fn record(
    conn: &Connection,
    blobs: &crate::store::blobs::BlobDir,
    state: &crate::git::GitState,
    by: &MovedBy,
    before: Option<&[u8]>,
) -> Result<Recorded> {
    let staged = match &state.index {
        Some(index) => staged_since(conn, blobs, &index.bytes, Hash(index.digest), before)?,
        None => None,
    };
    let index = match &state.index {
        Some(index) => Some(IndexAt {
            hash: crate::store::write_blob(conn, blobs, &index.bytes)?,
            digest: Hash(index.digest),
        }),
        None => None,
    };
    let recorded = Recorded {
        refs: state.refs.clone(),
        index,
    };
    insert(conn, &recorded, by, staged)?;
    Ok(recorded)
}

fn insert(conn: &Connection, state: &Recorded, by: &MovedBy, staged: Option<Staged>) -> Result<i64> {
    let seq = next_seq(conn)?;
    let refs =
        serde_json::to_string(&state.refs).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
    let index = state.index.as_ref();
    conn.prepare_cached(
        "INSERT INTO git_states (seq, refs, index_hash, index_digest, origin, turn_id, rollback_id, decided,
                                 recorded_at, index_staged, index_removed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        seq,
        refs,
        index.map(|i| i.hash.0.to_vec()),
        index.map(|i| i.digest.0.to_vec()),
        by.origin as i64,
        by.turn_id,
        by.rollback_id,
        by.decided.map(|d| d as i64),
        crate::model::now_ms(),
        staged.map(|s| s.staged as i64),
        staged.map(|s| s.removed as i64),
    ])?;
    Ok(seq)
}

const SELECT: &str =
    "SELECT g.seq, g.refs, g.index_hash, g.index_digest, g.origin, coalesce(t.session_id, r.session_id)
   FROM git_states g LEFT JOIN turns t ON t.id = g.turn_id LEFT JOIN rollbacks r ON r.id = g.rollback_id";

fn row(r: &rusqlite::Row<'_>) -> Result<GitRow> {
    let text: String = r.get(1)?;
    let refs: Refs = serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, e.into()))?;
    let hash: Option<Vec<u8>> = r.get(2)?;
    let digest: Option<Vec<u8>> = r.get(3)?;
    let index = match (
        hash.as_deref().and_then(Hash::from_slice),
        digest.as_deref().and_then(Hash::from_slice),
    ) {
        (Some(hash), Some(digest)) => Some(IndexAt { hash, digest }),
        _ => None,
    };
    let origin: i64 = r.get(4)?;
    Ok(GitRow {
        seq: r.get(0)?,
        state: Recorded { refs, index },
        origin: Origin::from_i64(origin).unwrap_or(Origin::Outside),
        session_id: r.get(5)?,
    })
}

/// The state at a boundary: the latest recorded at or before `seq`.
pub fn at(conn: &Connection, seq: i64) -> Result<Option<GitRow>> {
    conn.prepare_cached(&format!("{SELECT} WHERE g.seq <= ?1 ORDER BY g.seq DESC LIMIT 1"))?
        .query_row([seq], row)
        .optional()
}

/// Every state recorded after `seq`, oldest first.
pub fn after(conn: &Connection, seq: i64) -> Result<Vec<GitRow>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE g.seq > ?1 ORDER BY g.seq"))?;
    let rows = stmt.query_map([seq], row)?;
    rows.collect()
}

/// A rollback's git moves, journaled before anything moves.
pub fn set_moves(conn: &Connection, rollback_id: i64, moves: &[Move]) -> Result<()> {
    let json = serde_json::to_string(moves).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
    conn.prepare_cached("UPDATE rollbacks SET git_moves = ?2 WHERE id = ?1")?
        .execute(params![rollback_id, json])?;
    Ok(())
}

/// The git moves a rollback journaled; none when it had none (or an older one's row).
pub fn moves_of(conn: &Connection, rollback_id: i64) -> Result<Vec<Move>> {
    let moves = conn
        .prepare_cached("SELECT git_moves FROM rollbacks WHERE id = ?1")?
        .query_row([rollback_id], |r| {
            crate::store::journal::decoded(r, 0, rollback_id)
        })
        .optional()?;
    Ok(moves.flatten().unwrap_or_default())
}

/// The index blobs the states name: kept by a collection as versions' blobs are.
pub fn add_referenced(conn: &Connection) -> Result<usize> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO temp.gc_referenced SELECT index_hash FROM git_states WHERE index_hash IS NOT NULL",
    )?
    .execute([])
}

/// A move in words (`git::change::words`); the index's from both indexes' entries.
pub fn words(conn: &Connection, blobs: &crate::store::blobs::BlobDir, change: &Move) -> String {
    let Move::Index { from, to } = change else {
        return crate::git::change::words(change);
    };
    let bytes = |at: &Option<IndexAt>| match at {
        None => Some(Vec::new()),
        Some(at) => crate::store::read_blob(conn, blobs, at.hash).ok(),
    };
    let (Some(before), Some(after)) = (bytes(from), bytes(to)) else {
        return crate::git::change::words(change);
    };
    match staged(&before, &after) {
        Some(s) => crate::git::change::index_words(s.staged, s.removed),
        None => crate::git::change::words(change),
    }
}

/// How `now` (an index with entries digest `digest`) differs from the latest recorded index:
/// `before`, or its stored bytes when not given; `None` when it does not, or there is none.
fn staged_since(
    conn: &Connection,
    blobs: &crate::store::blobs::BlobDir,
    now: &[u8],
    digest: Hash,
    before: Option<&[u8]>,
) -> Result<Option<Staged>> {
    let latest = at(conn, i64::MAX)?.and_then(|row| row.state.index);
    let Some(latest) = latest.filter(|l| l.digest != digest) else {
        return Ok(None);
    };
    let read;
    let before = match before {
        Some(bytes) => bytes,
        None => {
            let Ok(bytes) = crate::store::read_blob(conn, blobs, latest.hash) else {
                return Ok(None);
            };
            read = bytes;
            &read
        }
    };
    Ok(staged(before, now))
}

/// The staged counts of the one index change recorded in `from < seq <= to` (every change is
/// counted when recorded, but the first state's); `None` when there were several.
fn staged_between(conn: &Connection, from: i64, to: i64) -> Result<Option<Staged>> {
    let (changes, staged, removed): (i64, Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT count(*), max(index_staged), max(index_removed) FROM git_states
              WHERE seq > ?1 AND seq <= ?2 AND index_staged IS NOT NULL",
        )?
        .query_row([from, to], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(match (changes, staged, removed) {
        (1, Some(staged), Some(removed)) => Some(Staged {
            staged: staged as usize,
            removed: removed as usize,
        }),
        _ => None,
    })
}

/// What moved in git from the boundary `from` to `to` (`None`: now), in words.
pub fn moved_between(
    conn: &Connection,
    blobs: &crate::store::blobs::BlobDir,
    from: i64,
    to: Option<i64>,
) -> Result<Vec<String>> {
    let (Some(before), Some(after)) = (at(conn, from)?, at(conn, to.unwrap_or(i64::MAX))?) else {
        return Ok(Vec::new());
    };
    let moves = crate::git::change::between(&before.state, &after.state);
    let mut said = Vec::with_capacity(moves.len());
    for change in &moves {
        let counted = match change {
            Move::Index { .. } => staged_between(conn, from, to.unwrap_or(i64::MAX))?,
            _ => None,
        };
        said.push(match counted {
            Some(s) => crate::git::change::index_words(s.staged, s.removed),
            None => words(conn, blobs, change),
        });
    }
    Ok(said)
}

/// How the index `now` differs from `before` (empty bytes: no index); `None` when either
/// does not read.
fn staged(before: &[u8], now: &[u8]) -> Option<Staged> {
    fn entries(bytes: &[u8]) -> Option<Vec<crate::git::index::Entry<'_>>> {
        if bytes.is_empty() {
            Some(Vec::new())
        } else {
            crate::git::index::entries(bytes)
        }
    }
    let (staged, removed) = crate::git::index::compare(&entries(before)?, &entries(now)?);
    Some(Staged { staged, removed })
}
