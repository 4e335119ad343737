//! SQL of rollbacks: the durable plan (journal) and its steps, the session's chain of undos
//! and redos, and the questions the planner asks of the history.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::model::answer::{Actor, Outcome, RollbackCounts, Target};
use crate::model::{Content, FileState, Hash, Origin, RollbackKind, State};
use crate::paths::RelPath;
use crate::store::sql::{Result, VERSION_COLUMNS, state_at_column};

/// A version recorded after a boundary, with who made it.
#[derive(Debug, Clone)]
pub struct LaterVersion {
    pub seq: i64,
    pub origin: Origin,
    pub recorded_at: i64,
    /// The session of the turn (origin `turn`) or of the rollback (origin `rollback`).
    pub session_id: Option<i64>,
    pub session: Option<String>,
    pub turn: Option<i64>,
    /// The rollback that wrote it (origin `rollback`).
    pub rollback_id: Option<i64>,
    /// That rollback is a redo: the rollback it took back.
    pub redo_of: Option<i64>,
    /// How its owner was decided (schema 17 on).
    pub decided: Option<crate::model::Decided>,
}

crate::model::named_enum! {
    /// Where a rollback stands in the journal; its `name` is the `status` column (the numbers
    /// are not stored).
    pub enum Status ("a rollback status") {
        /// Journaled and not finished: the next start finishes it (recovery).
        Prepared = 0 => "prepared",
        /// Applied and recorded.
        Committed = 1 => "committed",
        /// Interrupted by a crash and finished at a start-up.
        Recovered = 2 => "recovered",
        /// Failed and putting back what it changed; the next start finishes putting back.
        Reverting = 3 => "reverting",
        /// Failed (or refused late) with everything it changed put back: it did not happen.
        Reverted = 4 => "reverted",
    }
}

/// One rollback of the journal, decoded once: a row that cannot be read is an error naming
/// it. Its stored answer can be large: the reads of many rollbacks at once (the timeline, a
/// session's listing: `store::briefs`) leave it out, and read its brief.
#[derive(Debug, Clone)]
pub struct RollbackRow {
    pub id: i64,
    pub session_id: Option<i64>,
    /// The session's name.
    pub session: Option<String>,
    pub kind: RollbackKind,
    pub target_seq: i64,
    pub from_seq: i64,
    pub position: Option<i64>,
    pub prev_position: Option<i64>,
    pub redo_of: Option<i64>,
    pub status: Status,
    pub created_at: i64,
    /// The paths it was restricted to; `None`: the whole workspace.
    pub paths: Option<Vec<String>>,
    /// `None` when no answer is stored.
    pub brief: Option<Brief>,
    /// Its temp files' tag (`restore::TempNames`); `None` for rollbacks journaled before tags.
    pub temp_tag: Option<String>,
    /// The stored answer (`None` also where the read left it out).
    pub outcome: Option<Outcome>,
}

impl RollbackRow {
    /// Restricted to no paths: the whole workspace.
    pub fn whole(&self) -> bool {
        self.paths.as_ref().is_none_or(Vec::is_empty)
    }
}

/// What the timeline and a session's listing show of a stored answer, which SQLite derives
/// from it whenever it is written (migrations 0014 and 0016): the one rule for these counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    /// The answer's `target` (`None`: the answer has none).
    pub target: Option<Target>,
    pub counts: RollbackCounts,
    pub recovery: Option<String>,
    /// Who asked for it, when not the user (`mcp`).
    pub actor: Option<Actor>,
}

/// What a new rollback row says.
#[derive(Debug, Clone)]
pub struct NewRollback<'a> {
    pub session_id: Option<i64>,
    pub op_id: Option<&'a str>,
    pub kind: RollbackKind,
    pub target_seq: i64,
    pub from_seq: i64,
    pub position: Option<i64>,
    pub prev_position: Option<i64>,
    pub redo_of: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct StepRow {
    pub ord: i64,
    pub path_id: i64,
    pub path: RelPath,
    pub current_seq: i64,
    pub current: State,
    pub target_seq: Option<i64>,
    pub target: State,
    pub done: bool,
}

