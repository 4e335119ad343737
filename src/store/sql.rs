//! Every SQL statement of filewatchd: one small function per statement, rows into types.

use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use crate::model::{Content, Decided, FileState, Hash, Kind, Origin, StatKey, State};
use crate::paths::RelPath;
use crate::store::blobs::{Codec, NewBlob};

pub type Result<T> = rusqlite::Result<T>;

/// The latest recorded state of a path present on disk, with its stat cache entry.
#[derive(Debug, Clone)]
pub struct Latest {
    pub path_id: i64,
    pub seq: i64,
    pub state: State,
    pub stat: StatKey,
    pub checked_ns: i64,
}

/// One recorded version, as history shows it.
#[derive(Debug, Clone)]
pub struct VersionRow {
    pub seq: i64,
    pub path: RelPath,
    pub state: State,
    pub origin: Origin,
    pub recorded_at: i64,
    /// How its owner was decided (schema 17 on).
    pub decided: Option<Decided>,
}

#[derive(Debug, Clone)]
pub struct SessionRow {
    pub id: i64,
    pub name: String,
    pub parent: Option<String>,
    pub fork_turn: Option<i64>,
    pub created_at: i64,
    pub turns: i64,
    pub open_turn: Option<i64>,
    /// The latest turn start, turn end or rollback of the session (its creation before any).
    pub last_activity: i64,
    /// The agent whose hooks drive it, when they said (`claude-code`, ...).
    pub agent: Option<String>,
    /// The label of its first own turn: the first prompt, for a session driven by hooks.
    pub first_label: Option<String>,
}

#[derive(Debug, Clone)]
pub struct TurnRow {
    pub id: i64,
    pub session_id: i64,
    pub session: String,
    pub number: i64,
    pub turn_ref: Option<String>,
    pub label: Option<String>,
    pub start_seq: i64,
    pub end_seq: Option<i64>,
    pub started_at: i64,
    pub ended_at: Option<i64>,
}

pub(crate) const VERSION_COLUMNS: &str =
    "v.kind, v.hash, v.size, v.executable, v.link_target, v.too_large, v.mode";
/// How many columns `VERSION_COLUMNS` is.
pub(crate) const VERSION_COLUMN_COUNT: usize = 7;
/// The first column after those `version_from_row` reads: `v.seq, p.path, v.origin,
/// v.recorded_at`, the version columns, `v.decided`.
pub(crate) const AFTER_VERSION_ROW: usize = 5 + VERSION_COLUMN_COUNT;

/// Decodes the version columns starting at `at` (see `VERSION_COLUMNS`). A file version
/// without a hash is a file the daemon could not read (`FileState::unreadable`); one without
/// a mode was recorded before permission bits were (only its executable bit is known).
pub(crate) fn state_at_column(row: &Row<'_>, at: usize) -> Result<State> {
    let kind: i64 = row.get(at)?;
    let state = match Kind::from_i64(kind) {
        Some(Kind::File) => {
            let hash: Option<Vec<u8>> = row.get(at + 1)?;
            let size = u64::try_from(row.get::<_, i64>(at + 2)?).unwrap_or(0);
            let executable = row.get(at + 3)?;
            let mode: Option<u16> = row.get(at + 6)?;
            let content = match hash.as_deref() {
                None => Content::Unreadable,
                Some(bytes) => {
                    let hash = Hash::from_slice(bytes).unwrap_or(Hash([0; 32]));
                    if row.get(at + 5)? {
                        Content::TooLarge(hash)
                    } else {
                        Content::Stored(hash)
                    }
                }
            };
            State::File(FileState {
                content,
                size,
                executable,
                mode,
            })
        }
        Some(Kind::Symlink) => State::Symlink {
            target: row.get(at + 4)?,
        },
        Some(Kind::Dir) => State::Dir,
        Some(Kind::Untracked) => State::Untracked,
        Some(Kind::Absent) | None => State::Absent,
    };
    Ok(state)
}

pub(super) fn stat_at_column(row: &Row<'_>, at: usize) -> Result<StatKey> {
    Ok(StatKey {
        dev: row.get::<_, i64>(at)? as u64,
        ino: row.get::<_, i64>(at + 1)? as u64,
        size: row.get::<_, i64>(at + 2)? as u64,
        mtime_ns: row.get(at + 3)?,
        ctime_ns: row.get(at + 4)?,
        mode: row.get(at + 5)?,
    })
}

