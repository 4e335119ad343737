//! The answer of a rollback, undo or redo: the plan path by path (with diff stats), the
//! conflicts with their reasons, what was skipped, what cannot be restored, and whether it
//! was applied. Stored with the rollback so a repeated operation id gets the same answer.

use rusqlite::Connection;

use super::Request;
use super::plan::{Decision, Note, Plan, Step};
use crate::model::answer::{Action, ActionLine, ActionStatus, NoteCode, Outcome, PathLine, Target};
use crate::model::{RollbackKind, State};
use crate::paths::RelPath;
use crate::store::blobs::BlobDir;
use crate::store::read_blob;

/// Applied plans with up to this many paths carry line statistics too.
const STATS_ALWAYS_UP_TO: usize = 200;

/// Text files larger than this get no line statistics or diff in a plan.
const DIFF_MAX: u64 = 1024 * 1024;

/// An outcome's action lines by path (`Outcome::action_index`).
pub struct ActionIndex(std::collections::HashMap<String, usize>);

impl From<&Note> for PathLine {
    fn from(note: &Note) -> Self {
        Self {
            path: note.path.to_text(),
            code: note.code,
            reason: note.reason.clone(),
        }
    }
}

impl Outcome {
    /// The plan as it stands before anything is applied (the dry run).
    pub fn planned(
        conn: &Connection,
        blobs: &BlobDir,
        request: &Request,
        kind: RollbackKind,
        target: Target,
        plan: &Plan,
        decision: &Decision,
    ) -> Self {
        // Line statistics read both sides of every text file: always worth it for a plan
        // someone reads (a dry run, a refusal, diffs asked for) or a small one; a large plan
        // on its way to being applied skips them (they were a sixth of a 1,000-file undo).
        let with_stats =
            request.dry_run || decision.refused || request.diff || plan.steps.len() <= STATS_ALWAYS_UP_TO;
        let actions = plan
            .steps
            .iter()
            .map(|step| action_line(conn, blobs, &plan.contents, step, (with_stats, request.diff)))
            .collect();
        Self {
            operation: kind,
            session: request.session.clone(),
            rollback_id: None,
            target,
            on_conflict: request.on_conflict,
            dry_run: request.dry_run,
            applied: false,
            actions,
            conflicts: plan.conflicts.iter().map(PathLine::from).collect(),
            skipped: decision.skipped.iter().map(PathLine::from).collect(),
            not_restorable: plan.not_restorable.iter().map(PathLine::from).collect(),
            kept: Vec::new(),
            merged: plan.merged.iter().map(PathLine::from).collect(),
            turn_wide: plan.turn_wide,
            recovery: None,
            temps_left: None,
            actor: request.actor,
            git: Vec::new(),
        }
        .with_skipped_marked(decision)
    }

    fn with_skipped_marked(mut self, decision: &Decision) -> Self {
        if !self.dry_run {
            let index = self.action_index();
            for note in &decision.skipped {
                self.set_status(&index, &note.path.to_text(), ActionStatus::Skipped);
            }
        }
        self
    }

    /// Where each path's action line is, so that marking each of 10,000 paths is one lookup,
    /// not a search of the list (which made a large rollback quadratic).
    pub fn action_index(&self) -> ActionIndex {
        ActionIndex(
            self.actions
                .iter()
                .enumerate()
                .map(|(i, a)| (a.path.clone(), i))
                .collect(),
        )
    }

    /// Marks the status of one path's action (`index`: this outcome's `action_index`).
    pub fn set_status(&mut self, index: &ActionIndex, path: &str, status: ActionStatus) {
        let line = index.0.get(path).and_then(|&i| self.actions.get_mut(i));
        if let Some(line) = line.filter(|line| line.path == path) {
            line.status = status;
        }
    }

    /// Says which directories the apply would keep: those still holding something the plan
    /// does not remove (ignored or untracked files), as the apply finds them.
    pub fn predict_kept(&mut self, root: &std::path::Path, steps: &[Step]) {
        let removed: std::collections::HashSet<&RelPath> = steps
            .iter()
            .filter(|s| !s.target.is_present())
            .map(|s| &s.path)
            .collect();
        let mut dirs: Vec<&RelPath> = steps
            .iter()
            .filter(|s| s.action() == Action::RemoveDir)
            .map(|s| &s.path)
            .collect();
        // Deepest first: a directory holding a kept one is kept too.
        dirs.sort_unstable_by(|a, b| b.cmp(a));
        let mut kept = std::collections::HashSet::new();
        let index = self.action_index();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir.to_abs(root)) else {
                continue;
            };
            let stays = entries.flatten().any(|e| {
                let child = dir.join(e.file_name().as_encoded_bytes());
                !removed.contains(&child) || kept.contains(&child)
            });
            if stays {
                kept.insert(dir.clone());
                let path = dir.to_text();
                self.set_status(&index, &path, ActionStatus::Kept);
                let reason = format!("{path} holds untracked files; it would be kept");
                self.kept.push(PathLine {
                    path,
                    code: NoteCode::NotEmpty,
                    reason,
                });
            }
        }
    }

    /// True when conflicts (or content that cannot be restored) refused the whole request.
    pub fn refused(&self) -> bool {
        !self.applied && !self.dry_run && (!self.conflicts.is_empty() || !self.not_restorable.is_empty())
    }
}

/// A step's line; `contents` holds what a target no version holds yet (a merge's) reads.
fn action_line(
    conn: &Connection,
    blobs: &BlobDir,
    contents: &std::collections::HashMap<crate::model::Hash, Vec<u8>>,
    step: &Step,
    (with_stats, with_diff): (bool, bool),
) -> ActionLine {
    let shown = if step.target.is_present() {
        &step.target
    } else {
        &step.current
    };
    let mut line = ActionLine {
        path: step.path.to_text(),
        action: step.action(),
        kind: shown.kind(),
        status: ActionStatus::Planned,
        lines_added: None,
        lines_removed: None,
        diff: None,
    };
    if !with_stats {
        return line;
    }
    let planned = match &step.target {
        State::File(f) if step.target_seq.is_none() => f.stored().and_then(|h| contents.get(&h)),
        _ => None,
    };
    let new = match planned {
        Some(bytes) => String::from_utf8(bytes.clone())
            .ok()
            .filter(|t| !t.contains('\0')),
        None => text_of(conn, blobs, &step.target),
    };
    let (Some(old), Some(new)) = (text_of(conn, blobs, &step.current), new) else {
        return line;
    };
    let diff = similar::TextDiff::from_lines(&old, &new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    line.lines_added = Some(added);
    line.lines_removed = Some(removed);
    if with_diff && (added + removed) > 0 {
        let header = (format!("a/{}", line.path), format!("b/{}", line.path));
        line.diff = Some(diff.unified_diff().header(&header.0, &header.1).to_string());
    }
    line
}

/// The text of a state for diffing: empty for an absent path, `None` when not text.
fn text_of(conn: &Connection, blobs: &BlobDir, state: &State) -> Option<String> {
    match state {
        State::Absent => Some(String::new()),
        State::File(f) if f.size <= DIFF_MAX => {
            let bytes = read_blob(conn, blobs, f.stored()?).ok()?;
            let text = String::from_utf8(bytes).ok()?;
            (!text.contains('\0')).then_some(text)
        }
        _ => None,
    }
}
