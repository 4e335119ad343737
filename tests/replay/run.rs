//! One replay: a history's commits as turns of one session, each listing checked against git's
//! diff, a verification pass every few turns, then undos, redos, a rollback to the start and
//! its redo, each followed by a comparison of the whole tree with git's tree.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::git::{GitTree, Repo};
use super::{listing, tree};
use crate::common::{Daemon, Workspace, expect, poll_until};

/// How long a tree with a FUSE stand-in in it is read again before it is compared as it is.
const STAND_IN_GRACE: Duration = Duration::from_secs(1);

/// The session every replayed turn belongs to.
const SESSION: &str = "replay";
/// A verification pass runs after every this many turns.
const VERIFY_EVERY: usize = 25;
/// How many failures of each kind are printed as they are found (all are counted);
/// `FILEWATCHD_REPLAY_SHOW=N` for another number.
fn shown() -> usize {
    std::env::var("FILEWATCHD_REPLAY_SHOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
}

/// What one replay does.
pub struct Plan {
    /// The history's name, for messages.
    pub name: &'static str,
    /// At most this many commits, oldest first.
    pub commits: usize,
    /// Undos after the last turn (at most one per turn).
    pub undos: usize,
    /// Redos after the undos (at most one per undo).
    pub redos: usize,
}

/// What a failure is about: a turn's listing, a verification pass that found something, a
/// tree after an undo, redo or rollback, or a refusal that ended the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Listing,
    Verify,
    Tree,
    Fatal,
}

/// A replay under way: the workspace (the clone), its daemon, and what was found so far.
struct Replay {
    plan: Plan,
    ws: Workspace,
    repo: Repo,
    commits: Vec<String>,
    daemon: Daemon,
    failures: Vec<(Kind, String)>,
    end_markers: Vec<Duration>,
    undos: Vec<Duration>,
    redos: Vec<Duration>,
}

/// Replays `tip`'s history from `source` (a bundle or a repository) and panics with every
/// failure found, after printing the figures.
pub fn replay(source: &Path, tip: &str, plan: Plan) {
    replay_in(Workspace::new(), source, tip, plan);
}

/// As `replay`, in `ws` (e.g. on a mount the caller made).
pub fn replay_in(ws: Workspace, source: &Path, tip: &str, plan: Plan) {
    let repo = Repo::clone_into(source, ws.root(), tip);
    let mut commits = repo.commits(tip);
    commits.truncate(plan.commits.max(2));
    repo.checkout(&commits[0]);
    let daemon = Daemon::start(&ws);
    let mut replay = Replay {
        plan,
        ws,
        repo,
        commits,
        daemon,
        failures: Vec::new(),
        end_markers: Vec::new(),
        undos: Vec::new(),
        redos: Vec::new(),
    };
    let started = Instant::now();
    replay.compare_tree(0, "at the start, once the daemon had indexed the first commit");
    if let Err(fatal) = replay.run() {
        replay.fail(Kind::Fatal, fatal);
    }
    replay.print_figures(started.elapsed());
    replay.finish();
}

impl Replay {
    /// The phases in order; an `Err` is a refusal that ends the replay (an undo or redo that
    /// was not applied leaves nothing to compare the next one with).
    fn run(&mut self) -> Result<(), String> {
        for index in 1..self.commits.len() {
            self.turn(index);
        }
        let turns = self.commits.len() - 1;
        let undos = self.plan.undos.min(turns);
        for turn in (turns - undos + 1..=turns).rev() {
            self.undo(turn)?;
        }
        let redos = self.plan.redos.min(undos);
        for turn in turns - undos + 1..=turns - undos + redos {
            self.redo(turn, format!("the redo of the undo of turn {turn}"))?;
        }
        self.rollback_to_start()?;
        let back_to = turns - undos + redos;
        self.redo(back_to, "the redo of the rollback to before turn 1".to_string())
    }

    /// Turn `index`: the checkout of commit `index` (from commit `index - 1`) between two markers.
    fn turn(&mut self, index: usize) {
        let (from, to) = (self.commits[index - 1].clone(), self.commits[index].clone());
        self.daemon.turn_start(SESSION, &to);
        self.repo.checkout(&to);
        let marked = Instant::now();
        let ended = self.daemon.turn_end(SESSION);
        self.end_markers.push(marked.elapsed());
        if ended["turn"] != index {
            let failure = format!(
                "{}: the end marker answered turn {}",
                self.at(index),
                ended["turn"]
            );
            self.fail(Kind::Listing, failure);
        }
        let want = self.repo.diff(&from, &to);
        let again = self.daemon.turn(SESSION, index as u64, false);
        if again["changes"] == ended["changes"] {
            let what = "the end marker's answer (and the same from GET of the ended turn)";
            self.compare_listing(index, what, &want, &ended);
        } else {
            self.compare_listing(index, "the end marker's answer", &want, &ended);
            self.compare_listing(
                index,
                "GET of the ended turn (which lists otherwise)",
                &want,
                &again,
            );
        }
        if index.is_multiple_of(VERIFY_EVERY) {
            self.verify(index);
        }
        if index.is_multiple_of(100) {
            eprintln!(
                "{}: {index} of {} turns replayed",
                self.plan.name,
                self.commits.len() - 1
            );
        }
    }

