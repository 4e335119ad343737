//! The verification pass (G2): a stat walk of the whole workspace compared with the index's
//! stat cache (`rescan::survey_at`), for changes no event reported. A process that writes
//! through a shared mapping (mmap `MAP_SHARED`, msync) and never closes the file makes no
//! inotify event at all; the kernel still updates the file's mtime and ctime (lazily: at the
//! first write to a page after it was written back), so the stat cache sees it, and the
//! racy-entry rule re-reads what was recorded too close to its mtime.
//!
//! The worker runs it on demand (`filewatchd verify`, behind the barrier) and in the
//! background, when the workspace has been quiet for `quiet` and at most every `interval`
//! (`Schedule`). A background pass walks on a thread of its own at idle CPU and I/O priority
//! (the walk's threads inherit both; the worker's own priority never changes, so nothing has
//! to be restored), and yields to any command that arrives meanwhile: the walk stops, the
//! command is served, the pass runs again once the workspace is quiet. The comparison with
//! the index and the recording run on the worker at normal priority. What a pass finds is
//! recorded attributed by the time the path last changed (`attribution_at`).

use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;

use super::Context;
use super::record::{Attribution, Recorded, Walked, record_walked};
use super::rescan::{Pace, Survey, survey_at, survey_unless};
use crate::model::{Origin, now_ms};
use crate::stats::VerifyRun;
use crate::store::sql;
use crate::store::verified::{self, TurnSpan};
use crate::wire::upkeep::Verified;

/// Versions listed in a pass's answer; the count covers them all.
pub const LISTED: usize = 100;

