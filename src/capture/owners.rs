//! Whose a write is (docs/tracking.md, "Whose a write is"): the open turns and, for the
//! sessions whose agent reports its tool calls (`windowed` turns), the calls open now.
//!
//! A batch is recorded when a marker's barrier has flushed what was written before it, so the
//! calls open while a batch is recorded are the calls its writes were made in:
//! - no turn open: the person's, or another process's (`outside`);
//! - the turns that could have written it are the open turns that report no tool calls, and
//!   the windowed turns with a call open: one of them, it is that turn's; none, it is the
//!   person's (`outside`, between tool calls); several, `ambiguous`;
//! - a path an open edit tool names (`Write`, `edit`, ...) is that call's turn's, whatever else
//!   is open, unless two sessions' edit tools name it;
//! - where several turns could have written a file, and fanotify named its writers
//!   (`crate::watch::writers`, with `CAP_SYS_ADMIN`), the turn whose agent they descend from:
//!   each turn's hooks report their ancestry, and the ancestors no other turn shares are its
//!   own.

use std::collections::{HashMap, HashSet};

use crate::model::{Decided, Origin};
use crate::paths::RelPath;
use crate::store::sql::TurnRow;
use crate::watch::writers::{Chain, FileId};

/// Who the versions of a batch are attributed to, and how that was decided (`owners`).
#[derive(Clone, Copy, Debug)]
pub struct Attribution {
    pub origin: Origin,
    pub turn_id: Option<i64>,
    pub decided: Option<Decided>,
}

impl Attribution {
    /// Found by a scan, not seen being written: the start-up index and reconcile, and what an
    /// ignore-rule change brings into view.
    pub const FOUND: Self = Self {
        origin: Origin::Offline,
        turn_id: None,
        decided: None,
    };

    /// Written while no turn was open.
    pub const OUTSIDE: Self = Self {
        origin: Origin::Outside,
        turn_id: None,
        decided: None,
    };
}

/// One tool call open now: the agent's id for it, if it gives one, its tool, and the files it
/// names when it is an edit tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    pub id: Option<String>,
    pub tool: Option<String>,
    pub paths: Vec<RelPath>,
    /// The hook's ancestry from its agent on (`crate::fs::procs::agent_ancestry`).
    pub pids: Vec<u32>,
    /// When the daemon took its start.
    pub started: Option<std::time::Instant>,
}

/// A call open longer than this may be one whose end never came (interrupted, denied): what
/// is written while only it is open is said to be the turn's by its window, not by its call.
const LONG_CALL: std::time::Duration = std::time::Duration::from_secs(600);

/// An open turn, whether its agent reports tool calls, and its calls open now.
#[derive(Debug, Clone)]
pub struct OpenTurn {
    pub turn: TurnRow,
    pub windowed: bool,
    pub calls: Vec<Call>,
    /// The ancestry its latest call's hook reported.
    pub pids: Vec<u32>,
}

impl OpenTurn {
    /// Could a write made now be this turn's?
    fn may_write(&self) -> bool {
        !self.windowed || !self.calls.is_empty()
    }

    /// Every call open is one that may never end (`LONG_CALL`).
    fn only_long_calls(&self) -> bool {
        !self.calls.is_empty()
            && self
                .calls
                .iter()
                .all(|c| c.started.is_some_and(|at| at.elapsed() > LONG_CALL))
    }
}

/// Who writes made now belong to: the batch's owner, and the paths an edit tool claims.
#[derive(Debug, Clone)]
pub struct Who {
    pub batch: Attribution,
    pub claims: HashMap<RelPath, Attribution>,
    /// The files fanotify said one turn's processes wrote.
    pub by_file: HashMap<FileId, Attribution>,
}

impl Who {
    pub fn of(&self, path: &RelPath) -> Attribution {
        self.claims.get(path).copied().unwrap_or(self.batch)
    }

    /// Whose the file at `path` is; `file` gives its handle (`crate::watch::writers`), asked
    /// only when fanotify named some file's writers.
    pub fn of_file(&self, path: &RelPath, file: impl FnOnce() -> Option<FileId>) -> Attribution {
        if let Some(claimed) = self.claims.get(path) {
            return *claimed;
        }
        if self.by_file.is_empty() {
            return self.batch;
        }
        file()
            .and_then(|file| self.by_file.get(&file).copied())
            .unwrap_or(self.batch)
    }
}

impl From<Attribution> for Who {
    fn from(batch: Attribution) -> Self {
        Self {
            batch,
            claims: HashMap::new(),
            by_file: HashMap::new(),
        }
    }
}

/// The open turns and their calls, as the worker keeps them between markers.
#[derive(Debug, Default)]
pub struct Owners {
    open: Vec<OpenTurn>,
}