    fn compare_listing(&mut self, index: usize, what: &str, want: &listing::Files, turn: &Value) {
        let found = match listing::files_of(turn) {
            Ok(found) => found,
            Err(e) => return self.fail(Kind::Listing, format!("{}: {what}: {e}", self.at(index))),
        };
        let lines = listing::differences(want, &found, turn);
        if lines.is_empty() {
            return;
        }
        self.fail(
            Kind::Listing,
            format!(
                "{}: {what} differs from `git diff --name-status --no-renames {} {}` \
             in {} file(s) (git lists {}, the turn {}):\n{}",
                self.at(index),
                short(&self.commits[index - 1]),
                short(&self.commits[index]),
                lines.len(),
                want.len(),
                found.len(),
                lines.join("\n")
            ),
        );
    }

    /// `POST /v1/verify` must find nothing: everything was recorded when it happened.
    fn verify(&mut self, index: usize) {
        let answer = expect(200, self.daemon.post("/v1/verify", json!({})));
        if answer["changed"] == 0 {
            return;
        }
        let versions: Vec<String> = answer["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| format!("  {v}"))
            .collect();
        self.fail(
            Kind::Verify,
            format!(
                "{}: the verification pass after it found {} change(s) the record had missed \
             (walked {}):\n{}",
                self.at(index),
                answer["changed"],
                answer["walked"],
                versions.join("\n")
            ),
        );
    }

    /// Undoes turn `turn`; the tree must be commit `turn - 1`'s.
    fn undo(&mut self, turn: usize) -> Result<(), String> {
        let asked = Instant::now();
        let (status, answer) = self.daemon.undo(SESSION, json!({}));
        self.undos.push(asked.elapsed());
        let what = format!("the undo of turn {turn}");
        applied(status, &answer, &what)?;
        if answer["target"]["turn"] != turn {
            self.fail(
                Kind::Tree,
                format!("{what}: it rolled back to {}", answer["target"]),
            );
        }
        self.compare_tree(turn - 1, &what);
        Ok(())
    }

    /// A redo whose tree must be commit `index`'s.
    fn redo(&mut self, index: usize, what: String) -> Result<(), String> {
        let asked = Instant::now();
        let (status, answer) = self.daemon.redo(SESSION, json!({}));
        self.redos.push(asked.elapsed());
        applied(status, &answer, &what)?;
        self.compare_tree(index, &what);
        Ok(())
    }

    /// A rollback to before turn 1: the tree must be the first commit's.
    fn rollback_to_start(&mut self) -> Result<(), String> {
        let (status, answer) = self.daemon.rollback(SESSION, json!({"to": "before", "turn": 1}));
        let what = "the rollback to before turn 1";
        applied(status, &answer, what)?;
        self.compare_tree(0, what);
        Ok(())
    }

    /// The whole tree on disk must be git's tree at commit `index`.
    /// The tree on disk once no FUSE `.fuse_hidden…` stand-in is left in it, or as it is after
    /// `STAND_IN_GRACE`: a read of the daemon's (never at idle priority on FUSE) closes its file
    /// in milliseconds, and a stand-in that stays is a difference like any other.
    fn tree_on_disk(&self) -> GitTree {
        let read = || tree::on_disk(&self.repo, self.ws.root());
        let has_stand_in = |t: &GitTree| t.files.keys().any(|p| tree::is_fuse_stand_in(p));
        poll_until(STAND_IN_GRACE, || Some(read()).filter(|t| !has_stand_in(t))).unwrap_or_else(read)
    }

    fn compare_tree(&mut self, index: usize, what: &str) {
        // The checkout moved HEAD (detached) and the index with the files: an undo, redo or
        // rollback moves them back with the files (G16).
        let head = self.repo.head();
        if head != self.commits[index] {
            let (found, want) = (short(&head), short(&self.commits[index]));
            self.fail(Kind::Tree, format!("{what}: HEAD is at {found}, not at {want}"));
        }
        let want = self.repo.tree(&self.commits[index]);
        let found = self.tree_on_disk();
        let lines = tree::differences(&want, &found);
        if lines.is_empty() {
            return;
        }
        let shown = lines.len().min(20);
        self.fail(
            Kind::Tree,
            format!(
                "{what}: the workspace differs from git's tree at commit {} ({}) in {} path(s) \
             (first {shown}):\n{}",
                short(&self.commits[index]),
                self.commit_place(index),
                lines.len(),
                lines[..shown].join("\n")
            ),
        );
    }

    /// "turn N (commit SHA, "subject")" for messages.
    fn at(&self, index: usize) -> String {
        format!(
            "turn {index} (commit {}, {})",
            short(&self.commits[index]),
            self.commit_place(index)
        )
    }

    fn commit_place(&self, index: usize) -> String {
        let subject = self.repo.subject(&self.commits[index]);
        format!("index {index} of the {} history, {subject:?}", self.plan.name)
    }

    /// Records a failure; prints the first few of each kind (and every fatal one) at once.
    fn fail(&mut self, kind: Kind, failure: String) {
        let same_kind = self.failures.iter().filter(|(k, _)| *k == kind).count();
        if same_kind < shown() || kind == Kind::Fatal {
            eprintln!("FAILED {failure}\n");
        }
        self.failures.push((kind, failure));
    }

    fn print_figures(&self, took: Duration) {
        eprintln!(
            "{} replay: {} commits ({}..{}), {} turns, {} undos, {} redos in {:.1} s; \
             end marker median {} p95 {}; undo median {} p95 {}; redo median {}",
            self.plan.name,
            self.commits.len(),
            short(&self.commits[0]),
            short(self.commits.last().unwrap()),
            self.end_markers.len(),
            self.undos.len(),
            self.redos.len(),
            took.as_secs_f64(),
            ms(percentile(&self.end_markers, 50)),
            ms(percentile(&self.end_markers, 95)),
            ms(percentile(&self.undos, 50)),
            ms(percentile(&self.undos, 95)),
            ms(percentile(&self.redos, 50)),
        );
    }

    /// Panics with the counts of each kind of failure and the first failure of each.
    fn finish(self) {
        if self.failures.is_empty() {
            return;
        }
        let mut summary = Vec::new();
        for kind in [Kind::Listing, Kind::Verify, Kind::Tree, Kind::Fatal] {
            let of_kind: Vec<&String> = self
                .failures
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, f)| f)
                .collect();
            if let Some(first) = of_kind.first() {
                summary.push(format!(
                    "{} {kind:?} failure(s); the first:\n{first}",
                    of_kind.len()
                ));
            }
        }
        panic!(
            "{} replay: {} failure(s) (the first {} of each kind are printed above)\n\n{}",
            self.plan.name,
            self.failures.len(),
            shown(),
            summary.join("\n\n")
        );
    }
}

