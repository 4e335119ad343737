//! Applying a plan's steps to the disk, once the journal holds them: each path is re-checked
//! right before it is changed; removals run before creations (deepest directories first,
//! then shallowest first); new content goes temp + fsync + rename (`install`, `durable`);
//! directories are fsynced; then every done step is checked against its target (`verify`).
//! Recording the results as versions of origin `rollback`, or putting everything back, is
//! `finish`'s. Recovery runs the same code on the steps a crash left undone.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;

use super::Workspace;
use super::pause::PauseHook;
use super::plan::{Note, Ordered, Step};
use crate::fs::ops::{FsError, Parent, file_mode};
use crate::fs::temp::TempNames;
use crate::model::answer::NoteCode;
use crate::model::{FileState, Hash, StatKey, State};
use crate::paths::RelPath;
use crate::platform::FsSync;
use crate::store::read_blob;

mod durable;
mod fallback;
mod held;
mod install;
mod verify;

pub use verify::Cause;

/// What an exchange (or mode `rename`'s kept link, `fallback`) left under the temp name.
enum Swapped {
    Expected,
    Ours,
    Foreign,
}

/// How a step is checked before its first change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Right after planning: the stat seen by the plan's disk check must still hold.
    Planned,
    /// At start-up, after a crash: the disk may hold the expected state, the target, or
    /// nothing (between a removal and an install).
    Recovery,
}

/// Only the permission bits differ: the file is not rewritten.
fn same_content(step: &Step) -> bool {
    matches!((&step.current, &step.target), (State::File(c), State::File(t)) if c.hash() == t.hash())
}

/// Where one step ended.
#[derive(Debug, Clone)]
pub enum Finished {
    Done(Option<StatKey>),
    /// Left exactly as it was: someone else changed it while the rollback ran (a conflict
    /// found late).
    Skipped(Note),
    Kept(Note),
    /// An I/O error, the path not at its target when checked after applying, or the root
    /// gone: the rollback failed.
    Failed(Note, Cause),
}

/// What applying a plan did: each step's end, and whether a temp file could not be removed
/// (a read-only file system): the journal keeps it named until one is.
#[derive(Debug)]
pub struct Applied {
    pub results: Vec<Finished>,
    pub temps_left: bool,
}

/// Changes the files of every step (indexed by its `ord`), in dependency order.
pub fn execute(
    conn: &Connection,
    ws: &Workspace,
    temps: &TempNames,
    steps: &[Ordered],
    contents: &mut HashMap<Hash, Vec<u8>>,
    check: Check,
) -> Applied {
    let mut run = Run {
        conn,
        disk: Disk {
            ws,
            temps,
            check,
            root_lost: AtomicBool::new(false),
            temps_left: AtomicBool::new(false),
            held: held::HeldDirs::default(),
            pause: PauseHook::from_knobs(),
        },
        contents,
        results: vec![None; steps.len()],
        touched: HashMap::new(),
        // Opened before the first change: its `syncfs` reports any write-back error since.
        sync: FsSync::open(crate::platform::sys::AsFd::as_fd(ws.root.fd())),
    };
    run.disk.pause.before_first();
    let [files_out, dirs_out, dirs_in, files_in] = phases(steps);
    for (phase, indexes) in [(0, files_out), (1, dirs_out), (2, dirs_in)] {
        for i in indexes {
            if run.results[i].is_some() {
                continue;
            }
            if let Err(finished) = run.step(phase, &steps[i]) {
                run.results[i] = Some(finished);
            }
        }
    }
    let started = std::time::Instant::now();
    run.install_all(steps, &files_in);
    let installed_at = std::time::Instant::now();
    run.sync_dirs(steps);
    let synced_at = std::time::Instant::now();
    for (i, Ordered { step, .. }) in steps.iter().enumerate() {
        if run.results[i].is_none() {
            run.results[i] = Some(Finished::Done(stat_now(ws, &step.path)));
        }
    }
    let mut results: Vec<Finished> = run.results.iter_mut().filter_map(Option::take).collect();
    // "done" is what the disk says, not what the system calls answered.
    verify::verify(ws, steps, &mut results);
    tracing::debug!(
        files_ms = (installed_at - started).as_millis() as u64,
        dirs_ms = (synced_at - installed_at).as_millis() as u64,
        verify_ms = synced_at.elapsed().as_millis() as u64,
        "rollback apply timings"
    );
    run.sweep_temps(steps, &results);
    // A directory moved or swapped while the rollback ran took temp files along.
    if results.iter().any(raced) && !temps.sweep(&ws.root) {
        run.disk.left_a_temp();
    }
    Applied {
        results,
        temps_left: run.disk.temps_left.into_inner(),
    }
}

