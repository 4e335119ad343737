//! Which turns are undone: taken out of effect by an undo or a rollback of the whole
//! workspace (to a turn boundary, a pin or a time), and not brought back by a redo or a later
//! rollback.
//!
//! The journal keeps, for each rollback of a session, the boundary it went to (as the number
//! of turns in effect after it, `position`, and its sequence number) and the rollback a redo
//! cancels. Walking a session's turn starts, turn ends and rollbacks in time order, the set
//! of undone turns at each boundary is known; a rollback to `before N` restores the set as it
//! was when N started, plus N and every later turn; `after N` the set as it was when N ended,
//! plus every later turn. A rollback to a sequence number of no turn boundary (a time or a
//! pin, of a session or of none: it acts on the whole workspace, so on every session's turns)
//! restores the set in effect at that number, plus every turn started at or after it (a turn
//! the point falls inside is only partly undone, and not marked; an empty turn at the point
//! itself left that very state, and stays in effect). A redo takes back what the
//! rollback it cancels changed in the set: the turns it took out are in effect again, those
//! it brought back undone again. A restore restricted to some paths and a rollback that
//! failed change nothing here.

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use crate::model::RollbackKind;
use crate::store::journal::{RollbackRow, Status};
use crate::store::sql::TurnRow;

type Numbers = Rc<BTreeSet<i64>>;

