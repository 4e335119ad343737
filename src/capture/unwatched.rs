//! The directories the inotify watch limit left unwatched (`Watches::unwatched_tops`): nothing
//! reports their changes, so before every command (turn markers, rollback plans) a stat walk
//! of those directories only, compared with the index's stat cache, records what changed
//! (G2: at the latest at the next marker, the record equals the disk). Its cost is in `status`.

use std::time::Instant;

use rusqlite::Connection;

use super::Context;
use super::record::{Attribution, Recorded, record_walked};
use super::rescan::survey_dirs;
use crate::paths::RelPath;
use crate::stats::VerifyReport;

/// Records every difference between the unwatched directories and the index; nothing to do
/// (and no cost) while every directory is watched.
pub fn verify(conn: &mut Connection, ctx: &mut Context, who: Attribution) -> rusqlite::Result<Recorded> {
    let tops = ctx.watches.unwatched_tops();
    if tops.is_empty() {
        return Ok(Recorded::default());
    }
    let started = Instant::now();
    let dirs = still_dirs(ctx, tops);
    let (work, walked) = survey_dirs(conn, ctx, &dirs)?;
    let recorded = record_walked(conn, ctx, work, who, None)?;
    let report = VerifyReport {
        dirs: dirs.len(),
        walked,
        recorded: recorded.versions,
        ms: started.elapsed().as_millis() as u64,
    };
    tracing::debug!(?report, "unwatched directories verified");
    ctx.stats.set_last_verify(report);
    Ok(recorded)
}

/// The directories that are still directories. One that is gone (or replaced by a file or a
/// symlink) is forgotten: its parent's watch, or the walk of its unwatched parent, reports it.
fn still_dirs(ctx: &mut Context, tops: Vec<RelPath>) -> Vec<RelPath> {
    // Opened beneath the root a piece at a time: a directory too deep for inotify has a path
    // too long for one `statat` too (`fs::deep`).
    let (dirs, gone): (Vec<RelPath>, Vec<RelPath>) = tops
        .into_iter()
        .partition(|dir| crate::fs::read::is_dir(&ctx.root, dir));
    for dir in &gone {
        ctx.watches.forget_unwatched(dir);
    }
    dirs
}
