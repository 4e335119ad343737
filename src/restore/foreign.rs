//! Others' changes to a path since a boundary, in the words a conflict gives them, and which
//! of them a rollback and its redo took back together (neither then counts).

use crate::model::{Decided, Origin, format_time};
use crate::store::journal::LaterVersion;

/// The versions of a rollback that its redo took back, with the redo's own: the pair left
/// the path as it was, so neither is anyone's change to conflict with, nor a session's own
/// write between others' (an undo that merged, then its redo).
pub(super) fn taken_back(later: &[LaterVersion]) -> Vec<i64> {
    let mut undone = Vec::new();
    for (i, redo) in later.iter().enumerate() {
        let Some(redone) = redo.redo_of else {
            continue;
        };
        let rolled = later[..i].iter().rev().find(|v| v.rollback_id == Some(redone));
        if let Some(rolled) = rolled {
            undone.extend([rolled.seq, redo.seq]);
        }
    }
    undone
}

/// A later version's change in words: who made it, and when.
pub(super) fn describe(v: &LaterVersion) -> String {
    let when = format_time(v.recorded_at);
    match (v.origin, &v.session, v.turn) {
        (Origin::Turn, Some(s), Some(t)) => format!("changed by session {s} in turn {t} at {when}"),
        (Origin::Rollback, Some(s), _) => format!("changed by a rollback of session {s} at {when}"),
        (Origin::Rollback, None, _) => format!("changed by a time rollback at {when}"),
        (Origin::Ambiguous, _, _) => format!("changed while turns of several sessions were open, at {when}"),
        (Origin::Outside, _, _) if v.decided == Some(Decided::BetweenCalls) => {
            format!("changed by you (an editor or another process, between the agents' tool calls) at {when}")
        }
        (Origin::Offline, _, _) => format!(
            "found at {when} without being seen written (filewatchd was not running, or an ignore rule stopped hiding it)"
        ),
        _ => format!("changed outside any turn (an editor or another process) at {when}"),
    }
}