/// Someone else moved things about while this step ran: its temp file may be elsewhere now.
fn raced(finished: &Finished) -> bool {
    match finished {
        Finished::Skipped(note) => matches!(
            note.code,
            NoteCode::SymlinkInTheWay | NoteCode::NoParent | NoteCode::Appeared | NoteCode::ChangedOnDisk
        ),
        Finished::Failed(..) => true,
        _ => false,
    }
}

/// The order of the four phases: remove files and symlinks, remove directories (deepest
/// first), create directories (shallowest first), install files and symlinks.
fn phases(steps: &[Ordered]) -> [Vec<usize>; 4] {
    let mut order: [Vec<usize>; 4] = Default::default();
    for (i, Ordered { step, .. }) in steps.iter().enumerate() {
        let (current, target) = (&step.current, &step.target);
        let removes_entry = matches!(current, State::File(_) | State::Symlink { .. })
            && matches!(target, State::Absent | State::Dir);
        if removes_entry {
            order[0].push(i);
        }
        if current.is_dir() && !target.is_dir() {
            order[1].push(i);
        }
        if target.is_dir() && !current.is_dir() {
            order[2].push(i);
        }
        if matches!(target, State::File(_) | State::Symlink { .. }) {
            order[3].push(i);
        }
    }
    let depth = |i: &usize| {
        steps[*i]
            .step
            .path
            .as_bytes()
            .iter()
            .filter(|&&b| b == b'/')
            .count()
    };
    order[1].sort_by_key(|i| std::cmp::Reverse(depth(i)));
    order[2].sort_by_key(depth);
    order
}

/// A file's new content, to be written under a temp name beside it. It holds no descriptor:
/// a rollback of thousands of files would hold thousands open.
struct TempWrite {
    temp: String,
    hash: Hash,
    mode: u32,
}

/// What every thread of an apply shares: the workspace, the temp names, the check, and the
/// findings any of them may make.
struct Disk<'a> {
    ws: &'a Workspace,
    temps: &'a TempNames,
    check: Check,
    /// The root was found moved away or replaced: nothing more is changed, but
    /// for the renames other install threads had under way.
    root_lost: AtomicBool,
    /// A temp file could not be removed (a read-only file system): the journal keeps it named.
    temps_left: AtomicBool,
    /// The directories temp files were made in, to remove them through.
    held: held::HeldDirs,
    pause: PauseHook,
}

struct Run<'a> {
    conn: &'a Connection,
    disk: Disk<'a>,
    contents: &'a mut HashMap<Hash, Vec<u8>>,
    results: Vec<Option<Finished>>,
    /// Directories whose entries changed, each with one path inside it (to open it by).
    touched: HashMap<Option<RelPath>, RelPath>,
    /// The workspace's file system, synced once for all temp files and once for all
    /// directory entries (`durable`); `None`: each is fsynced on its own.
    sync: Option<FsSync>,
}

impl Run<'_> {
    /// One phase of one step. `Err` ends the step (done early, skipped or kept).
    fn step(&mut self, phase: usize, step: &Ordered) -> Result<(), Finished> {
        let step = &step.step;
        self.disk.root_still_there(step)?;
        let parent = match self.disk.ws.root.parent_of(&step.path) {
            Ok(parent) => parent,
            // Its directory is gone, so the path is too: a removal is already done.
            Err(FsError::NoParent(_)) if !step.target.is_present() => return Err(Finished::Done(None)),
            Err(err) => return Err(skipped(step, &err)),
        };
        if first_phase(phase, step) {
            self.disk.pre_check(&parent, step)?;
        }
        let path = &step.path;
        let result = match phase {
            0 => parent.unlink(path),
            1 => parent.rmdir(path),
            _ => parent.mkdir(path),
        };
        result.map_err(|e| match e {
            FsError::NotEmpty(_) => Finished::Kept(note(step, NoteCode::NotEmpty, e.to_string())),
            other => skipped(step, &other),
        })?;
        self.touched.insert(path.parent(), path.clone());
        self.disk.pause.tick();
        Ok(())
    }
}

/// The phase in which a step is checked: its first.
fn first_phase(phase: usize, step: &Step) -> bool {
    let removes_entry = matches!(step.current, State::File(_) | State::Symlink { .. })
        && matches!(step.target, State::Absent | State::Dir);
    let first = if removes_entry {
        0
    } else if step.current.is_dir() && !step.target.is_dir() {
        1
    } else if step.target.is_dir() {
        2
    } else {
        3
    };
    phase == first
}

