//! Rescans: the first index, the reconcile at restart, recovery from lost events and ignore
//! rule changes. A stat walk finds what may have changed; only that is re-read (W6).

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use rusqlite::Connection;
use rustix::fs::FileType;

use super::Context;
use super::record::{Attribution, Recorded, Walked, record_walked};
use super::tracked::{ignored_with_parents, mark_entering};
use super::walk::{Entry, EntryKind, walk_from_unless};
use crate::model::{RACY_NS, StatPrint};
use crate::paths::RelPath;
use crate::stats::RescanReport;
use crate::store::cache::{Cached, each_cached};
use crate::store::sql;
use crate::watch::filter::IgnoreRules;

/// SQLite's `PRAGMA synchronous` levels: OFF 0, NORMAL 1, FULL 2, EXTRA 3.
const SYNCHRONOUS_NORMAL: i64 = 1;

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

/// The first half of a rescan: walks `under` (arming each directory's watch right before
/// listing it), then merges the walk with the index's side, read one row at a time.
pub fn survey(conn: &Connection, ctx: &mut Context, under: Option<&RelPath>) -> rusqlite::Result<Survey> {
    let started = Instant::now();
    let (entries, _) = walk_tracked(conn, ctx, under, &|| false)?;
    let walk_ms = started.elapsed().as_millis() as u64;
    let survey = merge_with_index(conn, under, entries, started)?;
    tracing::debug!(walk_ms, survey_ms = survey.survey_ms, "survey");
    Ok(survey)
}

/// `survey` beneath several directories at once, none beneath another, in the order of the
/// paths beneath them (as `Watches::unwatched_tops` gives them): what to record, and how many
/// paths were walked.
pub fn survey_dirs(
    conn: &Connection,
    ctx: &mut Context,
    dirs: &[RelPath],
) -> rusqlite::Result<(Vec<Walked>, usize)> {
    let started = Instant::now();
    let starts: Vec<Option<RelPath>> = dirs.iter().cloned().map(Some).collect();
    let (entries, _) = walk_starts(ctx, starts.clone(), true, &|| false);
    let survey = merge_starts(conn, &starts, entries, started, None)?;
    Ok((survey.work, survey.walked))
}

/// The survey's walk, abandoned as soon as `stop` says so (then the entries are incomplete
/// and the second value is true); `merge_with_index` completes it.
pub fn walk_tracked(
    conn: &Connection,
    ctx: &mut Context,
    under: Option<&RelPath>,
    stop: &(dyn Fn() -> bool + Sync),
) -> rusqlite::Result<(Vec<Entry>, bool)> {
    // With nothing recorded (a first index) there is no stat to compare: the walk skips it.
    let with_stat = under.is_some() || !sql::index_is_empty(conn)?;
    Ok(walk_starts(ctx, vec![under.cloned()], with_stat, stop))
}

fn walk_starts(
    ctx: &mut Context,
    starts: Vec<Option<RelPath>>,
    with_stat: bool,
    stop: &(dyn Fn() -> bool + Sync),
) -> (Vec<Entry>, bool) {
    let watches = &mut ctx.watches;
    let arm = |dirs: &[RelPath]| watches.watch_all(dirs);
    let (entries, unreadable, stopped) =
        walk_from_unless(&ctx.root.path, starts, &mut ctx.rules, arm, with_stat, stop);
    if unreadable > 0 {
        ctx.stats
            .unreadable
            .fetch_add(unreadable as u64, Ordering::Relaxed);
    }
    (entries, stopped)
}

/// The survey's comparison of a complete walk with the index; `started`: when the walk began.
pub fn merge_with_index(
    conn: &Connection,
    under: Option<&RelPath>,
    entries: Vec<Entry>,
    started: Instant,
) -> rusqlite::Result<Survey> {
    merge_starts(
        conn,
        &[under.cloned()],
        entries,
        started,
        under.map(RelPath::to_text),
    )
}

