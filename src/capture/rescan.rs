//! Rescans: the first index, the reconcile at restart, recovery from lost events and ignore
//! rule changes. A stat walk finds what may have changed; only that is re-read (W6).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use rusqlite::Connection;

use super::Context;
use super::known::{Known, as_work};
use super::record::{Attribution, Recorded, Walked, record_walked};
use super::tracked::{ignored_with_parents, mark_entering};
use super::walk::{Entry, Listed, Walk, walk};
use crate::paths::RelPath;
use crate::platform::lower_own_priority;
use crate::stats::RescanReport;
use crate::store::db::without_sync;
use crate::store::sql;
use crate::watch::filter::IgnoreRules;

/// Re-checks `under` (the whole root when `None`) against the index and records every
/// difference, arming a watch on every tracked directory found.
pub fn rescan(
    conn: &mut Connection,
    ctx: &mut Context,
    under: Option<&RelPath>,
    who: Attribution,
    show_progress: bool,
) -> rusqlite::Result<Recorded> {
    let survey = survey(conn, ctx, under)?;
    record_survey(conn, ctx, survey, who, show_progress)
}

/// A rescan after an ignore rule changed beneath `under`. A path the rules `before` the change
/// hid comes into view: it was untracked until now, not absent, history says so before its
/// first version, and it is found, never the work of whoever writes now (it may long predate
/// the turn: an undo must not delete it). Any other difference is a write whose event is not
/// read yet, made now: `who`'s (`git checkout` writes `.gitignore` and then the files after it).
pub fn rescan_into_view(
    conn: &mut Connection,
    ctx: &mut Context,
    under: Option<&RelPath>,
    before: &IgnoreRules,
    who: Attribution,
) -> rusqlite::Result<Recorded> {
    let mut survey = survey(conn, ctx, under)?;
    let root = &ctx.root.path;
    let (entering, written): (Vec<Walked>, Vec<Walked>) = std::mem::take(&mut survey.work)
        .into_iter()
        .partition(|w| w.latest.is_none() && was_hidden(before, root, w));
    let paths: Vec<&RelPath> = entering.iter().map(|w| &w.path).collect();
    mark_entering(conn, &paths)?;
    // The written first: a directory made now comes before what the old rules hid in it.
    record_groups(
        conn,
        ctx,
        survey,
        vec![(who, written), (Attribution::FOUND, entering)],
        false,
    )
}

/// Whether the rules before a change hid a path the rescan after it walked.
fn was_hidden(before: &IgnoreRules, root: &std::path::Path, walked: &Walked) -> bool {
    let is_dir = !walked.file
        && walked
            .path
            .to_abs(root)
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir());
    ignored_with_parents(before, &walked.path, is_dir)
}

/// What a rescan found to record; nothing is written to the index to find it.
pub struct Survey {
    dir: Option<String>,
    work: Vec<Walked>,
    walked: usize,
    started: Instant,
    survey_ms: u64,
}

/// The first half of a rescan: walks `under` (arming each directory's watch before listing
/// it) beside the index's side (`Known`, read meanwhile), which drops each entry it
/// proves unchanged as soon as it is listed; then compares what is left.
pub fn survey(conn: &Connection, ctx: &mut Context, under: Option<&RelPath>) -> rusqlite::Result<Survey> {
    survey_at(conn, ctx, vec![under.cloned()], Pace::Fast)
}

/// `survey_unless` never told to stop.
pub fn survey_at(
    conn: &Connection,
    ctx: &mut Context,
    starts: Vec<Option<RelPath>>,
    pace: Pace,
) -> rusqlite::Result<Survey> {
    match survey_unless(conn, ctx, starts, pace, &|| false)? {
        Some(survey) => Ok(survey),
        None => unreachable!("a survey that is never told to stop is complete"),
    }
}

/// `survey` beneath several directories at once, none beneath another (as
/// `Watches::unwatched_tops` gives them): what to record, and how many paths were walked.
pub fn survey_dirs(
    conn: &Connection,
    ctx: &mut Context,
    dirs: &[RelPath],
) -> rusqlite::Result<(Vec<Walked>, usize)> {
    let starts = dirs.iter().cloned().map(Some).collect();
    let survey = survey_at(conn, ctx, starts, Pace::Fast)?;
    Ok((survey.work, survey.walked))
}

/// How a survey spends the machine.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Soonest: the index's side read while the walk runs, which keeps every entry it lists
    /// until then (a start, a rescan: someone waits; at a million paths a third of them).
    Fast,
    /// Least memory: the index's side read first, so the walk keeps only what differs (a
    /// verification pass, beside a daemon that holds its own memory already).
    Lean,
    /// `Lean`, the walk at idle CPU and I/O priority (its thread, and the walkers it starts,
    /// end with it), the index's side read and compared at the caller's (a background pass).
    LeanAtIdle,
}

