//! What the history says: the changes of a turn (its paths' state before and after it, with
//! renames paired), per-path history, text diffs between versions, the workspace at a time,
//! (`content`) what a path held at a point, and (`blame`) which version introduced each line.

pub mod blame;
pub(crate) mod content;
pub(crate) mod counts;
mod renames;

use std::collections::{BTreeMap, btree_map};

use renames::pair_renames;

use rusqlite::Connection;

use crate::model::{Content, Decided, Origin, State, format_time};
use crate::paths::RelPath;
use crate::store::blobs::BlobDir;
use crate::store::sql::{self, TurnRow, VersionRow};
use crate::store::{journal, read_blob};

crate::model::named_enum! {
    /// What a turn did to a path; in answers, its `name`.
    pub enum ChangeKind ("a kind of change") {
        Added = 0 => "added",
        Modified = 1 => "modified",
        Deleted = 2 => "deleted",
        Renamed = 3 => "renamed",
    }
}

/// One path a turn changed: its state when the turn started and when it ended.
#[derive(Debug, Clone)]
pub struct Change {
    pub path: RelPath,
    /// For a rename: where it came from.
    pub from: Option<RelPath>,
    pub kind: ChangeKind,
    pub before: State,
    pub after: State,
    /// Some of the path's versions in the turn were made while turns of other sessions were
    /// open too (origin `ambiguous`): each of those turns lists the change.
    pub ambiguous: bool,
    /// How the owner of the path's latest version in the turn was decided.
    pub decided: Option<Decided>,
    /// For a deletion: the last state the path had before it went (an edit, then `mv`).
    last_present: Option<State>,
}

#[derive(Debug, Default, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub added: usize,
    pub modified: usize,
    pub deleted: usize,
    pub renamed: usize,
    /// Changes marked `ambiguous`, whatever their kind (counted in the four above too).
    pub ambiguous: usize,
}

impl Counts {
    pub fn of(changes: &[Change]) -> Self {
        let mut counts = Self::default();
        for change in changes {
            match change.kind {
                ChangeKind::Added => counts.added += 1,
                ChangeKind::Modified => counts.modified += 1,
                ChangeKind::Deleted => counts.deleted += 1,
                ChangeKind::Renamed => counts.renamed += 1,
            }
            counts.ambiguous += usize::from(change.ambiguous);
        }
        counts
    }
}

/// A path's latest version in a turn, and the one present before it when there was one.
struct LastInTurn {
    path_id: i64,
    state: State,
    present: Option<State>,
    ambiguous: bool,
    decided: Option<Decided>,
}

/// The net changes of a turn: paths whose state at its end differs from its start. The
/// versions written while turns of several sessions were open (origin `ambiguous`) count
/// in each of those turns, marked.
pub fn turn_changes(conn: &Connection, turn: &TurnRow) -> rusqlite::Result<Vec<Change>> {
    net_changes(conn, sql::turn_versions(conn, turn)?, turn.start_seq)
}

/// What changed between two points of the record (sequence numbers, `from` before `to`): each
/// path's state at `to` against its state at `from`.
pub fn changes_between(conn: &Connection, from: i64, to: i64) -> rusqlite::Result<Vec<Change>> {
    net_changes(
        conn,
        crate::store::timeline::range_versions(conn, from, to)?,
        from,
    )
}

/// The net changes of some versions (oldest first, each with its path's id) against the
/// state at `start_seq`: what a turn, or a run of writes outside any turn, changed.
pub fn net_changes(
    conn: &Connection,
    versions: Vec<(i64, crate::store::sql::VersionRow)>,
    start_seq: i64,
) -> rusqlite::Result<Vec<Change>> {
    let mut last: BTreeMap<RelPath, LastInTurn> = BTreeMap::new();
    for (path_id, version) in versions {
        let ambiguous = version.origin == Origin::Ambiguous;
        match last.entry(version.path) {
            btree_map::Entry::Vacant(slot) => {
                slot.insert(LastInTurn {
                    path_id,
                    state: version.state,
                    present: None,
                    ambiguous,
                    decided: version.decided,
                });
            }
            btree_map::Entry::Occupied(mut slot) => {
                let slot = slot.get_mut();
                slot.ambiguous |= ambiguous;
                slot.decided = version.decided;
                let earlier = std::mem::replace(&mut slot.state, version.state);
                if earlier.is_present() {
                    slot.present = Some(earlier);
                }
            }
        }
    }
    let mut changes = Vec::new();
    for (path, last) in last {
        let LastInTurn {
            path_id,
            state: after,
            present,
            ambiguous,
            decided,
        } = last;
        let last_present = if after.is_present() { None } else { present };
        let before = sql::state_at(conn, path_id, start_seq)?;
        let kind = match (before.is_present(), after.is_present()) {
            (false, true) => ChangeKind::Added,
            (true, false) => ChangeKind::Deleted,
            (true, true) if before.is_dir() != after.is_dir() => {
                // A file (or symlink) replaced by a directory, or the other way round, is what
                // it is: the one deleted, the other added (as git lists it).
                changes.push(Change {
                    path: path.clone(),
                    from: None,
                    kind: ChangeKind::Deleted,
                    before: before.clone(),
                    after: State::Absent,
                    ambiguous,
                    decided,
                    last_present: None,
                });
                changes.push(Change {
                    path,
                    from: None,
                    kind: ChangeKind::Added,
                    before: State::Absent,
                    after,
                    ambiguous,
                    decided,
                    last_present: None,
                });
                continue;
            }
            (true, true) if before != after => ChangeKind::Modified,
            _ => continue,
        };
        changes.push(Change {
            path,
            from: None,
            kind,
            before,
            after,
            ambiguous,
            decided,
            last_present,
        });
    }
    Ok(pair_renames(changes))
}