/// A rollback-like answer must be 200, applied, with no conflict, nothing skipped or left
/// unrestorable, every action done; else what it said instead, list by list.
fn applied(status: u16, answer: &Value, what: &str) -> Result<(), String> {
    let lists = ["conflicts", "skipped", "not_restorable"];
    let mut said: Vec<String> = lists.iter().filter_map(|l| listed(answer, l)).collect();
    // A refused answer's actions are all `planned`: only an applied one's must all be done.
    let applied = answer["applied"] == true;
    let undone: Vec<&Value> = entries(answer, "actions")
        .filter(|a| applied && a["status"] != "done")
        .collect();
    if !undone.is_empty() {
        let shown: Vec<String> = undone.iter().take(10).map(|a| format!("    {a}")).collect();
        said.push(format!(
            "  {} action(s) not done:\n{}",
            undone.len(),
            shown.join("\n")
        ));
    }
    if status == 200 && applied && said.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{what}: answered {status}, applied {}, error {}, target {}:\n{}",
        answer["applied"],
        answer["error"],
        answer["target"],
        said.join("\n")
    ))
}

fn entries<'a>(answer: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    answer[list].as_array().into_iter().flatten()
}

/// A non-empty list of an answer, its first 10 entries one a line.
fn listed(answer: &Value, list: &str) -> Option<String> {
    let all: Vec<String> = entries(answer, list).map(|e| format!("    {e}")).collect();
    let shown = all.len().min(10);
    (!all.is_empty()).then(|| {
        format!(
            "  {list} ({}, first {shown}):\n{}",
            all.len(),
            all[..shown].join("\n")
        )
    })
}

fn percentile(samples: &[Duration], pct: usize) -> Option<Duration> {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = (sorted.len() * pct).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

fn ms(sample: Option<Duration>) -> String {
    sample.map_or("-".to_string(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3))
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(10)]
}