/// A finished pass: what it found, and what its recording left for the worker (paths that
/// kept changing while read, directories whose ignore files changed).
pub struct Pass {
    pub found: Verified,
    pub recorded: Recorded,
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("the index failed: {0}")]
    Store(#[from] rusqlite::Error),
    #[error(transparent)]
    Refused(#[from] crate::refusal::Refusal),
}

/// A pass now, at normal priority (on demand: someone waits for the answer).
pub fn pass(conn: &mut Connection, ctx: &mut Context) -> Result<Pass, VerifyError> {
    let (started, before) = (Instant::now(), sql::latest_seq(conn)?);
    let survey = survey_at(conn, ctx, vec![None], Pace::Lean)?;
    record_found(conn, ctx, survey, started, before)
}

/// A background pass at idle priority; `None` when it yielded (`stop` said a command waits)
/// before its walk was done.
pub fn pass_at_idle(
    conn: &mut Connection,
    ctx: &mut Context,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Option<Pass>, VerifyError> {
    let (started, before) = (Instant::now(), sql::latest_seq(conn)?);
    // The walk at idle priority, the comparison with the index on the worker at normal
    // priority: a command that arrives meanwhile waits for neither a starved walk nor a read.
    let Some(survey) = survey_unless(conn, ctx, vec![None], Pace::LeanAtIdle, stop)? else {
        ctx.stats.verify_yielded();
        return Ok(None);
    };
    record_found(conn, ctx, survey, started, before).map(Some)
}

/// Records what the survey found, each path attributed by when it changed.
fn record_found(
    conn: &mut Connection,
    ctx: &mut Context,
    survey: Survey,
    started: Instant,
    before: i64,
) -> Result<Pass, VerifyError> {
    let walked = survey.walked();
    let recorded = record_attributed(conn, ctx, survey.into_work())?;
    let versions = verified::versions_after(conn, before, LISTED)?;
    let found = Verified {
        walked,
        changed: recorded.versions,
        truncated: recorded.versions > versions.len(),
        versions,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    ctx.stats.verify_ran(VerifyRun {
        finished_ms: now_ms(),
        duration_ms: found.duration_ms,
        walked,
        changed: found.changed,
    });
    let (changed, elapsed_ms) = (found.changed, found.duration_ms);
    if changed > 0 {
        tracing::info!(
            walked,
            changed,
            elapsed_ms,
            "verification pass found changes no event reported"
        );
    } else {
        tracing::debug!(walked, elapsed_ms, "verification pass found nothing");
    }
    Ok(Pass { found, recorded })
}

/// Records each run of paths with the same attribution as one group.
fn record_attributed(
    conn: &mut Connection,
    ctx: &mut Context,
    work: Vec<Walked>,
) -> rusqlite::Result<Recorded> {
    let mut recorded = Recorded::default();
    for (who, group) in attribute(conn, &ctx.root.path, work)? {
        recorded.absorb(record_walked(conn, ctx, group, who, None)?);
    }
    Ok(recorded)
}

/// The found paths in path order, cut into runs of the same attribution: each run is
/// recorded as one group, so a new directory is still recorded before what it holds.
fn attribute(
    conn: &Connection,
    root: &Path,
    work: Vec<Walked>,
) -> rusqlite::Result<Vec<(Attribution, Vec<Walked>)>> {
    let times: Vec<Option<i64>> = work.iter().map(|w| changed_at_ms(&w.path.to_abs(root))).collect();
    let spans = match (times.iter().flatten().min(), times.iter().flatten().max()) {
        (Some(&from), Some(&to)) => verified::turns_open_between(conn, from, to)?,
        _ => Vec::new(),
    };
    let mut runs: Vec<(Attribution, Vec<Walked>)> = Vec::new();
    for (walked, at) in work.into_iter().zip(times) {
        let who = attribution_at(&spans, at);
        match runs.last_mut() {
            Some((last, group)) if last.origin == who.origin && last.turn_id == who.turn_id => {
                group.push(walked)
            }
            _ => runs.push((who, vec![walked])),
        }
    }
    Ok(runs)
}

/// When a path last changed: its inode's ctime (unix ms). That is the mtime of a write
/// through a mapping, and unlike the mtime it cannot be set back (`touch -d`, `tar -x`,
/// `cp -p`), and it moves with a mode change too. `None` for a path that is gone.
fn changed_at_ms(abs: &Path) -> Option<i64> {
    let stat = crate::platform::sys::fs::lstat(abs).ok()?;
    Some(
        crate::model::StatKey::from_rustix(&stat)
            .ctime_ns
            .div_euclid(1_000_000),
    )
}

const OUTSIDE: Attribution = Attribution::OUTSIDE;

/// Who made a change found at `at` (unix ms): the turn open then, when the open turns
/// (ended since or not) all belong to one session (the latest started, at a boundary where
/// one turn ended as the next began); anyone else's (`outside`) when none or several
/// sessions' turns were open, or when the time is unknown (a path found gone).
pub fn attribution_at(spans: &[TurnSpan], at: Option<i64>) -> Attribution {
    let Some(at) = at else {
        return OUTSIDE;
    };
    let open: Vec<&TurnSpan> = spans
        .iter()
        .filter(|t| t.started_at <= at && t.ended_at.is_none_or(|end| at <= end))
        .collect();
    let Some(latest) = open.iter().max_by_key(|t| (t.started_at, t.turn_id)) else {
        return OUTSIDE;
    };
    if open.iter().any(|t| t.session_id != latest.session_id) {
        return OUTSIDE;
    }
    // No event reported it: its tool call is not known, only its turn's window.
    Attribution {
        origin: Origin::Turn,
        turn_id: Some(latest.turn_id),
        decided: Some(crate::model::Decided::TurnWindow),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(turn_id: i64, session_id: i64, started_at: i64, ended_at: Option<i64>) -> TurnSpan {
        TurnSpan {
            turn_id,
            session_id,
            started_at,
            ended_at,
        }
    }

    fn who(spans: &[TurnSpan], at: i64) -> (Origin, Option<i64>) {
        let a = attribution_at(spans, Some(at));
        (a.origin, a.turn_id)
    }

    #[test]
    fn a_change_belongs_to_the_turn_open_at_its_time() {
        // Session 1: turn 10 from 100 to 200, turn 11 from 200 (still open); session 2: turn
        // 20 from 500 to 600.
        let spans = [
            span(10, 1, 100, Some(200)),
            span(11, 1, 200, None),
            span(20, 2, 500, Some(600)),
        ];
        assert_eq!(who(&spans, 50), (Origin::Outside, None));
        assert_eq!(who(&spans, 150), (Origin::Turn, Some(10)));
        assert_eq!(
            who(&spans, 200),
            (Origin::Turn, Some(11)),
            "the boundary: the turn that began"
        );
        assert_eq!(who(&spans, 300), (Origin::Turn, Some(11)));
        assert_eq!(
            who(&spans, 550),
            (Origin::Outside, None),
            "two sessions' turns were open"
        );
        assert_eq!(who(&spans, 700), (Origin::Turn, Some(11)));
        assert_eq!(attribution_at(&spans, None).origin, Origin::Outside);
    }
}
