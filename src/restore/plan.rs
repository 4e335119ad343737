//! The plan: every tracked path changed since the target, its action, and whether it may be
//! touched. Building it reads the index and the disk but changes nothing: it is the dry run.

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;

use super::Workspace;
use super::own::Own;
pub use super::steps::{Note, Ordered, Step};
use crate::fs::feed::map_parallel;
use crate::fs::ops::FsError;
use crate::fs::read::{Expected, Observation, probe_expecting, unreadable_file};
use crate::model::answer::{Action, NoteCode, OnConflict};
use crate::model::{Content, Hash, RACY_NS, StatKey, State};
use crate::paths::RelPath;
use crate::sessions::Lineage;
use crate::store::{journal, read_blob, sql};

#[derive(Debug, Default)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub conflicts: Vec<Note>,
    pub not_restorable: Vec<Note>,
    /// Paths whose disk differs from their latest version (whatever conflict is shown for
    /// them): with `force`, what they hold is recorded before the rollback overwrites it.
    pub changed_on_disk: Vec<RelPath>,
    /// Verified content of every file the plan writes.
    pub contents: HashMap<Hash, Vec<u8>>,
    /// Paths whose target keeps someone's later change by a merge (`own`), and whose.
    pub merged: Vec<Note>,
    /// Some path is the session's only because its turn was open (`own::decide_path`).
    pub turn_wide: bool,
}

impl Plan {
    /// Puts `sub`, the same plan built again for the paths at or beneath `scope` only, in place
    /// of what this plan says about those paths, keeping the order of every list (`sub`'s
    /// paths are a subset of this plan's, in the same order: one builder made both).
    pub fn replace_within(&mut self, sub: Plan, scope: &[RelPath]) {
        let scope: HashSet<&RelPath> = scope.iter().collect();
        let in_scope = |path: &RelPath| enclosing(&scope, path).is_some();
        let mut fresh = sub.steps.into_iter().peekable();
        let steps = std::mem::take(&mut self.steps);
        for step in steps {
            if !in_scope(&step.path) {
                self.steps.push(step);
            } else if fresh.peek().is_some_and(|f| f.path == step.path) {
                self.steps.extend(fresh.next());
            }
        }
        self.steps.extend(fresh);
        replace_notes(&mut self.conflicts, sub.conflicts, &self.steps, &in_scope);
        replace_notes(
            &mut self.not_restorable,
            sub.not_restorable,
            &self.steps,
            &in_scope,
        );
        self.changed_on_disk.retain(|path| !in_scope(path));
        self.changed_on_disk.extend(sub.changed_on_disk);
        self.contents.extend(sub.contents);
        self.merged.retain(|note| !in_scope(&note.path));
        self.merged.extend(sub.merged);
        self.turn_wide |= sub.turn_wide;
    }
}

/// A plan's notes (at most one per step, in the steps' order) with those in scope taken from
/// `fresh` instead.
fn replace_notes(
    notes: &mut Vec<Note>,
    fresh: Vec<Note>,
    steps: &[Step],
    in_scope: &dyn Fn(&RelPath) -> bool,
) {
    let mut by_path: HashMap<RelPath, Note> = std::mem::take(notes)
        .into_iter()
        .filter(|n| !in_scope(&n.path))
        .chain(fresh)
        .map(|n| (n.path.clone(), n))
        .collect();
    notes.extend(steps.iter().filter_map(|step| by_path.remove(&step.path)));
}