impl Owners {
    /// The open turns as the index now has them (`windowed`: the ids of those that report tool
    /// calls); the calls of turns still open are kept, those of ended turns closed.
    pub fn refresh(&mut self, open: Vec<TurnRow>, windowed: &[i64]) {
        let mut calls: HashMap<i64, (Vec<Call>, Vec<u32>)> = self
            .open
            .drain(..)
            .map(|t| (t.turn.id, (t.calls, t.pids)))
            .collect();
        self.open = open
            .into_iter()
            .map(|turn| {
                let (calls, pids) = calls.remove(&turn.id).unwrap_or_default();
                OpenTurn {
                    windowed: windowed.contains(&turn.id),
                    calls,
                    pids,
                    turn,
                }
            })
            .collect();
    }

    pub fn turns(&self) -> impl Iterator<Item = &TurnRow> {
        self.open.iter().map(|t| &t.turn)
    }

    /// The open turn of `session`, if any.
    pub fn turn_of(&self, session: &str) -> Option<&TurnRow> {
        self.turns().find(|t| t.session == session)
    }

    /// A call of `turn_id` starts: the turn reports tool calls from now on. A start whose id
    /// is open already (a hook run twice) is the same call.
    pub fn start_call(&mut self, turn_id: i64, mut call: Call) {
        if let Some(open) = self.open.iter_mut().find(|t| t.turn.id == turn_id) {
            open.windowed = true;
            if !call.pids.is_empty() {
                open.pids.clone_from(&call.pids);
            }
            call.started.get_or_insert_with(std::time::Instant::now);
            open.calls.retain(|c| c.id.is_none() || c.id != call.id);
            open.calls.push(call);
        }
    }

    /// Whether `turn_id` is known to report tool calls.
    pub fn is_windowed(&self, turn_id: i64) -> bool {
        self.open.iter().any(|t| t.turn.id == turn_id && t.windowed)
    }

    /// `turn_id` reports tool calls (an end came whose start was missed).
    pub fn mark_windowed(&mut self, turn_id: i64) {
        if let Some(open) = self.open.iter_mut().find(|t| t.turn.id == turn_id) {
            open.windowed = true;
        }
    }

    /// A call of `turn_id` ends: the one with its id; without an id, the oldest of its tool
    /// (or the oldest). False when no open call matches.
    pub fn end_call(&mut self, turn_id: i64, id: Option<&str>, tool: Option<&str>) -> bool {
        let Some(open) = self.open.iter_mut().find(|t| t.turn.id == turn_id) else {
            return false;
        };
        let at = match (id, tool) {
            (Some(id), _) => open.calls.iter().position(|c| c.id.as_deref() == Some(id)),
            (None, Some(tool)) => open.calls.iter().position(|c| c.tool.as_deref() == Some(tool)),
            (None, None) => (!open.calls.is_empty()).then_some(0),
        };
        at.map(|at| open.calls.remove(at)).is_some()
    }

    /// How many calls of `turn_id` are open.
    pub fn calls_of(&self, turn_id: i64) -> usize {
        self.open
            .iter()
            .find(|t| t.turn.id == turn_id)
            .map_or(0, |t| t.calls.len())
    }

    /// Who a write made now belongs to.
    pub fn who(&self) -> Who {
        Who {
            batch: self.batch(),
            claims: self.claims(),
            by_file: HashMap::new(),
        }
    }

    /// `who`, with the files whose writers (fanotify's) descend from exactly one of the turns
    /// that could have written them, where the batch's rule cannot tell.
    pub fn who_with(&self, writers: &HashMap<FileId, Vec<Chain>>) -> Who {
        let mut who = self.who();
        if who.batch.origin != Origin::Ambiguous || writers.is_empty() {
            return who;
        }
        let writing: Vec<&OpenTurn> = self.open.iter().filter(|t| t.may_write()).collect();
        if writing.iter().any(|t| t.pids.is_empty()) {
            return who;
        }
        let own = own_ancestors(&writing);
        for (file, chains) in writers {
            if let Some(turn_id) = descends_from(&own, chains) {
                let owner = Attribution {
                    origin: Origin::Turn,
                    turn_id: Some(turn_id),
                    decided: Some(Decided::Process),
                };
                who.by_file.insert(file.clone(), owner);
            }
        }
        who
    }

