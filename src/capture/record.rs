//! Hints become facts: observe each path (in parallel), compare with its latest version, and
//! write the new versions, blobs and stat-cache rows of one batch in one transaction.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use indicatif::ProgressBar;
use rusqlite::{Connection, TransactionBehavior};

use super::Context;
use super::observe::{Observed, READERS};
pub use super::observe::{Observer, Priority, ReadEarly};
pub use super::owners::Attribution;
use super::owners::Who;
use super::tracked::{RulesChanged, ignored_with_parents, untrack};
use crate::fs::feed::{CancelOnDrop, Feed};
use crate::fs::read::{Observation, Present, Saved, observe, unreadable_file};
use crate::model::{Hash, State, now_ms, now_ns};
use crate::paths::RelPath;
use crate::store::fault::StorageFault;
use crate::store::sql::{self, Latest};
use crate::watch::filter::IgnoreRules;

/// What a batch left for later.
#[derive(Debug, Default)]
pub struct Recorded {
    pub versions: usize,
    /// Paths that kept changing while read: retried on the next flush.
    pub requeue: Vec<RelPath>,
    /// Ignore files changed: their directories are rescanned after this batch.
    pub rules_changed: Option<RulesChanged>,
    /// Paths read but not stored: the store failed (`fault`). Retried until recorded.
    pub failed: Vec<RelPath>,
    pub fault: Option<StorageFault>,
    /// A directory was recorded gone (or replaced): what was read beneath it ahead of this
    /// batch may stand for nothing now (`engine::early`).
    pub dirs_gone: bool,
}

