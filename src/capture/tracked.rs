//! The tracked set over time: a path an ignore rule hides gets a version of state
//! `untracked`, and so does a path coming into view that history has as absent or has never
//! seen, right before its first version. A rollback to a moment when a path was untracked
//! leaves the path alone: what it held then was never recorded, and "absent" would delete it.

use rusqlite::Connection;

use super::Context;
use crate::model::{Origin, State, now_ms};
use crate::paths::RelPath;
use crate::store::{journal, sql};
use crate::watch::filter::IgnoreRules;

/// Ignore files a batch saw change: the rules as they were before the first of them, and the
/// directories to rescan. A path a rescan finds that the old rules hid comes into view (found,
/// untracked until now); any other was written now, by whoever writes now.
#[derive(Debug)]
pub struct RulesChanged {
    pub before: IgnoreRules,
    pub dirs: Vec<Option<RelPath>>,
}

/// Paths that left the tracked set just now (each one's latest version still says what it
/// held): each gets an `untracked` version.
pub fn mark_left(conn: &Connection, path_ids: &[i64]) -> rusqlite::Result<()> {
    let now = now_ms();
    for &path_id in path_ids {
        insert_untracked(conn, path_id, now)?;
    }
    Ok(())
}

/// Paths an ignore-rule change just brought into view, before their first version is
/// recorded: those not already marked `untracked` get that version, so history says they
/// were untracked (not absent) until now.
pub fn mark_entering(conn: &mut Connection, paths: &[&RelPath]) -> rusqlite::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now = now_ms();
    for path in paths {
        let path_id = sql::ensure_path(&tx, path)?;
        let latest = journal::version_at(&tx, path_id, i64::MAX)?;
        if !latest.is_some_and(|(_, state)| state.is_untracked()) {
            insert_untracked(&tx, path_id, now)?;
        }
    }
    tx.commit()
}

/// Not made by anyone: origin `offline` (found, not seen written), in no turn.
fn insert_untracked(conn: &Connection, path_id: i64, now: i64) -> rusqlite::Result<i64> {
    sql::insert_version(conn, path_id, &State::Untracked, Origin::Offline, None, None, now)
}

/// A path that became ignored stops being tracked: its history stays, and says from when it
/// (and all beneath it) was untracked.
pub(super) fn untrack(conn: &Connection, ctx: &mut Context, path: &RelPath) -> rusqlite::Result<()> {
    let Some(latest) = sql::latest(conn, path)? else {
        return Ok(());
    };
    let mut left = vec![latest.path_id];
    if latest.state.is_dir() {
        ctx.watches.unwatch_tree(path);
        for (_, below) in sql::present_under::<Vec<_>>(conn, path)? {
            left.push(below.path_id);
        }
    }
    for &path_id in &left {
        sql::clear_path_state(conn, path_id)?;
    }
    mark_left(conn, &left)
}

/// `path` or one of its ancestors is ignored (ancestors matter after a rules change).
pub(super) fn ignored_with_parents(rules: &IgnoreRules, path: &RelPath, is_dir: bool) -> bool {
    let mut ancestor = path.parent();
    while let Some(dir) = ancestor {
        if rules.is_ignored(&dir, true) {
            return true;
        }
        ancestor = dir.parent();
    }
    rules.is_ignored(path, is_dir)
}