/// `survey` beneath each start (`None`: the root) at `pace`, abandoned (`None`) as soon as
/// `stop` says so.
pub fn survey_unless(
    conn: &Connection,
    ctx: &mut Context,
    starts: Vec<Option<RelPath>>,
    pace: Pace,
    stop: &(dyn Fn() -> bool + Sync),
) -> rusqlite::Result<Option<Survey>> {
    let started = Instant::now();
    let dir = match starts.as_slice() {
        [Some(dir)] => Some(dir.to_text()),
        _ => None,
    };
    if starts == [None] && sql::index_is_empty(conn)? {
        // A first index: nothing to compare, nothing stat'ed; everything is new, and the
        // walk's list becomes the work in place (a million paths: no second list beside it).
        let how = Walk {
            with_stat: false,
            stop,
            keep: &|_| true,
        };
        let listed = walk_starts(ctx, starts, how);
        return Ok((!listed.stopped).then(|| Survey {
            dir,
            walked: listed.count,
            work: all_new(listed.entries),
            survey_ms: started.elapsed().as_millis() as u64,
            started,
        }));
    }
    let Some((listed, known)) = walk_beside_index(conn, ctx, &starts, pace, stop)? else {
        return Ok(None);
    };
    let walk_ms = started.elapsed().as_millis() as u64;
    let kept = listed.entries.len();
    let work = known.merge(conn, &starts, listed.entries)?;
    let survey_ms = started.elapsed().as_millis() as u64;
    tracing::debug!(walk_ms, survey_ms, walked = listed.count, kept, "survey");
    Ok(Some(Survey {
        dir,
        work,
        walked: listed.count,
        started,
        survey_ms,
    }))
}

/// The walk on a thread of its own, the index's side read on this one meanwhile (`Fast`) or
/// before (`Lean`); from the moment it is read, the walkers keep only what it does not prove
/// unchanged. `None` when `stop` said so.
fn walk_beside_index(
    conn: &Connection,
    ctx: &mut Context,
    starts: &[Option<RelPath>],
    pace: Pace,
    stop: &(dyn Fn() -> bool + Sync),
) -> rusqlite::Result<Option<(Listed, Known)>> {
    let known: OnceLock<Known> = OnceLock::new();
    if pace != Pace::Fast {
        let Some(read) = Known::read(conn, starts, stop)? else {
            return Ok(None);
        };
        let _ = known.set(read);
    }
    let unread = AtomicBool::new(false);
    let stop_walk = || stop() || unread.load(Ordering::Relaxed);
    let gate = Unread::default();
    let keep = |entry: &Entry| loop {
        if let Some(known) = known.get() {
            return known.keeps(entry);
        }
        if unread.load(Ordering::Relaxed) || gate.may_keep() {
            return true;
        }
        gate.wait();
    };
    let (listed, read) = std::thread::scope(|scope| {
        let walker = scope.spawn(|| {
            if pace == Pace::LeanAtIdle {
                lower_own_priority();
            }
            let how = Walk {
                with_stat: true,
                stop: &stop_walk,
                keep: &keep,
            };
            walk_starts(ctx, starts.to_vec(), how)
        });
        // Opened once the read ends, whether it returns or panics: no walker waits on.
        let opens = OpensOnDrop(&gate);
        let read = match known.get() {
            Some(_) => Ok(Some(Ok(()))),
            None => Known::read(conn, starts, stop).map(|read| read.map(|read| known.set(read))),
        };
        if !matches!(read, Ok(Some(_))) {
            // The walk is of no use without the index's side: it stops too.
            unread.store(true, Ordering::Relaxed);
        }
        drop(opens);
        let listed = walker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (listed, read)
    });
    read?;
    match known.into_inner() {
        Some(known) if !listed.stopped && !stop() => Ok(Some((listed, known))),
        _ => Ok(None),
    }
}

/// Entries a walk keeps while the index's side is still being read; past that each walker
/// waits for it. A start whose index reads slowly (its pages gone from the page cache, as a
/// cold disk has them) would otherwise hold the whole walk, a million entries, beside it.
const KEPT_UNREAD: usize = 200_000;

/// Until the index's side is read (or cannot be): how many entries the walk kept meanwhile.
#[derive(Default)]
struct Unread {
    kept: AtomicUsize,
    read: Mutex<bool>,
    ready: Condvar,
}

impl Unread {
    /// Whether one more entry may be kept before the read ends.
    fn may_keep(&self) -> bool {
        self.kept.fetch_add(1, Ordering::Relaxed) < KEPT_UNREAD
    }