    fn batch(&self) -> Attribution {
        let windowed = self.open.iter().any(|t| t.windowed);
        let writers: Vec<&OpenTurn> = self.open.iter().filter(|t| t.may_write()).collect();
        let decided = |one_by: Decided| Some(if windowed { one_by } else { Decided::TurnWindow });
        match writers.as_slice() {
            [] if self.open.is_empty() => Attribution::OUTSIDE,
            [] => Attribution {
                origin: Origin::Outside,
                turn_id: None,
                decided: Some(Decided::BetweenCalls),
            },
            [one] => Attribution {
                origin: Origin::Turn,
                turn_id: Some(one.turn.id),
                decided: decided(if one.windowed && !one.only_long_calls() {
                    Decided::ToolCall
                } else {
                    Decided::TurnWindow
                }),
            },
            _ => Attribution {
                origin: Origin::Ambiguous,
                turn_id: None,
                decided: decided(Decided::ToolCall),
            },
        }
    }

    /// The paths an open edit tool names, each the turn's whose tool names it; a path two turns'
    /// tools name is left to the batch's rule.
    fn claims(&self) -> HashMap<RelPath, Attribution> {
        let mut claims: HashMap<RelPath, Option<i64>> = HashMap::new();
        for open in &self.open {
            for path in open.calls.iter().flat_map(|c| &c.paths) {
                claims
                    .entry(path.clone())
                    .and_modify(|owner| {
                        if *owner != Some(open.turn.id) {
                            *owner = None;
                        }
                    })
                    .or_insert(Some(open.turn.id));
            }
        }
        claims
            .into_iter()
            .filter_map(|(path, owner)| {
                let owner = Attribution {
                    origin: Origin::Turn,
                    turn_id: Some(owner?),
                    decided: Some(Decided::EditTool),
                };
                Some((path, owner))
            })
            .collect()
    }
}

/// Each turn's agent (the first pid its hook reported: the process that ran the hook), unless
/// another of `turns` has the same one (one agent process serving two sessions).
fn own_ancestors(turns: &[&OpenTurn]) -> Vec<(i64, HashSet<u32>)> {
    let agent = |t: &OpenTurn| t.pids.first().copied();
    turns
        .iter()
        .map(|t| {
            let shared = turns
                .iter()
                .any(|o| o.turn.id != t.turn.id && agent(o) == agent(t));
            let own = agent(t).filter(|_| !shared).into_iter().collect();
            (t.turn.id, own)
        })
        .collect()
}

