//! The timeline: the turns, undos, redos, rollbacks, time rollbacks and restores
//! of one session (with the history it inherits from a fork) or of every session, in time
//! order, newest first, a page at a time; and between them the writes outside any turn
//! (`outside`), which every timeline shows since they act on the whole workspace.
//!
//! A page is chosen from the turns' and rollbacks' rows alone (times and numbers); only the
//! entries on it get their changes (a turn's net changes, or only its counts, stored when it
//! ended, when the paths are not asked for)
//! and their stored answers (a rollback's actions). `undone` marks the turns undone.

mod outside;
mod undone;

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;

use crate::history::{self, Change, Counts};
use crate::model::RollbackKind;
use crate::sessions::{self, Lineage, turns::LookupError};
use crate::store::briefs;
use crate::store::journal::RollbackRow;
use crate::store::sql::TurnRow;
use crate::store::timeline::{self as sql, OriginSpan};

pub use outside::{OutsideEntry, OutsideKind};

/// Pages hold at most this many entries.
pub const PAGE_MAX: usize = 1000;

/// Whose timeline.
#[derive(Debug, Clone)]
pub enum Scope {
    All,
    Session(String),
}

/// What a page asks for.
#[derive(Debug, Clone)]
pub struct Query {
    pub scope: Scope,
    /// Only entries at or after this time (ms).
    pub since_ms: Option<i64>,
    /// Only entries older than this one (the previous page's `next`).
    pub before: Option<Cursor>,
    pub limit: usize,
    /// The turns' changes path by path; without, a turn's counts are read where stored.
    pub with_paths: bool,
}

/// An entry's place in the timeline: its time, then turns before rollbacks before writes
/// outside any turn, then its id (a run's is its last version's seq).
/// Written as `<ms>.<0 turn | 1 rollback | 2 outside>.<id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    time_ms: i64,
    rank: u8,
    id: i64,
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.time_ms, self.rank, self.id)
    }
}

impl std::str::FromStr for Cursor {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a timeline cursor (a `next_before` of an earlier page)");
        let mut parts = text.split('.');
        let mut next = || parts.next().ok_or_else(bad);
        let time_ms = next()?.parse().map_err(|_| bad())?;
        let rank = next()?.parse().ok().filter(|r| *r <= 2).ok_or_else(bad)?;
        let id = next()?.parse().map_err(|_| bad())?;
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Self { time_ms, rank, id })
    }
}

/// What a rollback-like entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RollbackEntryKind {
    Undo,
    Redo,
    /// A rollback of the whole workspace to a turn boundary.
    Rollback,
    /// A rollback of the whole workspace to a time.
    TimeRollback,
    /// A rollback (to a boundary, a time or a sequence number) restricted to some paths.
    Restore,
}

impl RollbackEntryKind {
    pub fn of(rollback: &RollbackRow) -> Self {
        match rollback.kind {
            RollbackKind::Undo => Self::Undo,
            RollbackKind::Redo => Self::Redo,
            RollbackKind::Rollback if !rollback.whole() => Self::Restore,
            RollbackKind::Rollback if rollback.session_id.is_none() => Self::TimeRollback,
            RollbackKind::Rollback => Self::Rollback,
        }
    }
}

pub struct TurnEntry {
    pub cursor: Cursor,
    pub turn: TurnRow,
    pub counts: Counts,
    /// Its net changes, when the query asked for them (`with_paths`).
    pub changes: Vec<Change>,
    pub undone: bool,
    /// Undone only in part: its paths the undo skipped (a conflict) or kept (not empty).
    pub kept: Vec<String>,
}

pub enum Entry {
    Turn(TurnEntry),
    /// A rollback, with its stored answer (`outcome`) when the query asked for paths.
    Rollback(Cursor, Box<RollbackRow>),
    Outside(OutsideEntry),
}

pub struct Page {
    /// Newest first.
    pub entries: Vec<Entry>,
    /// Where the next (older) page starts, when there is one.
    pub next: Option<Cursor>,
}

/// What the page is chosen from: rows, and which turns are undone.
struct Rows {
    turns: Vec<TurnRow>,
    rollbacks: Vec<RollbackRow>,
    /// The undone turns, each with the rollback that took it out of effect.
    undone: HashMap<i64, i64>,
    outside: Vec<OriginSpan>,
}

/// One page of the timeline. An unknown session is a `LookupError`.
pub fn page(conn: &Connection, query: &Query) -> Result<Page, LookupError> {
    let rows = match &query.scope {
        Scope::Session(name) => of_session(conn, &sessions::named(conn, name)?)?,
        Scope::All => of_all(conn)?,
    };
    let mut placed = place(&rows);
    placed.retain(|(at, _)| {
        query.since_ms.is_none_or(|since| at.time_ms >= since)
            && query.before.is_none_or(|before| *at < before)
    });
    placed.sort_unstable_by_key(|(at, _)| std::cmp::Reverse(*at));
    let limit = query.limit.clamp(1, PAGE_MAX);
    let next = (placed.len() > limit).then(|| placed[limit - 1].0);
    placed.truncate(limit);
    let Rows {
        turns,
        rollbacks,
        undone,
        outside,
    } = rows;
    let mut entries = Vec::with_capacity(placed.len());
    for (at, i) in placed {
        entries.push(match at.rank {
            0 => {
                let undone_by = undone
                    .get(&turns[i].id)
                    .and_then(|id| rollbacks.iter().find(|r| r.id == *id));
                Entry::Turn(turn_entry(conn, at, &turns[i], undone_by, query.with_paths)?)
            }
            1 => Entry::Rollback(
                at,
                Box::new(rollback_entry(conn, &rollbacks[i], query.with_paths)?),
            ),
            _ => Entry::Outside(outside::entry(conn, at, &outside[i])?),
        });
    }
    Ok(Page { entries, next })
}