pub fn path_id(conn: &Connection, path: &RelPath) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM paths WHERE path = ?1")?
        .query_row([path.as_bytes()], |r| r.get(0))
        .optional()
}

pub fn ensure_path(conn: &Connection, path: &RelPath) -> Result<i64> {
    if let Some(id) = path_id(conn, path)? {
        return Ok(id);
    }
    conn.prepare_cached("INSERT INTO paths (path) VALUES (?1)")?
        .execute([path.as_bytes()])?;
    Ok(conn.last_insert_rowid())
}

const LATEST_SELECT: &str = "SELECT s.path_id, s.seq, v.kind, v.hash, v.size, v.executable,
        v.link_target, v.too_large, v.mode, s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns, s.mode,
        s.checked_ns, p.path
    FROM path_state s JOIN versions v ON v.seq = s.seq JOIN paths p ON p.id = s.path_id";

fn latest_from_row(row: &Row<'_>) -> Result<(RelPath, Latest)> {
    const STAT: usize = 2 + VERSION_COLUMN_COUNT;
    let latest = Latest {
        path_id: row.get(0)?,
        seq: row.get(1)?,
        state: state_at_column(row, 2)?,
        stat: stat_at_column(row, STAT)?,
        checked_ns: row.get(STAT + 6)?,
    };
    Ok((RelPath::from_fs_bytes(row.get(STAT + 7)?), latest))
}

/// The latest state of a path that is present on disk according to the index.
pub fn latest(conn: &Connection, path: &RelPath) -> Result<Option<Latest>> {
    let sql = format!("{LATEST_SELECT} WHERE p.path = ?1");
    conn.prepare_cached(&sql)?
        .query_row([path.as_bytes()], latest_from_row)
        .optional()
        .map(|found| found.map(|(_, latest)| latest))
}

/// Every present path strictly beneath `dir`, deepest first.
pub fn present_under<C: FromIterator<(RelPath, Latest)>>(conn: &Connection, dir: &RelPath) -> Result<C> {
    let sql = format!("{LATEST_SELECT} WHERE p.path >= ?1 AND p.path < ?2 ORDER BY p.path DESC");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(children_of(dir)), latest_from_row)?;
    rows.collect()
}

/// Hands `each` every path the index believes present (strictly beneath `under` when given)
/// in `RelPath`'s order, one row at a time, so a rescan can merge them with its walk without
/// holding both lists. SQLite compares BLOBs bytewise, the shorter first on a tie, as
/// `RelPath` does (a test holds it to that).
pub fn each_present(
    conn: &Connection,
    under: Option<&RelPath>,
    mut each: impl FnMut(RelPath, Latest),
) -> Result<()> {
    let (filter, bounds) = beneath(under);
    let mut stmt = conn.prepare_cached(&format!("{LATEST_SELECT} {filter} ORDER BY p.path"))?;
    let mut rows = stmt.query(params_from_iter(bounds))?;
    while let Some(row) = rows.next()? {
        let (path, latest) = latest_from_row(row)?;
        each(path, latest);
    }
    Ok(())
}

/// The `WHERE` of a query of `paths p` limited to the paths strictly beneath `under` (none:
/// every path), with its bounds.
pub(super) fn beneath(under: Option<&RelPath>) -> (&'static str, Vec<Vec<u8>>) {
    match under {
        None => ("", Vec::new()),
        Some(dir) => ("WHERE p.path >= ?1 AND p.path < ?2", children_of(dir).to_vec()),
    }
}

/// Whether the index has ever recorded `path` or anything beneath it.
pub fn ever_recorded(conn: &Connection, path: &RelPath) -> Result<bool> {
    let [low, high] = children_of(path);
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM paths WHERE path = ?1 OR (path >= ?2 AND path < ?3))")?
        .query_row(rusqlite::params![path.as_bytes(), low, high], |r| r.get(0))
}

/// The bounds of the paths strictly beneath `dir`: from `dir/` up to, not including, `dir0`.
pub(super) fn children_of(dir: &RelPath) -> [Vec<u8>; 2] {
    let low = dir.child_prefix();
    let mut high = low.clone();
    if let Some(last) = high.last_mut() {
        *last = b'/' + 1;
    }
    [low, high]
}

