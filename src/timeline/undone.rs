//! Which turns are undone: taken out of effect by an undo or a rollback of the whole
//! workspace, and not brought back by a redo or a later rollback.
//!
//! The journal keeps, for each rollback of a session, the boundary it went to (as the number
//! of turns in effect after it, `position`, and its sequence number) and the rollback a redo
//! cancels. Walking a session's turn starts, turn ends and rollbacks in time order, the set
//! of undone turns at each boundary is known; a rollback to `before N` restores the set as it
//! was when N started, plus N and every later turn; `after N` the set as it was when N ended,
//! plus every later turn; a redo the set just before the rollback it cancels. A restore
//! restricted to some paths, a time rollback and a rollback that failed change nothing here.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use crate::model::RollbackKind;
use crate::store::journal::Status;
use crate::store::sql::TurnRow;
use crate::store::timeline::RollbackBrief;

type Numbers = Rc<BTreeSet<i64>>;

/// Something that happened to a session's turns, in the order of the walk.
enum Event<'a> {
    Start(&'a TurnRow),
    End(&'a TurnRow),
    Roll(&'a RollbackBrief),
}

/// The boundary a rollback went to.
enum Boundary {
    Before(i64),
    After(i64),
}

/// The ids of the turns of `turns` (one session's history, inherited turns included) that
/// `rollbacks` (that history's own) leave undone.
pub fn undone(turns: &[TurnRow], rollbacks: &[&RollbackBrief]) -> HashSet<i64> {
    let mut walk = Walk::default();
    for event in events(turns, rollbacks) {
        match event {
            Event::Start(turn) => {
                walk.at_start.insert(turn.number, walk.undone.clone());
                walk.started.insert(turn.number);
            }
            Event::End(turn) => {
                walk.at_end.insert(turn.number, walk.undone.clone());
            }
            Event::Roll(rollback) => walk.roll(turns, rollback),
        }
    }
    turns
        .iter()
        .filter(|t| walk.undone.contains(&t.number))
        .map(|t| t.id)
        .collect()
}

/// Turn starts, turn ends and the rollbacks that count, in time order (a start before an end
/// before a rollback in the same millisecond).
fn events<'a>(turns: &'a [TurnRow], rollbacks: &[&'a RollbackBrief]) -> Vec<Event<'a>> {
    let mut timed: Vec<((i64, u8), Event<'a>)> = Vec::new();
    for turn in turns {
        timed.push(((turn.started_at, 0), Event::Start(turn)));
        if let Some(ended) = turn.ended_at {
            timed.push(((ended, 1), Event::End(turn)));
        }
    }
    for rollback in rollbacks.iter().copied().filter(|r| counts(r)) {
        timed.push(((rollback.created_at, 2), Event::Roll(rollback)));
    }
    // A stable sort keeps the rollbacks (and turns) of one millisecond in their own order.
    timed.sort_by_key(|(at, _)| *at);
    timed.into_iter().map(|(_, event)| event).collect()
}

/// A rollback of the whole workspace by a session that was applied.
fn counts(rollback: &RollbackBrief) -> bool {
    let applied = matches!(rollback.status, Status::Committed | Status::Recovered);
    let whole = rollback.paths.as_deref().is_none_or(|p| p == "[]");
    applied && whole && rollback.session_id.is_some()
}

#[derive(Default)]
struct Walk {
    undone: Numbers,
    at_start: HashMap<i64, Numbers>,
    at_end: HashMap<i64, Numbers>,
    started: BTreeSet<i64>,
    /// The undone set just before each rollback: what a redo of it returns to.
    before: HashMap<i64, Numbers>,
}

impl Walk {
    fn roll(&mut self, turns: &[TurnRow], rollback: &RollbackBrief) {
        self.before.insert(rollback.id, self.undone.clone());
        let boundary = match rollback.kind {
            RollbackKind::Redo => {
                if let Some(set) = rollback.redo_of.and_then(|id| self.before.get(&id)) {
                    self.undone = set.clone();
                }
                return;
            }
            // An undo goes to `before N`, N the turn that was in effect last.
            RollbackKind::Undo => rollback.prev_position.map(Boundary::Before),
            RollbackKind::Rollback => rollback.position.map(|p| rollback_boundary(turns, rollback, p)),
        };
        let (base, first_out) = match boundary {
            Some(Boundary::Before(n)) => (self.at_start.get(&n), n),
            Some(Boundary::After(n)) => (self.at_end.get(&n), n + 1),
            None => return,
        };
        let mut set = base.map_or_else(|| (*self.undone).clone(), |s| (**s).clone());
        set.extend(self.started.range(first_out..));
        self.undone = Rc::new(set);
    }
}

/// A rollback leaving `position` turns in effect went to `before position+1` when that is
/// its sequence number, else to `after position`.
fn rollback_boundary(turns: &[TurnRow], rollback: &RollbackBrief, position: i64) -> Boundary {
    let next_starts_there = turns
        .iter()
        .any(|t| t.number == position + 1 && t.start_seq == rollback.target_seq);
    if next_starts_there {
        Boundary::Before(position + 1)
    } else {
        Boundary::After(position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Turn N starts at 10·N ms and ends at 10·N+5, its sequence numbers 100·N..100·N+50.
    fn turn(number: i64) -> TurnRow {
        TurnRow {
            id: 1000 + number,
            session_id: 1,
            session: "s".into(),
            number,
            turn_ref: None,
            label: None,
            start_seq: 100 * number,
            end_seq: Some(100 * number + 50),
            started_at: 10 * number,
            ended_at: Some(10 * number + 5),
        }
    }

    fn rollback(id: i64, at: i64, kind: RollbackKind, moved: (i64, i64), target_seq: i64) -> RollbackBrief {
        RollbackBrief {
            id,
            session_id: Some(1),
            session: Some("s".into()),
            kind,
            target_seq,
            from_seq: 0,
            position: Some(moved.1),
            prev_position: Some(moved.0),
            redo_of: None,
            status: Status::Committed,
            created_at: at,
            paths: None,
        }
    }

    fn numbers(turns: &[TurnRow], rollbacks: &[RollbackBrief]) -> Vec<i64> {
        let refs: Vec<&RollbackBrief> = rollbacks.iter().collect();
        let ids = undone(turns, &refs);
        let mut out: Vec<i64> = turns
            .iter()
            .filter(|t| ids.contains(&t.id))
            .map(|t| t.number)
            .collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn undos_walk_back_and_a_redo_brings_back_exactly_what_it_undid() {
        let turns: Vec<TurnRow> = (1..=3).map(turn).collect();
        let undo3 = rollback(1, 36, RollbackKind::Undo, (3, 2), 300);
        let undo2 = rollback(2, 37, RollbackKind::Undo, (2, 1), 200);
        assert_eq!(numbers(&turns, std::slice::from_ref(&undo3)), vec![3]);
        assert_eq!(numbers(&turns, &[undo3.clone(), undo2.clone()]), vec![2, 3]);
        let redo = RollbackBrief {
            redo_of: Some(2),
            ..rollback(3, 38, RollbackKind::Redo, (1, 2), 0)
        };
        assert_eq!(numbers(&turns, &[undo3, undo2, redo]), vec![3]);
    }

    #[test]
    fn a_turn_undone_before_a_new_one_stays_undone_and_rollbacks_bring_turns_back() {
        // Turn 3 is undone, then turn 4 runs (it starts at 40, after the undo).
        let turns: Vec<TurnRow> = (1..=4).map(turn).collect();
        let undo3 = rollback(1, 36, RollbackKind::Undo, (3, 2), 300);
        assert_eq!(numbers(&turns, std::slice::from_ref(&undo3)), vec![3]);
        // Undoing turn 4 returns to where it started: turn 3 stays undone.
        let undo4 = rollback(2, 46, RollbackKind::Undo, (4, 2), 400);
        assert_eq!(numbers(&turns, &[undo3.clone(), undo4]), vec![3, 4]);
        // A rollback to after turn 3 brings 3 back and takes 4 out.
        let after3 = rollback(3, 46, RollbackKind::Rollback, (4, 3), 350);
        assert_eq!(numbers(&turns, &[undo3.clone(), after3]), vec![4]);
        // A rollback to before turn 2 takes 2 and everything after it out.
        let before2 = rollback(4, 46, RollbackKind::Rollback, (4, 1), 200);
        assert_eq!(numbers(&turns, &[undo3, before2]), vec![2, 3, 4]);
    }

    #[test]
    fn restores_time_rollbacks_and_failed_rollbacks_undo_no_turn() {
        let turns: Vec<TurnRow> = (1..=2).map(turn).collect();
        let restore = RollbackBrief {
            paths: Some(r#"["a.txt"]"#.into()),
            ..rollback(1, 26, RollbackKind::Undo, (2, 1), 200)
        };
        let failed = RollbackBrief {
            status: Status::Reverted,
            ..rollback(2, 27, RollbackKind::Undo, (2, 1), 200)
        };
        let in_time = RollbackBrief {
            session_id: None,
            ..rollback(3, 28, RollbackKind::Rollback, (2, 0), 100)
        };
        assert!(numbers(&turns, &[restore, failed, in_time]).is_empty());
    }
}