/// Plans a rollback to the state at `boundary`. With an `owner` session, only the session's
/// own writes are taken back, others' kept or a conflict (`own`, G4 a); the disk is always
/// checked against the record (G4 b).
pub fn build(
    conn: &Connection,
    ws: &Workspace,
    owner: Option<&Lineage>,
    boundary: i64,
    only: &[RelPath],
) -> Result<Plan, super::RollbackError> {
    let mut changed = journal::changed_since(conn, boundary)?;
    // A restore of `src/main.rs` also makes `src` again if it is gone: only ever to create
    // the directories above a path asked for, never to remove one.
    let within = |path: &RelPath| only.is_empty() || only.iter().any(|p| path.starts_with(p));
    let above = |path: &RelPath| only.iter().any(|p| p.starts_with(path));
    changed.retain(|(_, path)| within(path) || above(path));
    changed.sort_by(|a, b| a.1.cmp(&b.1));
    let started = std::time::Instant::now();
    let mut steps = Vec::with_capacity(changed.len());
    let (mut contents, mut merged, mut turn_wide) = (HashMap::new(), Vec::new(), false);
    for (path_id, path) in changed {
        let Some((current_seq, current)) = journal::version_at(conn, path_id, i64::MAX)? else {
            continue;
        };
        let (target_seq, target) = journal::rollback_target(conn, path_id, boundary)?;
        // Untracked then or now: not the rollback's to touch.
        if current == target || current.is_untracked() || target.is_untracked() {
            continue;
        }
        let makes_a_dir_above = current == State::Absent && target == State::Dir;
        if !within(&path) && !makes_a_dir_above {
            continue;
        }
        let step = Step {
            path,
            path_id,
            current_seq,
            current,
            target_seq,
            target,
            checked: None,
        };
        let Some(owner) = owner else {
            steps.push((step, None));
            continue;
        };
        let (own, by_window) = super::own::decide_path(conn, ws, step, boundary, owner)?;
        turn_wide |= by_window && !matches!(own, Own::NotOurs);
        match own {
            Own::NotOurs => {}
            Own::Step(step, foreign) => steps.push((step, foreign)),
            Own::Merged(step, bytes, kept) => {
                contents.insert(Hash::of(&bytes), bytes);
                merged.push(kept);
                steps.push((step, None));
            }
        }
    }
    // A directory above is made only for a path asked for that will be present in it.
    let needed: Vec<RelPath> = steps
        .iter()
        .filter(|(step, _)| within(&step.path) && step.target.is_present())
        .map(|(step, _)| step.path.clone())
        .collect();
    steps.retain(|(step, _)| within(&step.path) || needed.iter().any(|p| p.starts_with(&step.path)));
    let indexed_at = std::time::Instant::now();
    merged.retain(|note: &Note| steps.iter().any(|(step, _)| step.path == note.path));
    let mut plan = check_with(conn, ws, steps, contents);
    plan.merged = merged;
    plan.turn_wide = turn_wide;
    tracing::debug!(
        index_ms = (indexed_at - started).as_millis() as u64,
        check_ms = indexed_at.elapsed().as_millis() as u64,
        "rollback plan timings"
    );
    Ok(plan)
}

/// Checks planned steps, each with its foreign change if any: the disk, what the content a
/// step needs and whether it can be restored. The plan of a rollback and of a redo alike.
pub(super) fn check(conn: &Connection, ws: &Workspace, steps: Vec<(Step, Option<Note>)>) -> Plan {
    check_with(conn, ws, steps, HashMap::new())
}

/// `check`, with the content of targets not stored yet given (a hunk revert's).
pub(super) fn check_with(
    conn: &Connection,
    ws: &Workspace,
    steps: Vec<(Step, Option<Note>)>,
    contents: HashMap<Hash, Vec<u8>>,
) -> Plan {
    let mut plan = Plan {
        contents,
        ..Plan::default()
    };
    // The disk is checked for every path, conflicting or not: with `force` the apply
    // re-checks each path against exactly what was seen here.
    let started = std::time::Instant::now();
    let expected = expectations(conn, &steps);
    let expected_at = std::time::Instant::now();
    let on_disk = check_disks(ws, &steps, &expected);
    let mut collisions =
        super::case::collisions(conn, ws, &steps.iter().map(|(step, _)| step).collect::<Vec<_>>());
    tracing::debug!(
        stat_cache_ms = (expected_at - started).as_millis() as u64,
        disk_ms = expected_at.elapsed().as_millis() as u64,
        proven = expected.iter().flatten().filter(|e| e.stat_proves).count(),
        "rollback disk check timings"
    );
    for ((mut step, foreign), (on_disk, checked)) in steps.into_iter().zip(on_disk) {
        step.checked = checked;
        if on_disk
            .as_ref()
            .is_some_and(|n| n.code == NoteCode::ChangedOnDisk)
        {
            plan.changed_on_disk.push(step.path.clone());
        }
        let collision = collisions.remove(&step.path);
        if let Some(note) = foreign
            .or(collision)
            .or(on_disk)
            .or_else(|| content_not_stored(&step))
        {
            plan.conflicts.push(note);
        }
        if let Some(note) = load_target(conn, ws, &step, &mut plan.contents) {
            plan.not_restorable.push(note);
        }
        plan.steps.push(step);
    }
    plan
}