/// Every path with a version after `seq`.
pub fn changed_since(conn: &Connection, seq: i64) -> Result<Vec<(i64, RelPath)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT v.path_id, p.path FROM versions v JOIN paths p ON p.id = v.path_id
         WHERE v.seq > ?1",
    )?;
    let rows = stmt.query_map([seq], |r| Ok((r.get(0)?, RelPath::from_fs_bytes(r.get(1)?))))?;
    rows.collect()
}

/// The version of a path in force at `at` (its latest with `seq <= at`), if any.
pub fn version_at(conn: &Connection, path_id: i64, at: i64) -> Result<Option<(i64, State)>> {
    let sql = format!(
        "SELECT v.seq, {VERSION_COLUMNS} FROM versions v WHERE v.path_id = ?1 AND v.seq <= ?2
         ORDER BY v.seq DESC LIMIT 1"
    );
    conn.prepare_cached(&sql)?
        .query_row([path_id, at], |r| Ok((r.get(0)?, state_at_column(r, 1)?)))
        .optional()
}

/// A path's state at `at` as a rollback sees it: its version then; or, when it
/// had none or was absent then and its next version says `untracked`, untracked (it came into
/// view later, from behind an ignore rule: what it was at `at` was never recorded).
pub fn rollback_target(conn: &Connection, path_id: i64, at: i64) -> Result<(Option<i64>, State)> {
    let then = version_at(conn, path_id, at)?;
    if let Some((seq, state)) = then.as_ref().filter(|(_, state)| *state != State::Absent) {
        return Ok((Some(*seq), state.clone()));
    }
    let next: Option<i64> = conn
        .prepare_cached("SELECT kind FROM versions WHERE path_id = ?1 AND seq > ?2 ORDER BY seq LIMIT 1")?
        .query_row([path_id, at], |r| r.get(0))
        .optional()?;
    if next == Some(crate::model::Kind::Untracked as i64) {
        return Ok((None, State::Untracked));
    }
    Ok(then.map_or((None, State::Absent), |(seq, state)| (Some(seq), state)))
}

pub fn version_state(conn: &Connection, seq: i64) -> Result<State> {
    let sql = format!("SELECT {VERSION_COLUMNS} FROM versions v WHERE v.seq = ?1");
    conn.prepare_cached(&sql)?
        .query_row([seq], |r| state_at_column(r, 0))
}

/// The versions of a path after `seq`, oldest first, with their owners.
pub fn versions_after(conn: &Connection, path_id: i64, seq: i64) -> Result<Vec<LaterVersion>> {
    let mut stmt = conn.prepare_cached(
        "SELECT v.seq, v.origin, v.recorded_at, coalesce(t.session_id, r.session_id),
                s.name, t.number, v.rollback_id, r.redo_of, v.decided
         FROM versions v
         LEFT JOIN turns t ON t.id = v.turn_id
         LEFT JOIN rollbacks r ON r.id = v.rollback_id
         LEFT JOIN sessions s ON s.id = coalesce(t.session_id, r.session_id)
         WHERE v.path_id = ?1 AND v.seq > ?2 ORDER BY v.seq",
    )?;
    let rows = stmt.query_map([path_id, seq], |r| {
        Ok(LaterVersion {
            seq: r.get(0)?,
            origin: Origin::from_i64(r.get(1)?).unwrap_or(Origin::Outside),
            recorded_at: r.get(2)?,
            session_id: r.get(3)?,
            session: r.get(4)?,
            turn: r.get(5)?,
            rollback_id: r.get(6)?,
            redo_of: r.get(7)?,
            decided: r
                .get::<_, Option<i64>>(8)?
                .and_then(crate::model::Decided::from_i64),
        })
    })?;
    rows.collect()
}