/// Marks checked at `now` every racy stat-cache entry (`mtime + racy_ns >= checked`) whose
/// file was last modified before `modified_before`. Returns how many.
pub fn settle_racy(conn: &Connection, now: i64, racy_ns: i64, modified_before: i64) -> Result<usize> {
    conn.execute(
        "UPDATE path_state SET checked_ns = ?1
         WHERE mtime_ns + ?2 >= checked_ns AND mtime_ns < ?3",
        params![now, racy_ns, modified_before],
    )
}

pub fn insert_blob(conn: &Connection, blob: &NewBlob) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO blobs (hash, size, stored_size, codec, data)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        &blob.hash.0[..],
        blob.size as i64,
        blob.stored_size as i64,
        blob.codec as i64,
        blob.inline.as_deref(),
    ])?;
    Ok(())
}

/// Where a blob's bytes are: `Some(data)` inline, `None` in the blob directory.
pub fn blob_location(conn: &Connection, hash: Hash) -> Result<Option<(Codec, Option<Vec<u8>>)>> {
    conn.prepare_cached("SELECT codec, data FROM blobs WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| {
            let codec = Codec::from_i64(r.get(0)?).unwrap_or(Codec::Raw);
            Ok((codec, r.get(1)?))
        })
        .optional()
}

pub fn insert_version(
    conn: &Connection,
    path_id: i64,
    state: &State,
    origin: Origin,
    turn_id: Option<i64>,
    decided: Option<Decided>,
    now_ms: i64,
) -> Result<i64> {
    let (hash, size, executable, link, too_large) = match state {
        State::File(f) => (
            f.hash().map(|hash| hash.0.to_vec()),
            Some(f.size as i64),
            f.executable,
            None,
            f.is_too_large(),
        ),
        State::Symlink { target } => (None, None, false, Some(target.clone()), false),
        State::Dir | State::Absent | State::Untracked => (None, None, false, None, false),
    };
    let mode = match state {
        State::File(f) => f.mode,
        _ => None,
    };
    conn.prepare_cached(
        "INSERT INTO versions (path_id, kind, hash, size, executable, link_target, too_large,
                               origin, turn_id, recorded_at, mode, decided)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        path_id,
        state.kind() as i64,
        hash,
        size,
        executable,
        link,
        too_large,
        origin as i64,
        turn_id,
        now_ms,
        mode,
        decided.map(|d| d as i64)
    ])?;
    Ok(conn.last_insert_rowid())
}

pub fn set_path_state(
    conn: &Connection,
    path_id: i64,
    seq: i64,
    stat: &StatKey,
    checked_ns: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO path_state (path_id, seq, dev, ino, size, mtime_ns, ctime_ns, mode, checked_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (path_id) DO UPDATE SET seq = ?2, dev = ?3, ino = ?4, size = ?5,
             mtime_ns = ?6, ctime_ns = ?7, mode = ?8, checked_ns = ?9",
    )?
    .execute(params![
        path_id,
        seq,
        stat.dev as i64,
        stat.ino as i64,
        stat.size as i64,
        stat.mtime_ns,
        stat.ctime_ns,
        stat.mode,
        checked_ns
    ])?;
    Ok(())
}

pub fn clear_path_state(conn: &Connection, path_id: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM path_state WHERE path_id = ?1")?
        .execute([path_id])?;
    Ok(())
}

/// The latest sequence number: of a version, or of a recorded state of the repository
/// (`crate::store::git`), which takes its number from the same sequence.
pub fn latest_seq(conn: &Connection) -> Result<i64> {
    conn.prepare_cached(
        "SELECT max(coalesce((SELECT max(seq) FROM versions), 0), coalesce((SELECT max(seq) FROM git_states), 0))",
    )?
        .query_row([], |r| r.get(0))
}

/// The state of a path at a boundary: its latest version with `seq <= at`.
pub fn state_at(conn: &Connection, path_id: i64, at: i64) -> Result<State> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.path_id = ?1 AND v.seq <= ?2
         ORDER BY v.seq DESC LIMIT 1"
    );
    let found = conn
        .prepare_cached(&sql)?
        .query_row([path_id, at], |r| state_at_column(r, 0))
        .optional()?;
    Ok(found.unwrap_or(State::Absent))
}