/// Something that happened to a session's turns, in the order of the walk.
enum Event<'a> {
    Start(&'a TurnRow),
    End(&'a TurnRow),
    Roll(&'a RollbackRow),
}

/// The boundary a rollback went to.
enum Boundary {
    Before(i64),
    After(i64),
}

/// The ids of the turns of `turns` (one session's history, inherited turns included) that
/// `rollbacks` (that history's own, and the rollbacks of no session) leave undone, each with
/// the rollback that took it out of effect last (whose skipped and kept paths it may keep).
pub fn undone(turns: &[TurnRow], rollbacks: &[&RollbackRow]) -> HashMap<i64, i64> {
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
        .filter_map(|t| Some((t.id, *walk.taken_out_by.get(&t.number)?)))
        .collect()
}

/// Turn starts, turn ends and the rollbacks that count, in time order (a start before an end
/// before a rollback in the same millisecond).
fn events<'a>(turns: &'a [TurnRow], rollbacks: &[&'a RollbackRow]) -> Vec<Event<'a>> {
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

/// A rollback of the whole workspace that was applied.
fn counts(rollback: &RollbackRow) -> bool {
    let applied = matches!(rollback.status, Status::Committed | Status::Recovered);
    let whole = rollback.whole();
    applied && whole
}

/// What a rollback changed in the undone set.
struct Delta {
    took_out: BTreeSet<i64>,
    brought_back: BTreeSet<i64>,
}

#[derive(Default)]
struct Walk {
    undone: Numbers,
    at_start: HashMap<i64, Numbers>,
    at_end: HashMap<i64, Numbers>,
    started: BTreeSet<i64>,
    /// What each rollback changed in the set: what a redo of it takes back.
    deltas: HashMap<i64, Delta>,
    /// The set after each rollback, from the first sequence number it wrote on, in order.
    by_seq: Vec<(i64, Numbers)>,
    /// The rollback that last took each turn (by number) out of effect.
    taken_out_by: HashMap<i64, i64>,
}

impl Walk {
    fn roll(&mut self, turns: &[TurnRow], rollback: &RollbackRow) {
        let after = match rollback.kind {
            RollbackKind::Redo => rollback.redo_of.and_then(|id| self.redone(id)),
            // An undo goes to `before N`, N the turn that was in effect last.
            RollbackKind::Undo => rollback
                .prev_position
                .map(|n| self.at_boundary(Boundary::Before(n))),
            RollbackKind::Rollback => Some(match rollback.position {
                Some(p) => self.at_boundary(rollback_boundary(turns, rollback, p)),
                None => self.at_seq(turns, rollback.target_seq),
            }),
        };
        let Some(after) = after else {
            return;
        };
        let delta = Delta {
            took_out: after.difference(&self.undone).copied().collect(),
            brought_back: self.undone.difference(&after).copied().collect(),
        };
        for &n in &delta.took_out {
            self.taken_out_by.insert(n, rollback.id);
        }
        self.deltas.insert(rollback.id, delta);
        self.by_seq.push((rollback.from_seq + 1, after.clone()));
        self.undone = after;
    }

    /// The set at a turn boundary, plus the turns from there on.
    fn at_boundary(&self, boundary: Boundary) -> Numbers {
        let (base, first_out) = match boundary {
            Boundary::Before(n) => (self.at_start.get(&n), n),
            Boundary::After(n) => (self.at_end.get(&n), n + 1),
        };
        let mut set = base.map_or_else(|| (*self.undone).clone(), |s| (**s).clone());
        set.extend(self.started.range(first_out..));
        Rc::new(set)
    }

    /// The set in effect at sequence number `seq`, plus the turns started after it, and those
    /// started at it that changed something (an empty turn there left the state `seq` names:
    /// it is in effect).
    fn at_seq(&self, turns: &[TurnRow], seq: i64) -> Numbers {
        let after = self.by_seq.partition_point(|(from, _)| *from <= seq);
        let mut set = after
            .checked_sub(1)
            .map_or_else(BTreeSet::new, |i| (*self.by_seq[i].1).clone());
        let later = turns
            .iter()
            .filter(|t| t.start_seq > seq || (t.start_seq == seq && t.end_seq != Some(seq)))
            .filter(|t| self.started.contains(&t.number));
        set.extend(later.map(|t| t.number));
        Rc::new(set)
    }

    /// The set with what rollback `redone` changed in it taken back.
    fn redone(&self, redone: i64) -> Option<Numbers> {
        let delta = self.deltas.get(&redone)?;
        let mut set = (*self.undone).clone();
        set.retain(|n| !delta.took_out.contains(n));
        set.extend(&delta.brought_back);
        Some(Rc::new(set))
    }
}

/// A rollback leaving `position` turns in effect went to `before position+1` when that is
/// its sequence number, else to `after position`.
fn rollback_boundary(turns: &[TurnRow], rollback: &RollbackRow, position: i64) -> Boundary {
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

    fn rollback(id: i64, at: i64, kind: RollbackKind, moved: (i64, i64), target_seq: i64) -> RollbackRow {
        RollbackRow {
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
            brief: None,
            temp_tag: None,
            outcome: None,
        }
    }

    fn numbers(turns: &[TurnRow], rollbacks: &[RollbackRow]) -> Vec<i64> {
        let refs: Vec<&RollbackRow> = rollbacks.iter().collect();
        let ids = undone(turns, &refs);
        let mut out: Vec<i64> = turns
            .iter()
            .filter(|t| ids.contains_key(&t.id))
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
        let redo = RollbackRow {
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
    fn restores_and_failed_rollbacks_undo_no_turn() {
        let turns: Vec<TurnRow> = (1..=2).map(turn).collect();
        let restore = RollbackRow {
            paths: Some(vec!["a.txt".into()]),
            ..rollback(1, 26, RollbackKind::Undo, (2, 1), 200)
        };
        let failed = RollbackRow {
            status: Status::Reverted,
            ..rollback(2, 27, RollbackKind::Undo, (2, 1), 200)
        };
        let in_time = RollbackRow {
            session_id: None,
            paths: Some(vec!["b.txt".into()]),
            ..rollback(3, 28, RollbackKind::Rollback, (2, 0), 100)
        };
        assert!(numbers(&turns, &[restore, failed, in_time]).is_empty());
    }

    /// A rollback of no session to a sequence number (a time or a pin).
    fn to_seq(id: i64, at: i64, target_seq: i64, from_seq: i64) -> RollbackRow {
        RollbackRow {
            session_id: None,
            position: None,
            prev_position: None,
            from_seq,
            ..rollback(id, at, RollbackKind::Rollback, (0, 0), target_seq)
        }
    }

    /// A rollback to a time or a pin: every turn started at or after its point is undone, one
    /// the point falls inside is not; its redo brings them back; a point before an undo brings
    /// back the turn the undo took out.
    #[test]
    fn a_rollback_to_a_time_or_a_pin_undoes_the_turns_after_its_point_until_redone() {
        let turns: Vec<TurnRow> = (1..=3).map(turn).collect();
        let after1 = to_seq(1, 36, 150, 350);
        assert_eq!(numbers(&turns, std::slice::from_ref(&after1)), vec![2, 3]);
        let inside2 = to_seq(1, 36, 220, 350);
        assert_eq!(numbers(&turns, std::slice::from_ref(&inside2)), vec![3]);
        let redo = RollbackRow {
            session_id: None,
            redo_of: Some(1),
            from_seq: 360,
            ..rollback(2, 37, RollbackKind::Redo, (0, 0), 350)
        };
        assert!(numbers(&turns, &[after1.clone(), redo]).is_empty());

        // Turn 3 undone (its versions from 351 on), then the workspace back to seq 350: before
        // the undo, so turn 3 is in effect again; to seq 370, after it: turn 3 stays undone.
        let undo3 = RollbackRow {
            from_seq: 350,
            ..rollback(1, 36, RollbackKind::Undo, (3, 2), 300)
        };
        let before_undo = to_seq(2, 37, 350, 370);
        assert!(numbers(&turns, &[undo3.clone(), before_undo]).is_empty());
        let after_undo = to_seq(2, 37, 370, 370);
        assert_eq!(numbers(&turns, &[undo3, after_undo]), vec![3]);
    }

    /// A redo takes back only what its rollback changed: an undo made after that rollback
    /// stays.
    #[test]
    fn a_redo_keeps_what_later_rollbacks_changed() {
        let turns: Vec<TurnRow> = (1..=3).map(turn).collect();
        let in_time = to_seq(1, 36, 350, 350);
        let undo3 = RollbackRow {
            from_seq: 360,
            ..rollback(2, 37, RollbackKind::Undo, (3, 2), 300)
        };
        let early = to_seq(3, 38, 150, 370);
        let redo_early = RollbackRow {
            session_id: None,
            redo_of: Some(3),
            ..rollback(4, 39, RollbackKind::Redo, (0, 0), 370)
        };
        assert_eq!(
            numbers(&turns, &[in_time.clone(), undo3.clone(), early.clone()]),
            vec![2, 3]
        );
        assert_eq!(numbers(&turns, &[in_time, undo3, early, redo_early]), vec![3]);
    }
}