pub fn insert_rollback(conn: &Connection, new: &NewRollback<'_>, now_ms: i64) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO rollbacks (session_id, op_id, kind, target_seq, from_seq, position,
                                prev_position, redo_of, status, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'prepared', ?9)",
    )?
    .execute(params![
        new.session_id,
        new.op_id,
        new.kind.name(),
        new.target_seq,
        new.from_seq,
        new.position,
        new.prev_position,
        new.redo_of,
        now_ms
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A journaled step: its path, the version it starts from, and where it goes: a version, or
/// (`target_seq` none) a file no version holds yet (`unstored`), or absence.
pub struct NewStep<'a> {
    pub path_id: i64,
    pub current_seq: i64,
    pub target_seq: Option<i64>,
    pub unstored: Option<&'a FileState>,
}

pub fn insert_step(conn: &Connection, rollback_id: i64, ord: i64, step: &NewStep<'_>) -> Result<()> {
    let file = step.unstored.filter(|_| step.target_seq.is_none());
    let hash = file.and_then(|f| f.hash()).map(|h| h.0.to_vec());
    conn.prepare_cached(
        "INSERT INTO rollback_steps (rollback_id, ord, path_id, current_seq, target_seq,
                                     target_hash, target_size, target_executable, target_mode)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        rollback_id,
        ord,
        step.path_id,
        step.current_seq,
        step.target_seq,
        hash,
        file.map(|f| f.size as i64),
        file.map(|f| f.executable),
        file.and_then(|f| f.mode)
    ])?;
    Ok(())
}

pub fn mark_step_done(conn: &Connection, rollback_id: i64, ord: i64) -> Result<()> {
    conn.prepare_cached("UPDATE rollback_steps SET done = 1 WHERE rollback_id = ?1 AND ord = ?2")?
        .execute([rollback_id, ord])?;
    Ok(())
}

pub fn finish_rollback(conn: &Connection, id: i64, status: Status, outcome: &str, now_ms: i64) -> Result<()> {
    conn.prepare_cached("UPDATE rollbacks SET status = ?2, outcome = ?3, finished_at = ?4 WHERE id = ?1")?
        .execute(params![id, status.name(), outcome, now_ms])?;
    Ok(())
}

/// A version written by a rollback.
pub fn insert_rollback_version(
    conn: &Connection,
    path_id: i64,
    state: &State,
    rollback_id: i64,
    now_ms: i64,
) -> Result<i64> {
    let seq = crate::store::sql::insert_version(conn, path_id, state, Origin::Rollback, None, None, now_ms)?;
    conn.prepare_cached("UPDATE versions SET rollback_id = ?2 WHERE seq = ?1")?
        .execute([seq, rollback_id])?;
    Ok(seq)
}

/// A read of rollbacks, with `answer` the column of their stored answers: `outcome`, or `NULL`
/// for the reads that leave it out (`store::briefs`). `rollback_from_row` reads each row.
macro_rules! select_rollbacks {
    ($answer:literal) => {
        concat!(
            "SELECT id, session_id, (SELECT name FROM sessions s WHERE s.id = rollbacks.session_id),
                kind, target_seq, from_seq, position, prev_position, redo_of, status, created_at,
                paths, brief_target, brief_added, brief_modified, brief_deleted, brief_skipped,
                brief_kept, brief_recovery, brief_actor, temp_tag, ",
            $answer,
            " FROM rollbacks"
        )
    };
}
pub(crate) use select_rollbacks;

const ROLLBACK_SELECT: &str = select_rollbacks!("outcome");
/// The chain's walks read many rollbacks and none of their answers.
const CHAIN_SELECT: &str = select_rollbacks!("NULL");