/// The state of every path that has one at a boundary (its latest version with `seq <= at`).
pub fn states_at(conn: &Connection, at: i64) -> Result<Vec<(i64, State)>> {
    let sql = format!(
        "SELECT v.path_id, {VERSION_COLUMNS} FROM versions v
         JOIN (SELECT path_id, max(seq) AS seq FROM versions WHERE seq <= ?1 GROUP BY path_id) l
           ON l.seq = v.seq"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([at], |r| Ok((r.get(0)?, state_at_column(r, 1)?)))?;
    rows.collect()
}

pub(crate) fn version_from_row(row: &Row<'_>) -> Result<VersionRow> {
    Ok(VersionRow {
        seq: row.get(0)?,
        path: RelPath::from_fs_bytes(row.get(1)?),
        origin: Origin::from_i64(row.get(2)?).unwrap_or(Origin::Outside),
        recorded_at: row.get(3)?,
        state: state_at_column(row, 4)?,
        decided: row
            .get::<_, Option<i64>>(4 + VERSION_COLUMN_COUNT)?
            .and_then(Decided::from_i64),
    })
}

/// Every version a turn recorded, and every `ambiguous` one written while it was open
/// (`start_seq < seq <= end_seq`: turns of several sessions were open, this one among them),
/// oldest first.
pub fn turn_versions(conn: &Connection, turn: &TurnRow) -> Result<Vec<(i64, VersionRow)>> {
    let columns = format!("v.seq, p.path, v.origin, v.recorded_at, {VERSION_COLUMNS}, v.decided, v.path_id");
    let sql = format!(
        "SELECT {columns} FROM versions v JOIN paths p ON p.id = v.path_id WHERE v.turn_id = ?1
         UNION ALL
         SELECT {columns} FROM versions v JOIN paths p ON p.id = v.path_id
          WHERE v.seq > ?2 AND v.seq <= ?3 AND v.origin = ?4
         ORDER BY 1"
    );
    let end = turn.end_seq.unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(&sql)?;
    let bounds = params![turn.id, turn.start_seq, end, Origin::Ambiguous as i64];
    let rows = stmt.query_map(bounds, |r| Ok((r.get(AFTER_VERSION_ROW)?, version_from_row(r)?)))?;
    rows.collect()
}

/// Every version of one path, oldest first.
pub fn session_id(conn: &Connection, name: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM sessions WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()
}

/// A session's parent and the turn it was forked after, if it is a fork.
pub fn session_parent(conn: &Connection, session_id: i64) -> Result<Option<(i64, i64)>> {
    conn.prepare_cached("SELECT parent_id, fork_turn FROM sessions WHERE id = ?1 AND parent_id IS NOT NULL")?
        .query_row([session_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

pub fn create_fork(
    conn: &Connection,
    name: &str,
    parent_id: i64,
    fork_turn: i64,
    now_ms: i64,
) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO sessions (name, parent_id, fork_turn, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![name, parent_id, fork_turn, now_ms])?;
    Ok(conn.last_insert_rowid())
}

pub fn create_session(conn: &Connection, name: &str, now_ms: i64) -> Result<i64> {
    conn.prepare_cached("INSERT INTO sessions (name, created_at) VALUES (?1, ?2)")?
        .execute(params![name, now_ms])?;
    Ok(conn.last_insert_rowid())
}

pub(crate) const TURN_SELECT: &str = "SELECT t.id, t.session_id, s.name, t.number, t.ref, t.label,
        t.start_seq, t.end_seq, t.started_at, t.ended_at
    FROM turns t JOIN sessions s ON s.id = t.session_id";

pub(crate) fn turn_from_row(row: &Row<'_>) -> Result<TurnRow> {
    Ok(TurnRow {
        id: row.get(0)?,
        session_id: row.get(1)?,
        session: row.get(2)?,
        number: row.get(3)?,
        turn_ref: row.get(4)?,
        label: row.get(5)?,
        start_seq: row.get(6)?,
        end_seq: row.get(7)?,
        started_at: row.get(8)?,
        ended_at: row.get(9)?,
    })
}

pub fn open_turns(conn: &Connection) -> Result<Vec<TurnRow>> {
    let sql = format!("{TURN_SELECT} WHERE t.end_seq IS NULL ORDER BY t.id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], turn_from_row)?;
    rows.collect()
}

pub fn list_turns(conn: &Connection, session_id: i64) -> Result<Vec<TurnRow>> {
    let sql = format!("{TURN_SELECT} WHERE t.session_id = ?1 ORDER BY t.number");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([session_id], turn_from_row)?;
    rows.collect()
}

pub fn turn_by_number(conn: &Connection, session_id: i64, number: i64) -> Result<Option<TurnRow>> {
    let sql = format!("{TURN_SELECT} WHERE t.session_id = ?1 AND t.number = ?2");
    conn.prepare_cached(&sql)?
        .query_row([session_id, number], turn_from_row)
        .optional()
}

pub fn turn_by_id(conn: &Connection, turn_id: i64) -> Result<Option<TurnRow>> {
    let sql = format!("{TURN_SELECT} WHERE t.id = ?1");
    conn.prepare_cached(&sql)?
        .query_row([turn_id], turn_from_row)
        .optional()
}

/// The latest turn of a session carrying this ref.
pub fn turn_by_ref(conn: &Connection, session_id: i64, turn_ref: &str) -> Result<Option<TurnRow>> {
    let sql = format!("{TURN_SELECT} WHERE t.session_id = ?1 AND t.ref = ?2 ORDER BY t.number DESC LIMIT 1");
    conn.prepare_cached(&sql)?
        .query_row(params![session_id, turn_ref], turn_from_row)
        .optional()
}

/// The session's latest turn (open or not).
pub fn last_turn(conn: &Connection, session_id: i64) -> Result<Option<TurnRow>> {
    let sql = format!("{TURN_SELECT} WHERE t.session_id = ?1 ORDER BY t.number DESC LIMIT 1");
    conn.prepare_cached(&sql)?
        .query_row([session_id], turn_from_row)
        .optional()
}

pub fn insert_turn(
    conn: &Connection,
    session_id: i64,
    number: i64,
    turn_ref: Option<&str>,
    label: Option<&str>,
    start_seq: i64,
    now_ms: i64,
) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO turns (session_id, number, ref, label, start_seq, started_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![session_id, number, turn_ref, label, start_seq, now_ms])?;
    Ok(conn.last_insert_rowid())
}

pub fn set_turn_label(conn: &Connection, turn_id: i64, label: &str) -> Result<()> {
    conn.prepare_cached("UPDATE turns SET label = ?2 WHERE id = ?1")?
        .execute(params![turn_id, label])?;
    Ok(())
}

pub fn end_turn(conn: &Connection, turn_id: i64, end_seq: i64, now_ms: i64) -> Result<()> {
    conn.prepare_cached("UPDATE turns SET end_seq = ?2, ended_at = ?3 WHERE id = ?1")?
        .execute(params![turn_id, end_seq, now_ms])?;
    Ok(())
}

/// Nothing is recorded yet: the first index has not run (or found nothing).
pub fn index_is_empty(conn: &Connection) -> Result<bool> {
    conn.prepare_cached("SELECT NOT EXISTS (SELECT 1 FROM path_state)")?
        .query_row([], |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(paths: &[&[u8]]) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = crate::store::test_index(&dir.path().join("index.sqlite")).expect("index");
        let stat = StatKey {
            dev: 1,
            ino: 1,
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
            mode: 0o40755,
        };
        for path in paths {
            let id = ensure_path(&conn, &RelPath::from_fs_bytes(path.to_vec())).expect("path");
            let seq =
                insert_version(&conn, id, &State::Dir, Origin::Outside, None, None, 0).expect("version");
            set_path_state(&conn, id, seq, &stat, 0).expect("state");
        }
        (dir, conn)
    }

    fn listed(conn: &Connection, under: Option<&RelPath>) -> Vec<RelPath> {
        let mut order = Vec::new();
        each_present(conn, under, |path, _| order.push(path)).expect("read");
        order
    }

    #[test]
    fn each_present_lists_paths_in_relpath_order() {
        // Bytes on both sides of '/', a prefix before its extensions, and invalid UTF-8: a
        // rescan's merge is only right if SQLite orders them exactly as RelPath does.
        let paths: [&[u8]; 10] = [
            b"a0",
            b"a/b",
            b"a",
            b"a-b",
            b"a/b/c",
            b"a/\xff",
            b"B",
            b"\x01",
            "é".as_bytes(),
            b"a/b0",
        ];
        let (_dir, conn) = index_of(&paths);
        let mut expected: Vec<RelPath> = paths.iter().map(|p| RelPath::from_fs_bytes(p.to_vec())).collect();
        expected.sort();
        assert_eq!(listed(&conn, None), expected);

        let a = RelPath::from_fs_bytes(b"a".to_vec());
        let beneath: Vec<RelPath> = expected
            .into_iter()
            .filter(|p| p.as_bytes().starts_with(b"a/"))
            .collect();
        assert_eq!(beneath.len(), 4);
        assert_eq!(listed(&conn, Some(&a)), beneath);
    }
}