fn merge_starts(
    conn: &Connection,
    starts: &[Option<RelPath>],
    entries: Vec<Entry>,
    started: Instant,
    dir: Option<String>,
) -> rusqlite::Result<Survey> {
    let walked = entries.len();
    if starts == [None] && sql::index_is_empty(conn)? {
        // A first index: everything is new, and the walk's list becomes the work in place
        // (a million paths: no second list beside the first).
        return Ok(Survey {
            dir,
            work: all_new(entries),
            walked,
            survey_ms: started.elapsed().as_millis() as u64,
            started,
        });
    }
    // The index's side is never held whole: at 130,000 paths it was a third of the peak.
    // Subtree after subtree, in path order, as the merge needs it.
    let mut merge = Merge::new(entries);
    for start in starts {
        each_cached(conn, start.as_ref(), |path, cached| merge.known(path, cached))?;
    }
    Ok(Survey {
        dir,
        work: merge.finish(conn)?,
        walked,
        survey_ms: started.elapsed().as_millis() as u64,
        started,
    })
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
    let was: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
    let lower = was > SYNCHRONOUS_NORMAL;
    if lower {
        conn.pragma_update(None, "synchronous", SYNCHRONOUS_NORMAL)?;
    }
    let recorded = record_each(conn, ctx, groups, bar.as_ref());
    if lower {
        conn.pragma_update(None, "synchronous", was)?;
    }
    let recorded = recorded?;
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

/// The comparison of a walk with the index's stat cache, both in path order: paths whose stat
/// differs from the cache, new paths, and recorded paths not found. Only those that differ or
/// are gone get their latest version looked up (`fill_latest`): at a restart nearly none. The
/// work comes out in path order: a new directory is recorded before what it holds.
struct Merge {
    walked: std::iter::Peekable<std::vec::IntoIter<Entry>>,
    work: Vec<Walked>,
    /// Indices into `work` of recorded paths, whose latest version is still to be read.
    recorded: Vec<usize>,
}

impl Merge {
    fn new(mut entries: Vec<Entry>) -> Self {
        entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Self {
            walked: entries.into_iter().peekable(),
            work: Vec::new(),
            recorded: Vec::new(),
        }
    }

    /// The index's next path, which must come after the one before it.
    fn known(&mut self, path: RelPath, cached: Cached) {
        while let Some(new) = self.walked.next_if(|entry| entry.path < path) {
            self.work.push(found(new));
        }
        let walked = match self.walked.next_if(|entry| entry.path == path) {
            Some(entry) if unchanged(&cached, entry.kind, entry.stat.as_ref()) => return,
            Some(entry) => found(entry),
            None => Walked {
                path,
                latest: None,
                file: false,
            },
        };
        self.recorded.push(self.work.len());
        self.work.push(walked);
    }

    /// The work, the recorded paths in it with their latest versions.
    fn finish(self, conn: &Connection) -> rusqlite::Result<Vec<Walked>> {
        let (mut work, recorded) = self.split();
        for at in recorded {
            let walked = &mut work[at];
            walked.latest = sql::latest(conn, &walked.path)?.map(Box::new);
        }
        Ok(work)
    }

    /// The work, and which of it the index has recorded.
    fn split(mut self) -> (Vec<Walked>, Vec<usize>) {
        self.work.extend(self.walked.map(found));
        (self.work, self.recorded)
    }
}

/// Every entry as new work, in path order, in the walk's own allocation.
fn all_new(mut entries: Vec<Entry>) -> Vec<Walked> {
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let mut work: Vec<Walked> = entries.into_iter().map(found).collect();
    // Collected in the walk's allocation, sized for entries: give back the difference.
    work.shrink_to_fit();
    work
}

fn found(entry: Entry) -> Walked {
    Walked {
        file: entry.kind == EntryKind::File,
        path: entry.path,
        latest: None,
    }
}

/// The entry's kind and stat are what the cache holds, and the cache proves it (not racy).
fn unchanged(cached: &Cached, kind: EntryKind, stat: Option<&StatPrint>) -> bool {
    let same_kind = matches!(
        (FileType::from_raw_mode(cached.stat.mode), kind),
        (FileType::RegularFile, EntryKind::File)
            | (FileType::Symlink, EntryKind::Symlink)
            | (FileType::Directory, EntryKind::Dir)
    );
    if kind == EntryKind::Dir {
        // A directory's own stat changes with every entry; its children are checked anyway.
        return same_kind;
    }
    let racy = cached.stat.mtime_ns + RACY_NS >= cached.checked_ns;
    same_kind && stat == Some(&cached.stat.print()) && !racy
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
    use crate::model::StatKey;

    fn stat(ino: u64) -> StatKey {
        StatKey {
            dev: 1,
            ino,
            size: 10,
            mtime_ns: 1_000,
            ctime_ns: 1_000,
            mode: 0o100644,
        }
    }

    fn path(text: &str) -> RelPath {
        RelPath::parse(text).expect("a valid path")
    }

    fn on_disk(text: &str, ino: u64) -> Entry {
        Entry {
            path: path(text),
            kind: EntryKind::File,
            stat: Some(stat(ino).print()),
        }
    }

    fn recorded(text: &str, ino: u64) -> (RelPath, Cached) {
        let cached = Cached {
            stat: stat(ino),
            checked_ns: 1_000 + RACY_NS + 1,
        };
        (path(text), cached)
    }

    #[test]
    fn the_merge_finds_new_edited_and_gone_paths_in_path_order() {
        // The walk comes in no order; the index in path order.
        let entries = vec![on_disk("d/same", 2), on_disk("d/new", 9), on_disk("d/edited", 4)];
        let known = vec![
            recorded("a-gone", 1),
            recorded("d/edited", 3),
            recorded("d/gone-between", 5),
            recorded("d/same", 2),
            recorded("z-gone", 6),
        ];
        let mut merge = Merge::new(entries);
        for (path, cached) in known {
            merge.known(path, cached);
        }
        let (work, recorded) = merge.split();
        let listed: Vec<(String, bool)> = work
            .iter()
            .enumerate()
            .map(|(i, w)| (w.path.to_text(), recorded.contains(&i)))
            .collect();
        let expected = [
            ("a-gone", true),
            ("d/edited", true),
            ("d/gone-between", true),
            ("d/new", false),
            ("z-gone", true),
        ];
        let expected: Vec<(String, bool)> = expected.iter().map(|(p, k)| (p.to_string(), *k)).collect();
        assert_eq!(listed, expected);
    }
}
