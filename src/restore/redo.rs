//! The plan of a redo (docs/guarantees.md, "Words"): exactly the paths the rollback it names
//! changed, each back to its state just before that rollback. Whatever happened to other paths
//! since (a turn, the user) is not the redo's business and is never touched. A path of that
//! rollback changed since by anything but the rollback itself (or the later rollbacks of its
//! chain, each cancelled by a redo already) is a conflict; the disk is checked as for any
//! rollback (G4 b).

use rusqlite::Connection;

use super::Workspace;
use super::plan::{self, Note, Plan, Step};
use crate::model::State;
use crate::model::answer::NoteCode;
use crate::paths::RelPath;
use crate::store::journal::{self, ChangedBy};

/// Plans the redo of rollback `redone`, which was applied when the latest sequence number was
/// `from_seq` (the state each path returns to), restricted to `only` (and what lies beneath).
pub fn build(
    conn: &Connection,
    ws: &Workspace,
    redone: i64,
    from_seq: i64,
    only: &[RelPath],
) -> rusqlite::Result<Plan> {
    let own = journal::chain_from(conn, redone)?;
    let mut steps = Vec::new();
    for changed in journal::changed_by(conn, redone)? {
        if !only.is_empty() && !only.iter().any(|p| changed.path.starts_with(p)) {
            continue;
        }
        let Some((current_seq, current)) = journal::version_at(conn, changed.path_id, i64::MAX)? else {
            continue;
        };
        let target = journal::version_at(conn, changed.path_id, from_seq)?;
        let (target_seq, target) = target.map_or((None, State::Absent), |(s, t)| (Some(s), t));
        // Untracked now: not the redo's to touch.
        if current == target || current.is_untracked() {
            continue;
        }
        let step = Step {
            path: changed.path.clone(),
            path_id: changed.path_id,
            current_seq,
            current,
            target_seq,
            target,
            checked: None,
        };
        let foreign = changed_since(conn, &changed, &own)?;
        steps.push((step, foreign));
    }
    Ok(plan::check(conn, ws, steps))
}

/// The latest change to a path since the rollback wrote it, by anything but that rollback's
/// chain, with how many others there were.
fn changed_since(conn: &Connection, changed: &ChangedBy, own: &[i64]) -> rusqlite::Result<Option<Note>> {
    let later = journal::versions_after(conn, changed.path_id, changed.written_seq)?;
    let foreign: Vec<_> = later
        .iter()
        .filter(|v| !v.rollback_id.is_some_and(|id| own.contains(&id)))
        .collect();
    let Some(latest) = foreign.last() else {
        return Ok(None);
    };
    let mut reason = format!(
        "{} since the rollback this redo undoes",
        super::foreign::describe(latest)
    );
    match foreign.len() - 1 {
        0 => {}
        1 => reason.push_str(", and 1 other change before that"),
        n => reason.push_str(&format!(", and {n} other changes before that")),
    }
    Ok(Some(Note {
        path: changed.path.clone(),
        code: NoteCode::ChangedByOther,
        reason,
    }))
}
