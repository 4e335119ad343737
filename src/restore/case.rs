//! Names that differ only in case (docs/platforms.md, "Names that differ only in case"). On a
//! file system that does not tell them apart (NTFS, macOS's default APFS, exFAT) `Readme.md`
//! and `README.md` are one file, and a rollback that takes them for two would change the one
//! file through either name: the undo of a case-only rename recorded as an unchanged
//! `Readme.md` beside a new `README.md` would delete `README.md`, the only copy.
//!
//! Two checks, each a conflict (`case_collision`) that nothing overrides but `force`:
//! - a path the plan changes while another recorded-present name of its directory, the same
//!   but for case, is not listed by the directory yet answers (it is this file);
//! - a path the plan makes (on Windows, which says so: `platform::other_spelling`) where the
//!   directory has the name under another spelling that the plan does not remove first.
//!
//! Only directories that answer to a name in another case are looked at more closely: their
//! listing, and the index's present paths beneath them. A case-sensitive file system (Linux's
//! usual) costs one failed `lstat` per directory; so does Windows, whose lookups already
//! refuse another spelling (`platform::sys`).

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;

use super::Workspace;
use super::steps::{Note, Step};
use crate::fs::ops::Parent;
use crate::model::answer::NoteCode;
use crate::paths::RelPath;
use crate::store::sql;

/// A `case_collision` note for each step so caught, by path.
pub(super) fn collisions(conn: &Connection, ws: &Workspace, steps: &[&Step]) -> HashMap<RelPath, Note> {
    let mut notes = HashMap::new();
    let mut by_dir: HashMap<Option<RelPath>, Vec<&Step>> = HashMap::new();
    for step in steps {
        by_dir.entry(step.path.parent()).or_default().push(step);
    }
    let removed: HashSet<&RelPath> = steps
        .iter()
        .filter(|step| step.current.is_present() && !step.target.is_present())
        .map(|step| &step.path)
        .collect();
    for (dir, steps) in by_dir {
        let Ok(parent) = ws.root.parent_of(&steps[0].path) else {
            continue;
        };
        for step in &steps {
            if let Some(note) = made_beside(&parent, step, &removed) {
                notes.insert(step.path.clone(), note);
            }
        }
        if !folds_case(&parent, &steps) {
            continue;
        }
        for note in one_file_two_names(conn, &parent, dir.as_ref(), &steps) {
            notes.entry(note.path.clone()).or_insert(note);
        }
    }
    notes
}

/// Whether the directory answers to a name in another case: the first name with a letter of
/// the steps that find an entry there now, its letters' case swapped (one `lstat`).
fn folds_case(parent: &Parent, steps: &[&Step]) -> bool {
    let Some(name) = steps
        .iter()
        .filter(|step| step.current.is_present())
        .map(|step| step.path.file_name())
        .find(|name| name.iter().any(u8::is_ascii_alphabetic))
    else {
        return false;
    };
    let swapped: Vec<u8> = name
        .iter()
        .map(|&b| {
            if b.is_ascii_uppercase() {
                b.to_ascii_lowercase()
            } else {
                b.to_ascii_uppercase()
            }
        })
        .collect();
    parent.answers_to(&swapped)
}

/// The steps of a path present now whose directory has another recorded-present name, the
/// same but for case, that it does not list but answers to: one file, recorded as two.
fn one_file_two_names(
    conn: &Connection,
    parent: &Parent,
    dir: Option<&RelPath>,
    steps: &[&Step],
) -> Vec<Note> {
    let Some(listed) = parent.listing() else {
        return Vec::new();
    };
    let mut recorded: HashMap<String, Vec<RelPath>> = HashMap::new();
    let read = sql::each_present(conn, dir, |path, _| {
        if path.parent().as_ref() == dir {
            recorded.entry(folded(path.file_name())).or_default().push(path);
        }
    });
    let present = steps.iter().filter(|step| step.current.is_present());
    if let Err(e) = read {
        // Unchecked is not safe: each path is a conflict, said as what it is.
        let reason = |step: &Step| {
            format!(
                "this file system does not tell names apart by case, and whether {} is recorded under another spelling too cannot be checked: the index cannot be read ({e})",
                step.path
            )
        };
        return present.map(|step| note(step, reason(step))).collect();
    }
    let mut notes = Vec::new();
    for step in present {
        let twins = recorded.get(&folded(step.path.file_name())).into_iter().flatten();
        let stale = twins
            .filter(|twin| **twin != step.path)
            .find(|twin| !listed.contains(twin.file_name()) && parent.answers_to(twin.file_name()));
        if let Some(twin) = stale {
            let reason = format!(
                "this file system does not tell names apart by case: {twin}, recorded as a file of its own, is this same file, so rolling {} back would change {twin} too",
                step.path
            );
            notes.push(note(step, reason));
        }
    }
    notes
}

/// A step that makes its path where the directory has the name under another spelling that
/// the plan does not remove.
fn made_beside(parent: &Parent, step: &Step, removed: &HashSet<&RelPath>) -> Option<Note> {
    if step.current.is_present() || !step.target.is_present() {
        return None;
    }
    let spelled = parent.other_spelling(step.path.file_name())?;
    let there = match step.path.parent() {
        Some(dir) => dir.join(&spelled),
        None => RelPath::from_fs_bytes(spelled),
    };
    if removed.contains(&there) {
        return None;
    }
    let reason = format!(
        "this file system does not tell names apart by case: {there} is there, so {} cannot be made beside it (rename or remove {there} first)",
        step.path
    );
    Some(note(step, reason))
}

fn note(step: &Step, reason: String) -> Note {
    Note {
        path: step.path.clone(),
        code: NoteCode::CaseCollision,
        reason,
    }
}

fn folded(name: &[u8]) -> String {
    String::from_utf8_lossy(name).to_lowercase()
}