pub(crate) fn rollback_from_row(r: &Row<'_>) -> Result<RollbackRow> {
    let id: i64 = r.get(0)?;
    let count = |i| {
        r.get::<_, Option<i64>>(i)
            .map(|n| usize::try_from(n.unwrap_or(0)).unwrap_or(0))
    };
    let brief = match r.get::<_, Option<i64>>(13)? {
        Some(_) => Some(Brief {
            target: decoded(r, 12, id)?,
            counts: RollbackCounts {
                added: count(13)?,
                modified: count(14)?,
                deleted: count(15)?,
                skipped: count(16)?,
                kept: count(17)?,
            },
            recovery: r.get(18)?,
            actor: r
                .get::<_, Option<String>>(19)?
                .map(|actor| serde_json::from_value(actor.into()).map_err(|e| unreadable(r, 19, id, &e)))
                .transpose()?,
        }),
        None => None,
    };
    Ok(RollbackRow {
        id,
        session_id: r.get(1)?,
        session: r.get(2)?,
        kind: word(r, 3, RollbackKind::from_name)?,
        target_seq: r.get(4)?,
        from_seq: r.get(5)?,
        position: r.get(6)?,
        prev_position: r.get(7)?,
        redo_of: r.get(8)?,
        status: word(r, 9, Status::from_name)?,
        created_at: r.get(10)?,
        paths: decoded(r, 11, id)?,
        brief,
        temp_tag: r.get(20)?,
        outcome: decoded(r, 21, id)?,
    })
}

/// A JSON column of rollback `id`, decoded: `None` when NULL, an error naming the row and the
/// column when it does not read as what it stores.
pub(crate) fn decoded<T: serde::de::DeserializeOwned>(
    r: &Row<'_>,
    column: usize,
    id: i64,
) -> Result<Option<T>> {
    let Some(json) = r.get::<_, Option<String>>(column)? else {
        return Ok(None);
    };
    serde_json::from_str(&json)
        .map(Some)
        .map_err(|e| unreadable(r, column, id, &e))
}

fn unreadable(r: &Row<'_>, column: usize, id: i64, error: &serde_json::Error) -> rusqlite::Error {
    let name = r.as_ref().column_name(column).unwrap_or("a column");
    let what = format!("rollback {id} of the journal: its {name} cannot be read: {error}");
    rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, what.into())
}

/// A text column holding one of the words `parse` knows; any other is a conversion failure.
pub(crate) fn word<T>(r: &Row<'_>, column: usize, parse: fn(&str) -> Option<T>) -> Result<T> {
    let text: String = r.get(column)?;
    parse(&text).ok_or_else(|| {
        let unknown = format!("unknown value {text:?} in the rollbacks table");
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, unknown.into())
    })
}

pub fn rollback_by_op(conn: &Connection, op_id: &str) -> Result<Option<RollbackRow>> {
    let sql = format!("{ROLLBACK_SELECT} WHERE op_id = ?1");
    conn.prepare_cached(&sql)?
        .query_row([op_id], rollback_from_row)
        .optional()
}

pub fn set_temp_tag(conn: &Connection, id: i64, tag: &str) -> Result<()> {
    conn.prepare_cached("UPDATE rollbacks SET temp_tag = ?2 WHERE id = ?1")?
        .execute(params![id, tag])?;
    Ok(())
}

/// A rollback failed and is putting back what it changed ('reverting'), durably before the
/// first path is touched.
pub fn set_status(conn: &Connection, id: i64, status: Status) -> Result<()> {
    conn.prepare_cached("UPDATE rollbacks SET status = ?2 WHERE id = ?1")?
        .execute(params![id, status.name()])?;
    Ok(())
}

/// Some temp files of this rollback could not be removed: the next start removes them.
pub fn set_temps_left(conn: &Connection, id: i64, left: bool) -> Result<()> {
    conn.prepare_cached("UPDATE rollbacks SET temps_left = ?2 WHERE id = ?1")?
        .execute(params![id, left])?;
    Ok(())
}