/// Every row's place, with its index among the rows of its kind.
fn place(rows: &Rows) -> Vec<(Cursor, usize)> {
    let turns = rows.turns.iter().map(|t| cursor(t.started_at, 0, t.id));
    let rollbacks = rows.rollbacks.iter().map(|r| cursor(r.created_at, 1, r.id));
    let outside = rows.outside.iter().map(|s| cursor(s.time_ms, 2, s.last_seq));
    let numbered = |places: Vec<Cursor>| places.into_iter().enumerate().map(|(i, at)| (at, i));
    let mut placed: Vec<(Cursor, usize)> = numbered(turns.collect()).collect();
    placed.extend(numbered(rollbacks.collect()));
    placed.extend(numbered(outside.collect()));
    placed
}

fn cursor(time_ms: i64, rank: u8, id: i64) -> Cursor {
    Cursor { time_ms, rank, id }
}

fn turn_entry(
    conn: &Connection,
    at: Cursor,
    turn: &TurnRow,
    undone_by: Option<&RollbackRow>,
    with_paths: bool,
) -> rusqlite::Result<TurnEntry> {
    let (counts, changes) = if with_paths {
        let changes = history::turn_changes(conn, turn)?;
        (Counts::of(&changes), changes)
    } else {
        let counts = history::counts::of_turns(conn, std::slice::from_ref(turn))?;
        (counts.into_iter().next().unwrap_or_default(), Vec::new())
    };
    let kept = match undone_by {
        Some(rollback) => kept_of_turn(conn, turn, rollback)?,
        None => Vec::new(),
    };
    Ok(TurnEntry {
        cursor: at,
        turn: turn.clone(),
        counts,
        changes,
        undone: undone_by.is_some(),
        kept,
    })
}

/// The paths of `turn` that `rollback`, which undid it, skipped or kept: read from its stored
/// answer only when its brief counts any.
fn kept_of_turn(conn: &Connection, turn: &TurnRow, rollback: &RollbackRow) -> rusqlite::Result<Vec<String>> {
    if rollback
        .brief
        .as_ref()
        .is_none_or(|b| b.counts.skipped + b.counts.kept == 0)
    {
        return Ok(Vec::new());
    }
    let Some(outcome) = sql::rollback_outcome(conn, rollback.id)? else {
        return Ok(Vec::new());
    };
    let left: HashSet<&str> = outcome
        .skipped
        .iter()
        .chain(&outcome.kept)
        .map(|line| line.path.as_str())
        .collect();
    let changes = history::turn_changes(conn, turn)?;
    Ok(changes
        .iter()
        .map(|c| c.path.to_text())
        .filter(|path| left.contains(path.as_str()))
        .collect())
}

/// A rollback of the page, with its stored answer when the paths are asked for.
fn rollback_entry(
    conn: &Connection,
    rollback: &RollbackRow,
    with_paths: bool,
) -> rusqlite::Result<RollbackRow> {
    let mut rollback = rollback.clone();
    if with_paths {
        rollback.outcome = sql::rollback_outcome(conn, rollback.id)?;
    }
    Ok(rollback)
}

/// A session's timeline: its turns with those it inherits, its own rollbacks with its
/// ancestors' made before it forked, and the rollbacks of no session (time rollbacks and
/// restores, which act on the whole workspace).
fn of_session(conn: &Connection, lineage: &Lineage) -> rusqlite::Result<Rows> {
    let turns = lineage.turns(conn)?;
    let rollbacks: Vec<RollbackRow> = briefs::all(conn)?
        .into_iter()
        .filter(|r| r.session_id.is_none() || lineage.owns(r.session_id, r.from_seq))
        .collect();
    let undone = undone::undone(&turns, &rollbacks.iter().collect::<Vec<_>>());
    Ok(Rows {
        turns,
        rollbacks,
        undone,
        outside: outside::spans(conn)?,
    })
}

/// Every session's turns (each once, under its own session) and every rollback; a turn is
/// undone as its own session's history has it (with the rollbacks of no session, which act on
/// every session's turns).
fn of_all(conn: &Connection) -> rusqlite::Result<Rows> {
    let rollbacks = briefs::all(conn)?;
    let mut undone = HashMap::new();
    for session in sessions::list(conn)? {
        let lineage = Lineage::of(conn, session.id)?;
        let turns = lineage.turns(conn)?;
        let own: Vec<&RollbackRow> = rollbacks
            .iter()
            .filter(|r| r.session_id.is_none() || lineage.owns(r.session_id, r.from_seq))
            .collect();
        let marked = undone::undone(&turns, &own);
        let of_this = turns.iter().filter(|t| t.session_id == session.id);
        undone.extend(of_this.filter_map(|t| Some((t.id, *marked.get(&t.id)?))));
    }
    Ok(Rows {
        turns: sql::all_turns(conn)?,
        rollbacks,
        undone,
        outside: outside::spans(conn)?,
    })
}

#[cfg(test)]
mod tests {
    use super::Cursor;

    #[test]
    fn cursors_round_trip_and_order_by_time_then_kind_then_id() {
        let turn: Cursor = "1700000000000.0.12".parse().expect("cursor");
        assert_eq!(turn.to_string(), "1700000000000.0.12");
        let rollback: Cursor = "1700000000000.1.3".parse().expect("cursor");
        assert!(turn < rollback);
        let outside: Cursor = "1700000000000.2.40".parse().expect("cursor");
        assert!(rollback < outside);
        for bad in ["", "1.0", "1.3.3", "x.0.1", "1.0.1.4"] {
            assert!(bad.parse::<Cursor>().is_err(), "{bad:?}");
        }
    }
}