/// One recorded version of a path, with the turn that made it (none for a version made
/// outside any turn).
#[derive(Debug, Clone)]
pub struct PathVersion {
    pub version: VersionRow,
    pub turn: Option<TurnRow>,
    /// For a version a rollback wrote: the sequence number the rollback went to, whose state
    /// of the path it brought back (unless it wrote new content: a hunk's revert).
    pub restores: Option<i64>,
}

/// Every recorded version of a path, oldest first (empty: never recorded).
pub fn path_versions(conn: &Connection, path: &RelPath) -> rusqlite::Result<Vec<PathVersion>> {
    let rows = crate::store::path_versions::with_turns(conn, path)?;
    Ok(rows
        .into_iter()
        .map(|(version, turn, restores)| PathVersion {
            version,
            turn,
            restores,
        })
        .collect())
}

pub use crate::store::path_versions::HistoryRow;

/// Every recorded version of a path as its history answers it, oldest first (empty: never
/// recorded).
pub fn path_history(conn: &Connection, path: &RelPath) -> rusqlite::Result<Vec<HistoryRow>> {
    crate::store::path_versions::for_history(conn, path)
}

/// How much the index holds: the paths tracked now by kind, the bytes of every stored blob
/// (the content, compressed), and the latest sequence number.
#[derive(Debug, Clone, Copy)]
pub struct Totals {
    pub tracked: crate::store::size::Tracked,
    pub store_bytes: i64,
    pub latest_seq: i64,
}

pub fn totals(conn: &Connection) -> rusqlite::Result<Totals> {
    Ok(Totals {
        tracked: crate::store::size::tracked(conn)?,
        store_bytes: crate::store::size::store_bytes(conn)?,
        latest_seq: sql::latest_seq(conn)?,
    })
}

/// A time before the record of the workspace begins: what the workspace held then is
/// unknown, not empty.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "nothing is known of the workspace at {at}: its history begins at {begins}, when filewatchd first indexed it"
)]
pub struct BeforeHistory {
    pub at: String,
    pub begins: String,
}

/// The latest sequence number recorded at or before `at_ms`, or `BeforeHistory` (an answer,
/// not a failure of the index) when the record of the workspace begins after it.
pub fn seq_at_time(conn: &Connection, at_ms: i64) -> rusqlite::Result<Result<i64, BeforeHistory>> {
    match journal::history_begins(conn)? {
        Some(begins) if at_ms < begins => Ok(Err(BeforeHistory {
            at: format_time(at_ms),
            begins: format_time(begins),
        })),
        // Unmarked only before the first start-up finished, when no request is served.
        _ => Ok(Ok(journal::seq_at_time(conn, at_ms)?)),
    }
}

/// What `?diff=true` says about one change.
pub enum Diff {
    Text(String),
    Binary,
    TooLarge,
    /// Not a file on either side (directory, symlink): nothing to diff.
    None,
}

/// A unified diff between the two sides of a change, for text files.
pub fn diff(conn: &Connection, blobs: &BlobDir, change: &Change) -> Diff {
    let side = |state: &State| -> Result<Option<Vec<u8>>, Diff> {
        match state {
            State::File(f) => match f.content {
                Content::Stored(hash) => read_blob(conn, blobs, hash).map(Some).map_err(|_| Diff::Binary),
                Content::TooLarge(_) => Err(Diff::TooLarge),
                Content::Unreadable => Err(Diff::None),
            },
            State::Absent => Ok(Some(Vec::new())),
            _ => Err(Diff::None),
        }
    };
    let (old, new) = match (side(&change.before), side(&change.after)) {
        (Ok(Some(old)), Ok(Some(new))) => (old, new),
        (Err(reason), _) | (_, Err(reason)) => return reason,
        _ => return Diff::None,
    };
    let (Ok(old), Ok(new)) = (String::from_utf8(old), String::from_utf8(new)) else {
        return Diff::Binary;
    };
    if old.contains('\0') || new.contains('\0') {
        return Diff::Binary;
    }
    let from = change.from.as_ref().unwrap_or(&change.path);
    let text = similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{from}"), &format!("b/{}", change.path))
        .to_string();
    Diff::Text(text)
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