/// The one turn every writer's chain descends from, if there is one.
fn descends_from(own: &[(i64, HashSet<u32>)], chains: &[Chain]) -> Option<i64> {
    let mut found = None;
    for chain in chains {
        let mut hits = own
            .iter()
            .filter(|(_, set)| chain.iter().any(|p| set.contains(p)));
        let (Some((turn, _)), None) = (hits.next(), hits.next()) else {
            return None;
        };
        if found.is_some_and(|f| f != *turn) {
            return None;
        }
        found = Some(*turn);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: i64, session: &str) -> TurnRow {
        TurnRow {
            id,
            session_id: id,
            session: session.into(),
            number: 1,
            turn_ref: None,
            label: None,
            start_seq: 0,
            end_seq: None,
            started_at: 0,
            ended_at: None,
        }
    }

    fn owners(windowed: &[i64]) -> Owners {
        let mut owners = Owners::default();
        owners.refresh(vec![turn(1, "a"), turn(2, "b")], windowed);
        owners
    }

    fn who(owners: &Owners) -> (Origin, Option<i64>, Option<Decided>) {
        let w = owners.who().batch;
        (w.origin, w.turn_id, w.decided)
    }

    #[test]
    fn turns_without_tool_calls_keep_the_turn_wide_rule() {
        let owners = owners(&[]);
        assert_eq!(who(&owners), (Origin::Ambiguous, None, Some(Decided::TurnWindow)));
        let mut one = Owners::default();
        one.refresh(vec![turn(1, "a")], &[]);
        assert_eq!(who(&one), (Origin::Turn, Some(1), Some(Decided::TurnWindow)));
        assert_eq!(who(&Owners::default()), (Origin::Outside, None, None));
    }

    #[test]
    fn a_write_between_tool_calls_is_the_persons_and_inside_one_is_its_turns() {
        let mut owners = owners(&[1, 2]);
        assert_eq!(who(&owners), (Origin::Outside, None, Some(Decided::BetweenCalls)));
        owners.start_call(2, Call::default());
        assert_eq!(who(&owners), (Origin::Turn, Some(2), Some(Decided::ToolCall)));
        owners.start_call(1, Call::default());
        assert_eq!(who(&owners), (Origin::Ambiguous, None, Some(Decided::ToolCall)));
        assert!(owners.end_call(2, None, None));
        assert!(!owners.end_call(2, None, None), "no call of turn 2 is open");
        assert_eq!(who(&owners), (Origin::Turn, Some(1), Some(Decided::ToolCall)));
    }

    #[test]
    fn a_turn_that_reports_no_calls_may_write_whenever_it_is_open() {
        // b's agent reports tool calls, a's does not: a write between b's calls is a's turn's.
        let mut owners = owners(&[2]);
        assert_eq!(who(&owners), (Origin::Turn, Some(1), Some(Decided::TurnWindow)));
        owners.start_call(2, Call::default());
        assert_eq!(who(&owners).0, Origin::Ambiguous);
    }

    #[test]
    fn an_edit_tool_claims_its_file_unless_two_sessions_name_it() {
        let path = |p: &str| RelPath::from_fs_bytes(p.as_bytes().to_vec());
        let mut owners = owners(&[1, 2]);
        let edit = |p: &str| Call {
            id: Some(format!("call-{p}")),
            tool: Some("Edit".into()),
            paths: vec![path(p)],
            pids: Vec::new(),
            started: None,
        };
        owners.start_call(1, edit("a.txt"));
        owners.start_call(2, edit("b.txt"));
        let who = owners.who();
        assert_eq!(who.of(&path("a.txt")).turn_id, Some(1));
        assert_eq!(who.of(&path("b.txt")).turn_id, Some(2));
        assert_eq!(who.of(&path("c.txt")).origin, Origin::Ambiguous);
        assert_eq!(who.of(&path("a.txt")).decided, Some(Decided::EditTool));
        owners.start_call(2, edit("a.txt"));
        assert_eq!(owners.who().of(&path("a.txt")).origin, Origin::Ambiguous);
        // The end matches its call by id.
        assert!(owners.end_call(2, Some("call-a.txt"), None));
        assert_eq!(owners.who().of(&path("a.txt")).turn_id, Some(1));
    }

    #[test]
    fn a_file_written_in_two_sessions_calls_at_once_is_the_one_its_writer_descends_from() {
        let mut owners = owners(&[1, 2]);
        // Two agents (11 and 21) under one terminal (100), and an editor (50) under it too.
        let call = |pids: Vec<u32>| Call {
            pids,
            ..Call::default()
        };
        owners.start_call(1, call(vec![11, 100]));
        owners.start_call(2, call(vec![21, 200, 100]));
        let writers = HashMap::from([
            (vec![1], vec![vec![30, 11, 100]]),
            (vec![2], vec![vec![40, 21, 200, 100]]),
            (vec![3], vec![vec![50, 200, 100]]),
            (vec![4], vec![vec![30, 11, 100], vec![40, 21, 100]]),
        ]);
        let who = owners.who_with(&writers);
        let path = RelPath::from_fs_bytes(b"x".to_vec());
        let owner = |file: u8| who.of_file(&path, || Some(vec![file]));
        assert_eq!(
            (owner(1).turn_id, owner(1).decided),
            (Some(1), Some(Decided::Process))
        );
        assert_eq!(owner(2).turn_id, Some(2));
        assert_eq!(
            owner(3).origin,
            Origin::Ambiguous,
            "the person's editor: undecided"
        );
        assert_eq!(owner(4).origin, Origin::Ambiguous, "both wrote it");
        assert_eq!(owner(9).origin, Origin::Ambiguous);
    }

    #[test]
    fn a_call_open_too_long_owns_its_writes_by_the_window_and_a_repeated_start_is_one_call() {
        let mut owners = owners(&[1, 2]);
        let long_ago = std::time::Instant::now().checked_sub(LONG_CALL * 2);
        let call = |id: &str, started| Call {
            id: Some(id.into()),
            started,
            ..Call::default()
        };
        owners.start_call(1, call("c1", long_ago));
        assert_eq!(who(&owners), (Origin::Turn, Some(1), Some(Decided::TurnWindow)));
        owners.start_call(1, call("c2", None));
        owners.start_call(1, call("c2", None));
        assert_eq!(who(&owners), (Origin::Turn, Some(1), Some(Decided::ToolCall)));
        assert!(owners.end_call(1, Some("c2"), None));
        assert!(
            !owners.end_call(1, Some("c2"), None),
            "the repeated start was one call"
        );
    }

    #[test]
    fn a_refresh_keeps_the_calls_of_turns_still_open() {
        let mut owners = owners(&[1, 2]);
        owners.start_call(1, Call::default());
        owners.refresh(vec![turn(1, "a")], &[1]);
        assert_eq!(who(&owners), (Origin::Turn, Some(1), Some(Decided::ToolCall)));
        owners.refresh(vec![turn(3, "a")], &[3]);
        assert_eq!(
            who(&owners).0,
            Origin::Outside,
            "a new turn starts with no call open"
        );
    }
}