    fn wait(&self) {
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        while !*read {
            read = self.ready.wait(read).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The read ended, well or not: no walker waits any longer.
    fn open(&self) {
        *self.read.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.ready.notify_all();
    }
}

struct OpensOnDrop<'a>(&'a Unread);

impl Drop for OpensOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open();
    }
}

fn walk_starts(ctx: &mut Context, starts: Vec<Option<RelPath>>, how: Walk<'_>) -> Listed {
    let watches = &mut ctx.watches;
    let arm = |dirs: &[RelPath]| watches.watch_all(dirs);
    let listed = walk(&ctx.root.path, starts, &mut ctx.rules, arm, how);
    ctx.said_refusals();
    if listed.unreadable > 0 {
        ctx.stats
            .unreadable
            .fetch_add(listed.unreadable as u64, Ordering::Relaxed);
    }
    listed
}

impl Survey {
    /// Paths walked.
    pub fn walked(&self) -> usize {
        self.walked
    }

    /// What was found to record, in path order.
    pub fn into_work(self) -> Vec<Walked> {
        self.work
    }
}

/// The second half of a rescan: reads and records what the survey found.
pub fn record_survey(
    conn: &mut Connection,
    ctx: &mut Context,
    mut survey: Survey,
    who: Attribution,
    show_progress: bool,
) -> rusqlite::Result<Recorded> {
    let work = std::mem::take(&mut survey.work);
    record_groups(conn, ctx, survey, vec![(who, work)], show_progress)
}

/// Records a survey's work, split into groups by who each belongs to (`survey.work` is unused).
fn record_groups(
    conn: &mut Connection,
    ctx: &mut Context,
    survey: Survey,
    groups: Vec<(Attribution, Vec<Walked>)>,
    show_progress: bool,
) -> rusqlite::Result<Recorded> {
    let Survey {
        dir,
        walked,
        started,
        survey_ms,
        ..
    } = survey;
    let bar = progress_bar(show_progress, groups.iter().map(|(_, work)| work.len()).sum());
    if show_progress {
        // Kept once done: `status` says the walk read them all until the daemon listens.
        ctx.stats.set_index_progress(bar.clone());
    }
    // A rescan's batches need not each reach the disk: after a power loss the next start
    // rescans again. WAL + synchronous=NORMAL never corrupts; FULL comes back right after.
    // (A first index may run with synchronous=OFF already: `store::unjournaled`.)
    let recorded = without_sync(conn, |conn| record_each(conn, ctx, groups, bar.as_ref()))??;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = RescanReport {
        dir,
        walked,
        recorded: recorded.versions,
        survey_ms,
        total_ms: started.elapsed().as_millis() as u64,
    };
    tracing::debug!(?report, "rescan timings");
    ctx.stats.set_last_rescan(report);
    Ok(recorded)
}

fn record_each(
    conn: &mut Connection,
    ctx: &mut Context,
    groups: Vec<(Attribution, Vec<Walked>)>,
    bar: Option<&ProgressBar>,
) -> rusqlite::Result<Recorded> {
    let mut all = Recorded::default();
    for (who, work) in groups.into_iter().filter(|(_, work)| !work.is_empty()) {
        all.absorb(record_walked(conn, ctx, work, who, bar)?);
    }
    Ok(all)
}

/// Every entry as new work, in path order, in the walk's own allocation.
fn all_new(mut entries: Vec<Entry>) -> Vec<Walked> {
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let mut work: Vec<Walked> = entries.into_iter().map(as_work).collect();
    // Collected in the walk's allocation, sized for entries: give back the difference.
    work.shrink_to_fit();
    work
}

/// The start-up walk's bar: drawn on a terminal for a large tree, else hidden (it still
/// counts, for `status` while the daemon indexes).
fn progress_bar(show: bool, total: usize) -> Option<ProgressBar> {
    if !show {
        return None;
    }
    if total < 1000 || !std::io::stderr().is_terminal() {
        let bar = ProgressBar::hidden();
        bar.set_length(total as u64);
        return Some(bar);
    }
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("indexing {bar:40} {pos}/{len} files ({eta} left)") {
        bar.set_style(style);
    }
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_keeps_a_bounded_number_of_entries_until_the_index_is_read_then_goes_on() {
        let gate = Unread::default();
        let kept = (0..KEPT_UNREAD + 10).filter(|_| gate.may_keep()).count();
        assert_eq!(kept, KEPT_UNREAD);
        let waited = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let walker = scope.spawn(|| {
                gate.wait();
                waited.store(true, Ordering::SeqCst);
            });
            // The read panics: the guard still lets the walker go on.
            let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _opens = OpensOnDrop(&gate);
                panic!("the index cannot be read");
            }));
            assert!(read.is_err());
            walker.join().expect("the walker ends");
        });
        assert!(waited.load(Ordering::SeqCst));
    }
}