/// A rollback that did not happen frees its operation id: a retry runs it again.
pub fn forget_op_id(conn: &Connection, id: i64) -> Result<()> {
    conn.prepare_cached("UPDATE rollbacks SET op_id = NULL WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Rollbacks whose temp files are still on disk.
pub fn with_temps_left(conn: &Connection) -> Result<Vec<RollbackRow>> {
    rollbacks_where(conn, "temps_left = 1")
}

/// True when `tag` is one of our rollbacks' temp-file tags: a file so named is ours.
pub fn is_temp_tag(conn: &Connection, tag: &str) -> Result<bool> {
    conn.prepare_cached("SELECT 1 FROM rollbacks WHERE temp_tag = ?1 LIMIT 1")?
        .query_row([tag], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// Rollbacks that failed and still have paths to put back (finished at start-up).
pub fn reverting_rollbacks(conn: &Connection) -> Result<Vec<RollbackRow>> {
    rollbacks_where(conn, "status = 'reverting'")
}

/// A rollback a crash interrupted, a failed one still putting back, or temp files left.
pub fn needs_recovery(conn: &Connection) -> Result<bool> {
    conn.prepare_cached(
        "SELECT 1 FROM rollbacks WHERE status IN ('prepared', 'reverting') OR temps_left = 1 LIMIT 1",
    )?
    .query_row([], |_| Ok(()))
    .optional()
    .map(|found| found.is_some())
}

/// Every rollback whose row meets `condition` (SQL over the table's columns), oldest first.
fn rollbacks_where(conn: &Connection, condition: &str) -> Result<Vec<RollbackRow>> {
    let sql = format!("{ROLLBACK_SELECT} WHERE {condition} ORDER BY id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], rollback_from_row)?;
    rows.collect()
}

pub fn prepared_rollbacks(conn: &Connection) -> Result<Vec<RollbackRow>> {
    rollbacks_where(conn, "status = 'prepared'")
}

/// The session's applied rollbacks made at or after `since_seq`, oldest first (`None`: the
/// time rollbacks, which belong to no session).
pub fn session_chain(conn: &Connection, session_id: Option<i64>, since_seq: i64) -> Result<Vec<RollbackRow>> {
    session_chain_between(conn, session_id, since_seq, i64::MAX)
}

/// The session's applied rollbacks made between two sequence numbers, oldest first.
pub fn session_chain_between(
    conn: &Connection,
    session_id: Option<i64>,
    since_seq: i64,
    until_seq: i64,
) -> Result<Vec<RollbackRow>> {
    let sql = format!(
        "{CHAIN_SELECT} WHERE session_id IS ?1 AND from_seq >= ?2 AND from_seq <= ?3
           AND status IN ('committed', 'recovered') ORDER BY id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![session_id, since_seq, until_seq], rollback_from_row)?;
    rows.collect()
}

/// One path a rollback changed: the first version the rollback wrote for it.
#[derive(Debug, Clone)]
pub struct ChangedBy {
    pub path_id: i64,
    pub path: RelPath,
    pub written_seq: i64,
}

/// The paths a rollback changed, in path order: those it wrote a version for. (Its journal
/// steps say the same, but retention removes the steps whose versions it collapses; the
/// rollback's own versions come after every cutoff a pending redo allows.)
pub fn changed_by(conn: &Connection, rollback_id: i64) -> Result<Vec<ChangedBy>> {
    let mut stmt = conn.prepare_cached(
        "SELECT v.path_id, p.path, min(v.seq) FROM versions v JOIN paths p ON p.id = v.path_id
         WHERE v.rollback_id = ?1 GROUP BY v.path_id ORDER BY p.path",
    )?;
    let rows = stmt.query_map([rollback_id], |r| {
        Ok(ChangedBy {
            path_id: r.get(0)?,
            path: RelPath::from_fs_bytes(r.get(1)?),
            written_seq: r.get(2)?,
        })
    })?;
    rows.collect()
}

/// A rollback and the applied ones of its chain (its session's, or the time rollbacks) made
/// after it: when it is the one a redo names, every later one was cancelled by a redo.
pub fn chain_from(conn: &Connection, rollback_id: i64) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM rollbacks WHERE id >= ?1
           AND session_id IS (SELECT session_id FROM rollbacks WHERE id = ?1)
           AND status IN ('committed', 'recovered') ORDER BY id",
    )?;
    let rows = stmt.query_map([rollback_id], |r| r.get(0))?;
    rows.collect()
}

/// Meta key: when the first index finished, in ms. Before it nothing is known of the workspace.
const HISTORY_BEGINS: &str = "history_begins";

/// When the record of the workspace begins; `None` until the first start-up has marked it.
pub fn history_begins(conn: &Connection) -> Result<Option<i64>> {
    crate::store::meta::meta(conn, HISTORY_BEGINS)
}

/// Marks, once, when the record begins: the last version of the first index (the `offline`
/// versions before any other origin), or `now_ms` when it found nothing. An index made before
/// the mark existed gets the same, so no time part-way through its first index passes.
pub fn mark_history_begins(conn: &Connection, now_ms: i64) -> Result<()> {
    if history_begins(conn)?.is_some() {
        return Ok(());
    }
    let offline = Origin::Offline as i64;
    let first_index_ends: Option<i64> = conn.query_row(
        "SELECT max(recorded_at) FROM versions WHERE origin = ?1
            AND seq < coalesce((SELECT min(seq) FROM versions WHERE origin <> ?1), 1 << 62)",
        [offline],
        |r| r.get(0),
    )?;
    crate::store::meta::set_meta(conn, HISTORY_BEGINS, first_index_ends.unwrap_or(now_ms))
}

/// The latest sequence number recorded at or before a time.
pub fn seq_at_time(conn: &Connection, at_ms: i64) -> Result<i64> {
    conn.prepare_cached("SELECT coalesce(max(seq), 0) FROM versions WHERE recorded_at <= ?1")?
        .query_row([at_ms], |r| r.get(0))
}

/// The latest rollback that recovery finished at a start-up.
pub fn last_recovered(conn: &Connection) -> Result<Option<RollbackRow>> {
    let sql = format!("{ROLLBACK_SELECT} WHERE status = 'recovered' ORDER BY finished_at DESC LIMIT 1");
    conn.prepare_cached(&sql)?
        .query_row([], rollback_from_row)
        .optional()
}

pub fn steps(conn: &Connection, rollback_id: i64) -> Result<Vec<StepRow>> {
    let sql = "SELECT s.ord, s.path_id, p.path, s.current_seq, s.target_seq, s.done,
                      s.target_hash, s.target_size, s.target_executable, s.target_mode
               FROM rollback_steps s JOIN paths p ON p.id = s.path_id
               WHERE s.rollback_id = ?1 ORDER BY s.ord";
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([rollback_id], |r| {
        Ok(StepRow {
            ord: r.get(0)?,
            path_id: r.get(1)?,
            path: RelPath::from_fs_bytes(r.get(2)?),
            current_seq: r.get(3)?,
            current: State::Absent,
            target_seq: r.get(4)?,
            target: unstored_target(r)?,
            done: r.get(5)?,
        })
    })?;
    let mut out = rows.collect::<Result<Vec<_>>>()?;
    for step in &mut out {
        step.current = version_state(conn, step.current_seq)?;
        if let Some(seq) = step.target_seq {
            step.target = version_state(conn, seq)?;
        }
    }
    Ok(out)
}

/// A step's target file that no version holds (schema 18); absent when there is none.
fn unstored_target(r: &rusqlite::Row<'_>) -> Result<State> {
    let Some(hash) = r.get::<_, Option<Vec<u8>>>(6)? else {
        return Ok(State::Absent);
    };
    let hash: [u8; 32] = hash.try_into().map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            6,
            rusqlite::types::Type::Blob,
            "a step's target hash is not 32 bytes".into(),
        )
    })?;
    Ok(State::File(FileState {
        content: Content::Stored(Hash(hash)),
        size: r.get::<_, Option<i64>>(7)?.unwrap_or(0) as u64,
        executable: r.get::<_, Option<bool>>(8)?.unwrap_or(false),
        mode: r.get(9)?,
    }))
}