/// G4: a file whose current content is over `max_file_size` was never stored; rewriting or
/// deleting it would lose that content for good (no redo could bring it back).
fn content_not_stored(step: &Step) -> Option<Note> {
    let State::File(current) = &step.current else {
        return None;
    };
    (current.is_too_large() && step.action() != Action::SetMode).then(|| Note {
        path: step.path.clone(),
        code: NoteCode::ContentNotStored,
        reason: format!(
            "its content now ({} bytes, over max_file_size) was never stored: rolling it back would lose it for good",
            current.size
        ),
    })
}

/// `check_disk` for every step, read in parallel (each path is opened and hashed unless its
/// stat proves it unchanged).
fn check_disks(
    ws: &Workspace,
    steps: &[(Step, Option<Note>)],
    expected: &[Option<Expected>],
) -> Vec<(Option<Note>, Option<StatKey>)> {
    const READERS: usize = 8;
    map_parallel(steps.len(), READERS, |i| {
        check_disk(ws, &steps[i].0, expected[i].as_ref())
    })
}

/// What the stat cache says of each step's path when it describes the step's current state:
/// a file whose stat still equals it, taken long enough after its mtime (not racy), holds
/// that state without being read, as capture and the restart trust it.
fn expectations(conn: &Connection, steps: &[(Step, Option<Note>)]) -> Vec<Option<Expected>> {
    let expected = |step: &Step| {
        let latest = sql::latest(conn, &step.path).ok().flatten()?;
        (latest.seq == step.current_seq).then(|| Expected {
            stat: latest.stat,
            stat_proves: latest.stat.mtime_ns + RACY_NS < latest.checked_ns,
            state: latest.state,
        })
    };
    steps.iter().map(|(step, _)| expected(step)).collect()
}

/// G4 (b): the disk must hold what was last recorded, and no symlink may stand where the
/// plan needs a directory.
/// What the disk holds at the step's path against its latest recorded state: a conflict, if
/// any, and the stat the apply re-checks before changing the path.
fn check_disk(ws: &Workspace, step: &Step, expected: Option<&Expected>) -> (Option<Note>, Option<StatKey>) {
    let conflict = |code, reason: String| {
        Some(Note {
            path: step.path.clone(),
            code,
            reason,
        })
    };
    if let Err(err @ FsError::SymlinkInTheWay(_)) = ws.root.parent_of(&step.path) {
        return (conflict(NoteCode::SymlinkInTheWay, err.to_string()), None);
    }
    let unreadable = |why: &str, checked: Option<StatKey>| {
        let reason = format!(
            "cannot read it ({why}): filewatchd can neither check it nor keep what it holds, so only force replaces it, and its content is then lost"
        );
        (conflict(NoteCode::Unreadable, reason), checked)
    };
    let (on_disk, checked) = match probe_expecting(&ws.root, &step.path, ws.max_file_size, expected) {
        Observation::Absent => (State::Absent, None),
        // Its stat proves it unchanged since it was recorded unreadable: it still is. The
        // shortcut proves nothing it can keep.
        Observation::Present(present) if present.state.is_unreadable() => {
            let checked = (present.state == step.current).then_some(present.stat);
            return unreadable("unchanged since it was recorded so", checked);
        }
        Observation::Present(present) => (present.state, Some(present.stat)),
        Observation::Unstable => {
            return (
                conflict(NoteCode::ChangedOnDisk, "it is being written right now".into()),
                None,
            );
        }
        Observation::Special => {
            let reason = "it is now a FIFO, socket or device".into();
            return (conflict(NoteCode::ChangedOnDisk, reason), None);
        }
        Observation::Unreadable(e) | Observation::StoreFailed(e) => {
            // Known by its stat only: `force` may replace it if that is still what was recorded.
            let checked = unreadable_file(&ws.root, &step.path)
                .filter(|seen| seen.state == step.current)
                .map(|seen| seen.stat);
            return unreadable(&e.to_string(), checked);
        }
    };
    if on_disk == step.current {
        return (None, checked);
    }
    let reason = "its content on disk differs from the latest recorded version (changed a moment ago)";
    (conflict(NoteCode::ChangedOnDisk, reason.into()), checked)
}