impl Disk<'_> {
    /// The disk still holds what the plan expects, right before the change.
    fn pre_check(&self, parent: &Parent, step: &Step) -> Result<(), Finished> {
        if self.check == Check::Planned {
            let now = parent.stat(&step.path).map_err(|e| skipped(step, &e))?;
            let same = match (now.map(|s| StatKey::from_rustix(&s)), step.checked) {
                (None, None) => !step.current.is_present(),
                (Some(now), Some(checked)) => now == checked,
                _ => false,
            };
            if same {
                return Ok(());
            }
        }
        let on_disk = self.ws.state_of(&step.path).ok_or_else(|| changed(step))?;
        if on_disk == step.target {
            return Err(Finished::Done(stat_now(self.ws, &step.path)));
        }
        // Only a step that changes a path's kind passes through "absent" (removed, not yet
        // created); anywhere else an absent path was removed by someone else.
        let changes_kind = step.current.is_present()
            && step.target.is_present()
            && step.current.kind() != step.target.kind();
        let between = self.check == Check::Recovery && changes_kind && on_disk == State::Absent;
        if on_disk == step.current || between {
            return Ok(());
        }
        Err(changed(step))
    }

    /// Before each change of a rollback (not of putting one back, which restores the tree it
    /// changed, wherever it is now): the root is still where the user has it. Once it is not,
    /// every step left fails, and what was changed is put back.
    fn root_still_there(&self, step: &Step) -> Result<(), Finished> {
        let lost = self.root_lost.load(Ordering::SeqCst);
        if self.check == Check::Planned && !lost && !self.ws.root.still_at_path() {
            self.root_lost.store(true, Ordering::SeqCst);
        }
        self.root_not_lost(step)
    }

    /// Whether another thread found the root gone since this step's own check: then this
    /// step changes nothing either (at most the renames already under way when it was found
    /// go through, and are put back with the rest).
    fn root_not_lost(&self, step: &Step) -> Result<(), Finished> {
        if !self.root_lost.load(Ordering::SeqCst) {
            return Ok(());
        }
        let reason = format!(
            "the workspace root {} was moved away or replaced while the rollback ran",
            self.ws.root.path.display()
        );
        Err(Finished::Failed(
            note(step, NoteCode::WorkspaceLost, reason),
            Cause::WorkspaceLost,
        ))
    }

    /// Unlinks a temp file of ours; one that cannot be (a read-only file system) stays named
    /// by the journal.
    fn discard(&self, parent: &Parent, temp: &str) {
        if !parent.unlink_temp(temp) {
            self.left_a_temp();
        }
    }

    fn left_a_temp(&self) {
        self.temps_left.store(true, Ordering::SeqCst);
    }

    fn parent(&self, step: &Step) -> Result<Parent, Finished> {
        match self.ws.root.parent_of(&step.path) {
            Ok(parent) => Ok(parent),
            Err(FsError::NoParent(_)) if !step.target.is_present() => Err(Finished::Done(None)),
            Err(err) => Err(skipped(step, &err)),
        }
    }
}