impl Recorded {
    pub fn absorb(&mut self, other: Recorded) {
        self.versions += other.versions;
        self.requeue.extend(other.requeue);
        self.failed.extend(other.failed);
        self.fault = other.fault.or(self.fault.take());
        self.dirs_gone |= other.dirs_gone;
        match (&mut self.rules_changed, other.rules_changed) {
            (Some(mine), Some(theirs)) => mine.dirs.extend(theirs.dirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
    }
}

/// Records the current state of every path in `work`, following new directories down.
///
/// Each round observes its paths, then arms the directories it found unwatched and lists
/// them: the next round is what those listings (and the record beneath them) name, observed
/// again even when this call observed them before. An earlier observation came before the
/// arming, and a file made in between has no event: `rm -r d; mkdir d; echo x > d/a`
/// observed between the `mkdir` and the write finds `d/a` absent, and only the listing after
/// `d` is armed finds it. The rounds end: each one's paths lie strictly beneath directories
/// armed in the round before.
/// `early` holds what was read of some of the paths already (`engine::early`): those are not
/// read again, unless the directory they were read in is no longer watched (moved away or
/// removed since, maybe in this very batch): then they are.
pub fn record(
    conn: &mut Connection,
    ctx: &mut Context,
    work: Vec<RelPath>,
    who: Who,
    priority: Priority,
    mut early: HashMap<RelPath, ReadEarly>,
) -> rusqlite::Result<Recorded> {
    let observer = ctx.observer();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut batch = Batch::new(who, true);
    let mut work = once_each(work);
    while !work.is_empty() {
        let known = latest_of(&tx, &work)?;
        let observed = observer.observe_all(&work, &known, priority, &mut early);
        batch.known = Some(known);
        work = once_each(batch.apply_round(&tx, ctx, work, observed)?);
    }
    batch.finish(tx, ctx)
}

/// `paths` without repeats, in their first order.
fn once_each(paths: Vec<RelPath>) -> Vec<RelPath> {
    let mut seen: HashSet<RelPath> = HashSet::with_capacity(paths.len());
    paths.into_iter().filter(|p| seen.insert(p.clone())).collect()
}

/// The latest recorded state of each path, read once for the readers (what they can skip)
/// and the batch.
fn latest_of(conn: &Connection, work: &[RelPath]) -> rusqlite::Result<HashMap<RelPath, Latest>> {
    let mut known = HashMap::with_capacity(work.len());
    for path in work {
        if let Some(latest) = sql::latest(conn, path)? {
            known.insert(path.clone(), latest);
        }
    }
    Ok(known)
}

/// A path a walk found (or recorded and not found), with its latest recorded state.
pub struct Walked {
    pub path: RelPath,
    /// Boxed: a first index holds a million of these, nearly all without one.
    pub latest: Option<Box<Latest>>,
    /// The walk saw a regular file here.
    pub file: bool,
}

// A first index holds one per file: a million of them are 40 MB.
const _: () = assert!(std::mem::size_of::<Walked>() <= 40);

/// Paths a walk found, each directory already watched by the walk: recorded in transactions
/// of `CHUNKS_PER_COMMIT` batches of `WALKED_BATCH` paths, so a first index of any size runs in
/// bounded memory, while readers keep reading, hashing and compressing up to a batch ahead.
pub fn record_walked(
    conn: &mut Connection,
    ctx: &mut Context,
    walked: Vec<Walked>,
    who: Attribution,
    progress: Option<&ProgressBar>,
) -> rusqlite::Result<Recorded> {
    let observer = ctx.observer();
    // One copy of each path (a first index holds a million): only the known ones twice.
    let mut work = walked;
    let mut known: HashMap<RelPath, Latest> = HashMap::new();
    for w in &mut work {
        if let Some(latest) = w.latest.take() {
            known.insert(w.path.clone(), *latest);
        }
    }
    let feed = Feed::new(work.len(), WALKED_BATCH);
    let read_one = |i: usize| observer.observe_one(&work[i].path, work[i].file, progress);
    std::thread::scope(|scope| {
        for _ in 0..READERS.min(work.len()) {
            scope.spawn(|| feed.serve(read_one));
        }
        let _cancel = CancelOnDrop(&feed);
        let mut all = Recorded::default();
        for group in work.chunks(WALKED_BATCH * CHUNKS_PER_COMMIT) {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut batch = Batch::new(who.into(), false);
            for chunk in group.chunks(WALKED_BATCH) {
                let observed = feed.take(chunk.len());
                let paths: Vec<RelPath> = chunk.iter().map(|w| w.path.clone()).collect();
                let chunk_known = paths.iter().filter_map(|p| known.remove_entry(p)).collect();
                batch.known = Some(chunk_known);
                let observed = observed.into_iter().map(|obs| (obs, None)).collect();
                batch.apply_round(&tx, ctx, paths, observed)?;
            }
            all.absorb(batch.finish(tx, ctx)?);
        }
        Ok(all)
    })
}

const WALKED_BATCH: usize = 2048;
/// Walked batches per transaction: every commit rewrites the index pages its random hash keys
/// touched, so fewer, larger commits write far less.
const CHUNKS_PER_COMMIT: usize = 8;

struct Batch {
    follow_new_dirs: bool,
    /// For a walked batch: the latest state of each of its paths, read with the walk (a path
    /// missing here has none).
    known: Option<HashMap<RelPath, Latest>>,
    who: Who,
    now_ms: i64,
    checked_ns: i64,
    /// When the observation being applied was taken: `checked_ns`, or its early read's time.
    read_at: i64,
    file_blobs: Vec<Hash>,
    out: Recorded,
}

impl Batch {
    fn new(who: Who, follow_new_dirs: bool) -> Self {
        let checked_ns = now_ns();
        Self {
            follow_new_dirs,
            known: None,
            who,
            now_ms: now_ms(),
            checked_ns,
            read_at: checked_ns,
            file_blobs: Vec::new(),
            out: Recorded::default(),
        }
    }

    /// Applies one round of observations; returns the children of new directories to follow.
    fn apply_round(
        &mut self,
        conn: &Connection,
        ctx: &mut Context,
        work: Vec<RelPath>,
        observed: Vec<Observed>,
    ) -> rusqlite::Result<Vec<RelPath>> {
        let mut next = Vec::new();
        // Removals first: a directory moved away must drop its watches before the same
        // inode is watched again under its new name.
        let (gone, here): (Vec<_>, Vec<_>) = work
            .into_iter()
            .zip(observed)
            .partition(|(_, (obs, _))| matches!(obs, Observation::Absent | Observation::Special));
        for (path, (obs, early_at)) in gone.into_iter().chain(here) {
            let (obs, read_at) = match early_at {
                // Read early in a directory since moved away or removed: no event says what
                // became of it there, so it is read again.
                Some(_) if !in_watched_dir(ctx, &path) => {
                    let now = now_ns();
                    (observe(&ctx.root, &path, ctx.max_file_size, &ctx.blobs), now)
                }
                Some(at) => (obs, at),
                None => (obs, self.checked_ns),
            };
            self.read_at = read_at;
            self.apply(conn, ctx, &path, obs, &mut next)?;
        }
        Ok(next)
    }

    /// Makes the batch's blob files durable, then commits its rows.
    fn finish(self, tx: rusqlite::Transaction<'_>, ctx: &Context) -> rusqlite::Result<Recorded> {
        if let Err(e) = ctx.blobs.sync_dirs(&self.file_blobs) {
            return Err(rusqlite::Error::ToSqlConversionFailure(Box::new(e)));
        }
        tx.commit()?;
        Ok(self.out)
    }

    fn latest(&mut self, conn: &Connection, path: &RelPath) -> rusqlite::Result<Option<Latest>> {
        match self.known.as_mut() {
            Some(known) => Ok(known.remove(path)),
            None => sql::latest(conn, path),
        }
    }

    fn apply(
        &mut self,
        conn: &Connection,
        ctx: &mut Context,
        path: &RelPath,
        obs: Observation,
        next: &mut Vec<RelPath>,
    ) -> rusqlite::Result<()> {
        match obs {
            Observation::Absent | Observation::Special => self.record_absent(conn, ctx, path),
            Observation::Present(present) => self.record_present(conn, ctx, path, present, next),
            Observation::Unstable => {
                ctx.stats.unstable.fetch_add(1, Ordering::Relaxed);
                self.out.requeue.push(path.clone());
                Ok(())
            }
            Observation::Unreadable(err) => {
                ctx.stats.unreadable.fetch_add(1, Ordering::Relaxed);
                ctx.stats.set_error(format!("cannot read {path}: {err}"));
                // Known by its metadata, so the turn lists it and a rollback names it.
                match unreadable_file(&ctx.root, path) {
                    Some(present) => self.record_present(conn, ctx, path, present, next),
                    None => Ok(()),
                }
            }
            Observation::StoreFailed(err) => {
                let fault = StorageFault::from_io(&format!("cannot store {path}"), &err);
                ctx.stats.storage_failed(&fault);
                self.out.failed.push(path.clone());
                self.out.fault = Some(fault);
                Ok(())
            }
        }
    }

    /// An ignore file written, created or deleted changes what is tracked in its directory:
    /// the rules are re-read, and the directory is rescanned after this batch.
    fn reload_if_ignore_file(&mut self, ctx: &mut Context, path: &RelPath) {
        if IgnoreRules::is_ignore_file(path) {
            let changed = self.out.rules_changed.get_or_insert_with(|| RulesChanged {
                before: ctx.rules.clone(),
                dirs: Vec::new(),
            });
            changed.dirs.push(path.parent());
            ctx.rules.reload_dir(path.parent().as_ref());
            ctx.said_refusals();
        }
    }

    fn record_present(
        &mut self,
        conn: &Connection,
        ctx: &mut Context,
        path: &RelPath,
        present: Present,
        next: &mut Vec<RelPath>,
    ) -> rusqlite::Result<()> {
        let is_dir = present.state.is_dir();
        count_saved(ctx, present.saved);
        if is_own_temp(conn, path)? {
            // A rollback's temp file: never a version; the journal names it.
            discard_streamed(ctx, &present);
            return Ok(());
        }
        if ignored_with_parents(&ctx.rules, path, is_dir) {
            discard_streamed(ctx, &present);
            return untrack(conn, ctx, path);
        }
        self.reload_if_ignore_file(ctx, path);
        let latest = self.latest(conn, path)?;
        if let Some(latest) = latest.as_ref().filter(|l| l.state == present.state) {
            discard_streamed(ctx, &present);
            sql::set_path_state(conn, latest.path_id, latest.seq, &present.stat, self.read_at)?;
            if is_dir && !ctx.watches.is_watched(path) {
                // A directory unwatched since it was recorded: maybe not the one recorded (it
                // was removed or moved away and another made in its place), so
                // what is in it and what was recorded in it are all read again.
                ctx.watches.watch(path);
                if self.follow_new_dirs {
                    list_children(ctx, path, next);
                    next.extend(
                        sql::present_under::<Vec<_>>(conn, path)?
                            .into_iter()
                            .map(|(p, _)| p),
                    );
                }
            }
            return Ok(());
        }
        if latest.as_ref().is_some_and(|l| l.state.is_dir()) {
            self.record_absent_beneath(conn, ctx, path)?;
        }
        self.register_blob(conn, ctx, &present)?;
        let path_id = sql::ensure_path(conn, path)?;
        let who = self.who.of_file(path, || {
            crate::watch::writers::handle_of(&path.to_abs(&ctx.root.path))
        });
        let seq = sql::insert_version(
            conn,
            path_id,
            &present.state,
            who.origin,
            who.turn_id,
            who.decided,
            self.now_ms,
        )?;
        sql::set_path_state(conn, path_id, seq, &present.stat, self.read_at)?;
        self.out.versions += 1;
        if matches!(&present.state, State::File(f) if f.is_too_large()) {
            ctx.stats.too_large.fetch_add(1, Ordering::Relaxed);
        }
        if is_dir {
            // Armed before the listing: a file written into the new directory after the
            // listing has its own event, one written before it is in the listing.
            ctx.watches.watch(path);
            if self.follow_new_dirs {
                list_children(ctx, path, next);
            }
        }
        Ok(())
    }

    fn register_blob(&mut self, conn: &Connection, ctx: &Context, present: &Present) -> rusqlite::Result<()> {
        let Some(blob) = &present.blob else {
            return Ok(());
        };
        if let Some(tmp) = &present.streamed
            && let Err(e) = ctx.blobs.commit_streamed(blob.hash, tmp)
        {
            return Err(rusqlite::Error::ToSqlConversionFailure(Box::new(e)));
        }
        if blob.inline.is_none() {
            self.file_blobs.push(blob.hash);
        }
        sql::insert_blob(conn, blob)
    }

    fn record_absent(
        &mut self,
        conn: &Connection,
        ctx: &mut Context,
        path: &RelPath,
    ) -> rusqlite::Result<()> {
        // A deleted ignore file lifts its rules: what it hid comes into view.
        self.reload_if_ignore_file(ctx, path);
        // The index, not the walk's copy of it: a directory recorded gone earlier in this
        // rescan has recorded everything beneath it already.
        let walked = self.known.as_mut().and_then(|known| known.remove(path)).is_some();
        let Some(latest) = sql::latest(conn, path)? else {
            if !walked {
                ctx.stats.vanished.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(());
        };
        if latest.state.is_dir() {
            self.record_absent_beneath(conn, ctx, path)?;
        }
        let who = self.who.of(path);
        self.insert_absent(conn, latest.path_id, who)
    }

    /// Everything recorded beneath a directory that is gone (or is no longer a directory).
    fn record_absent_beneath(
        &mut self,
        conn: &Connection,
        ctx: &mut Context,
        dir: &RelPath,
    ) -> rusqlite::Result<()> {
        ctx.watches.unwatch_tree(dir);
        self.out.dirs_gone = true;
        let who = self.who.of(dir);
        for (_, latest) in sql::present_under::<Vec<_>>(conn, dir)? {
            self.insert_absent(conn, latest.path_id, who)?;
        }
        Ok(())
    }

    fn insert_absent(&mut self, conn: &Connection, path_id: i64, who: Attribution) -> rusqlite::Result<()> {
        sql::insert_version(
            conn,
            path_id,
            &State::Absent,
            who.origin,
            who.turn_id,
            who.decided,
            self.now_ms,
        )?;
        sql::clear_path_state(conn, path_id)?;
        self.out.versions += 1;
        Ok(())
    }
}

fn count_saved(ctx: &Context, saved: Saved) {
    match saved {
        Saved::Nothing => {}
        Saved::Read => {
            ctx.stats.unchanged_by_stat.fetch_add(1, Ordering::Relaxed);
        }
        Saved::Store => {
            ctx.stats.unchanged_by_hash.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The path lies in the workspace root or in a directory still watched.
fn in_watched_dir(ctx: &Context, path: &RelPath) -> bool {
    path.parent().is_none_or(|dir| ctx.watches.is_watched(&dir))
}

fn discard_streamed(ctx: &Context, present: &Present) {
    if let Some(tmp) = &present.streamed {
        ctx.blobs.discard(tmp);
    }
}

/// A temp file one of our rollbacks made: its name carries a tag the journal holds (a user's
/// file with the same prefix is recorded like any other).
fn is_own_temp(conn: &Connection, path: &RelPath) -> rusqlite::Result<bool> {
    match crate::fs::temp::TempNames::tag_of(path.file_name()) {
        Some(tag) => crate::store::journal::is_temp_tag(conn, tag),
        None => Ok(false),
    }
}

/// Queues the tracked children of a directory just found (new, or never watched).
fn list_children(ctx: &mut Context, dir: &RelPath, next: &mut Vec<RelPath>) {
    let Ok(listing) = std::fs::read_dir(dir.to_abs(&ctx.root.path)) else {
        return;
    };
    let children: Vec<_> = listing.flatten().collect();
    if children
        .iter()
        .any(|c| IgnoreRules::is_ignore_file(&dir.join(c.file_name().as_encoded_bytes())))
    {
        ctx.rules.reload_dir(Some(dir));
        ctx.said_refusals();
    }
    for child in children {
        let path = dir.join(child.file_name().as_encoded_bytes());
        let is_dir = child.file_type().is_ok_and(|t| t.is_dir());
        if !ctx.rules.is_ignored(&path, is_dir) {
            next.push(path);
        }
    }
}