/// Verifies and loads the content a step will write (G9: a file known by hash only, or whose
/// blob is damaged, is named, never silently skipped).
fn load_target(
    conn: &Connection,
    ws: &Workspace,
    step: &Step,
    contents: &mut HashMap<Hash, Vec<u8>>,
) -> Option<Note> {
    let State::File(file) = &step.target else {
        return None;
    };
    let note = |code, reason: String| {
        Some(Note {
            path: step.path.clone(),
            code,
            reason,
        })
    };
    let hash = match file.content {
        Content::Unreadable => {
            let reason =
                "filewatchd could not read it then (permission denied): its content was never recorded";
            return note(NoteCode::Unreadable, reason.into());
        }
        // Only its bits change.
        _ if matches!(&step.current, State::File(c) if c.hash() == file.hash()) => return None,
        Content::TooLarge(_) => {
            return note(
                NoteCode::TooLarge,
                format!(
                    "it was over max_file_size ({} bytes): only its size and hash were recorded",
                    file.size
                ),
            );
        }
        Content::Stored(hash) => hash,
    };
    if contents.contains_key(&hash) {
        return None;
    }
    match read_blob(conn, &ws.blobs, hash) {
        Ok(bytes) => {
            contents.insert(hash, bytes);
            None
        }
        Err(e) => note(
            NoteCode::ContentMissing,
            format!("its recorded content cannot be read back: {e}"),
        ),
    }
}

/// What a plan does under a conflict policy.
#[derive(Debug, Default)]
pub struct Decision {
    pub apply: Vec<Step>,
    pub skipped: Vec<Note>,
    pub refused: bool,
}

pub fn decide(plan: &Plan, on_conflict: OnConflict) -> Decision {
    let mut blocked: HashMap<RelPath, &Note> =
        plan.not_restorable.iter().map(|n| (n.path.clone(), n)).collect();
    match on_conflict {
        OnConflict::Abort if !plan.conflicts.is_empty() || !blocked.is_empty() => {
            return Decision {
                refused: true,
                ..Decision::default()
            };
        }
        OnConflict::Skip => blocked.extend(plan.conflicts.iter().map(|n| (n.path.clone(), n))),
        OnConflict::Abort | OnConflict::Force => {}
    }
    let mut decision = Decision::default();
    let blocked_dirs: HashSet<&RelPath> = blocked.keys().collect();
    for step in &plan.steps {
        if let Some(note) = blocked.get(&step.path) {
            decision.skipped.push((*note).clone());
            continue;
        }
        if let Some(dir) = enclosing(&blocked_dirs, &step.path) {
            let reason = format!("it lies beneath {dir}, which is left as it is");
            decision.skipped.push(Note {
                path: step.path.clone(),
                code: NoteCode::BeneathSkipped,
                reason,
            });
            continue;
        }
        decision.apply.push(step.clone());
    }
    decision
}

/// The member of `dirs` that is `path` or one of its ancestors: a walk up the path's
/// components, so checking every step of a 10,000-path plan against 10,000 blocked or
/// re-planned paths is linear, not quadratic.
pub(crate) fn enclosing<'a>(dirs: &HashSet<&'a RelPath>, path: &RelPath) -> Option<&'a RelPath> {
    let mut at = Some(path.clone());
    while let Some(candidate) = at {
        if let Some(found) = dirs.get(&candidate) {
            return Some(*found);
        }
        at = candidate.parent();
    }
    None
}