impl Run<'_> {
    /// The last phase, files and symlinks: every path is checked and its content loaded here
    /// (the SQLite connection is this thread's), then the temp files are created and written
    /// in parallel and made durable (`durable`), then each is renamed into place right after
    /// its path is re-checked (`install`).
    fn install_all(&mut self, steps: &[Ordered], indexes: &[usize]) {
        let mut writes = Vec::new();
        let mut installable = Vec::new();
        let mut rewrites = HashSet::new();
        for &i in indexes {
            if self.results[i].is_some() {
                continue;
            }
            match self.stage(&steps[i]) {
                Ok(Some(write)) => {
                    if same_content(&steps[i].step) {
                        rewrites.insert(i);
                    }
                    writes.push((i, write));
                }
                Ok(None) => installable.push(i),
                Err(finished) => self.results[i] = Some(finished),
            }
        }
        let staged_at = std::time::Instant::now();
        let written = self.write_all(steps, &writes);
        let written_at = std::time::Instant::now();
        for ((i, _), result) in writes.into_iter().zip(written) {
            match result {
                // A failed write or sync is never retried as a success; that path
                // is not installed.
                Err(err) => self.results[i] = Some(skipped(&steps[i].step, &err)),
                Ok(_) => installable.push(i),
            }
        }
        installable.sort_unstable();
        self.install_each(steps, &installable, &rewrites);
        tracing::debug!(
            write_ms = (written_at - staged_at).as_millis() as u64,
            install_ms = written_at.elapsed().as_millis() as u64,
            "rollback install timings"
        );
    }

    /// Checks the path and prepares its new content: a file's to be written under a temp name
    /// beside it (returned), a symlink made there at once.
    fn stage(&mut self, Ordered { ord, step }: &Ordered) -> Result<Option<TempWrite>, Finished> {
        let parent = self.disk.parent(step)?;
        if first_phase(3, step) {
            self.disk.pre_check(&parent, step)?;
        }
        let temp = self.disk.temps.name(*ord);
        match &step.target {
            State::File(file) => self.stage_file(&parent, step, file, temp),
            State::Symlink { target } => {
                (parent.symlink_temp(&step.path, &temp, target)).map_err(|e| skipped(step, &e))?;
                self.disk.held.hold(&step.path, &parent);
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// A file's new content, or `None` for a mode-only step whose file has one name (its bits
    /// are set in place, on the inode checked). A mode-only step on a file with other names
    /// (hard links, maybe to a file outside the workspace) writes the file anew, as a content
    /// step does, and renames it in: no step changes an inode that is also someone else's.
    fn stage_file(
        &mut self,
        parent: &Parent,
        step: &Step,
        file: &FileState,
        temp: String,
    ) -> Result<Option<TempWrite>, Finished> {
        let now = parent.stat(&step.path).map_err(|e| skipped(step, &e))?;
        if same_content(step) {
            if now.as_ref().is_none_or(|s| s.st_nlink == 1) {
                return Ok(None);
            }
            if file.is_too_large() {
                let reason = "it has other names (hard links) and its content, over max_file_size, \
                    was never stored: it cannot be written anew, and its bits are not changed through them";
                return Err(Finished::Skipped(note(step, NoteCode::TooLarge, reason.into())));
            }
        }
        // A version that recorded its bits gets them; one that knows only its executable bit
        // keeps the bits the file has (an unreadable file's mode is what hid it: its
        // replacement gets the default).
        let keep = step.current.is_present() && !step.current.is_dir() && !step.current.is_unreadable();
        let mode = file_mode(
            now.map(|s| crate::platform::mode_bits(s.st_mode))
                .filter(|_| keep),
            file,
        );
        let unreadable = |why: String| {
            let source = std::io::Error::other(why);
            skipped(
                step,
                &FsError::Io {
                    path: step.path.to_text(),
                    source,
                },
            )
        };
        // The plan names a version whose content was not stored (`plan::load_target`).
        let hash = file
            .stored()
            .ok_or_else(|| unreadable("its content was never stored".into()))?;
        self.content(hash).map_err(|e| unreadable(e.to_string()))?;
        Ok(Some(TempWrite { temp, hash, mode }))
    }

    /// Every step not done may have left its temp file (a write that failed half-way, an
    /// install refused): each is removed, on every way out.
    fn sweep_temps(&mut self, steps: &[Ordered], results: &[Finished]) {
        for (i, Ordered { ord, step }) in steps.iter().enumerate() {
            if !matches!(results[i], Finished::Skipped(_) | Finished::Failed(..)) {
                continue;
            }
            let temp = self.disk.temps.name(*ord);
            if let Some(gone) = self.disk.held.remove(&step.path, &temp) {
                if !gone {
                    self.disk.left_a_temp();
                }
                continue;
            }
            // Every temp file made was made through a directory `held` keeps: with none held
            // for this path, a step whose directory cannot be opened (gone, or a symlink in the
            // way) made none, and no temp file is left to report.
            if let Ok(parent) = self.disk.ws.root.parent_of(&step.path)
                && matches!(parent.stat_temp(&step.path, &temp), Ok(Some(_)))
            {
                self.disk.discard(&parent, &temp);
            }
        }
    }

    fn content(&mut self, hash: Hash) -> Result<&[u8], crate::store::blobs::BlobError> {
        if !self.contents.contains_key(&hash) {
            let bytes = read_blob(self.conn, &self.disk.ws.blobs, hash)?;
            self.contents.insert(hash, bytes);
        }
        Ok(self.contents.get(&hash).map(Vec::as_slice).unwrap_or_default())
    }
}

fn note(step: &Step, code: NoteCode, reason: String) -> Note {
    Note {
        path: step.path.clone(),
        code,
        reason,
    }
}

/// A step that could not be done: someone else's change in the way (skipped, a conflict), or
/// an I/O error (failed).
fn skipped(step: &Step, err: &FsError) -> Finished {
    let code = match err {
        FsError::SymlinkInTheWay(_) => NoteCode::SymlinkInTheWay,
        FsError::Appeared(_) => NoteCode::Appeared,
        FsError::NoParent(_) => NoteCode::NoParent,
        FsError::NotEmpty(_) => NoteCode::NotEmpty,
        FsError::Io { source, .. } => {
            return Finished::Failed(
                note(step, NoteCode::IoError, err.to_string()),
                Cause::of_io(source),
            );
        }
    };
    Finished::Skipped(note(step, code, err.to_string()))
}

fn changed(step: &Step) -> Finished {
    Finished::Skipped(note(
        step,
        NoteCode::ChangedOnDisk,
        "it changed on disk while the rollback ran; left as it is".into(),
    ))
}

fn stat_now(ws: &Workspace, path: &RelPath) -> Option<StatKey> {
    let parent = ws.root.parent_of(path).ok()?;
    parent.stat(path).ok().flatten().map(|s| StatKey::from_rustix(&s))
}
