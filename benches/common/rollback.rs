//! W5 (performance.md §8.3): roll back a turn that changed 1,000 files of the tree.
//!
//! filewatchd: `POST /v1/sessions/bench/undo` with `{}`, timed until the full answer.
//! Peer: `git --git-dir=$SHADOW --work-tree=. restore --source <tree> --worktree -- .` from the
//! opencode-style shadow, `<tree>` being the shadow snapshot taken before the turn.
//!
//! One repetition, all in the same tree and the same run:
//! 1. turn start (the boundary), append a line to each of the 1,000 files, turn end (checked:
//!    `changes` lists exactly those files), then the shadow's turn-end snapshot (untimed, as
//!    opencode takes it), so git's index knows the tree as it is;
//! 2. filewatchd undo, timed; checked: `applied`, 1,000 actions `restore`/`done` on exactly
//!    those paths, the files hold their pre-turn bytes, and only they were written;
//! 3. redo (untimed) puts the turn's content back (checked byte for byte), then a barrier so
//!    the daemon has recorded its own writes before git runs;
//! 4. git restore, timed; checked the same way (content, only those files written), then a
//!    barrier so the daemon has recorded git's writes before the next repetition.
//!
//! "Written" = the file's (inode, mtime_ns) changed between a stat walk of the whole tree just
//! before and just after the operation. filewatchd renames a temp file into place (a new
//! inode); git unlinks and creates (the freed inode number often comes back, the mtime does
//! not).

use std::collections::{BTreeSet, HashMap};
use std::fs;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::codex::Codex;
use super::daemon::{self, Daemon};
use super::edits::append_line;
use super::gentree::GenFile;
use super::shadow::Shadow;

/// Files the rolled-back turn changes.
pub const ROLLBACK_FILES: usize = 1_000;

/// The files of the workload: every `step`-th file of the sorted list from index 5, with
/// `step = n / 1000` (t20k: 20, t100k: 100), so `i % 10 == 5`: disjoint from the 5-file turns
/// (`i % 10 == 7`) and from the sed workload (`i % 10 == 2`).
pub fn picks(files: &[GenFile]) -> Vec<&GenFile> {
    let step = pick_step(files.len());
    files
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 5 % step)
        .map(|(_, f)| f)
        .take(ROLLBACK_FILES)
        .collect()
}

/// Every how many files one is picked.
pub fn pick_step(n: usize) -> usize {
    (n / ROLLBACK_FILES).max(1)
}

/// Which files an operation wrote, from two stat walks of the tree.
#[derive(Debug, Default, Clone)]
pub struct Written {
    /// Files whose (inode, mtime_ns) changed.
    pub total: usize,
    /// Of those, files the turn had changed.
    pub of_turn: usize,
    /// Files present before and gone after, or new after (none expected).
    pub appeared_or_vanished: usize,
}

impl Written {
    pub fn exact(&self, n: usize) -> bool {
        self.total == n && self.of_turn == n && self.appeared_or_vanished == 0
    }
}

/// (inode, mtime seconds, mtime nanoseconds) of every regular file under `root`, by relative
/// path. The daemon's transient files (`.filewatchd-*`: barrier cookies, rollback temps) and
/// `.git/` (the tree is a real repo for the Codex-style peer) are left out.
pub fn stat_tree(root: &Path) -> Result<HashMap<String, (u64, i64, i64)>, String> {
    let mut out = HashMap::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let rd = fs::read_dir(&dir).map_err(|e| format!("read_dir {}: {e}", dir.display()))?;
        for entry in rd {
            let entry = entry.map_err(|e| format!("read_dir {}: {e}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".filewatchd-") || name == ".git" {
                continue;
            }
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let md = fs::symlink_metadata(entry.path())
                .map_err(|e| format!("stat {}: {e}", entry.path().display()))?;
            if md.is_dir() {
                stack.push((entry.path(), child));
            } else if md.is_file() {
                out.insert(child, (md.ino(), md.mtime(), md.mtime_nsec()));
            }
        }
    }
    Ok(out)
}

fn compare(
    before: &HashMap<String, (u64, i64, i64)>,
    after: &HashMap<String, (u64, i64, i64)>,
    turn: &BTreeSet<&str>,
) -> Written {
    let mut w = Written::default();
    for (path, st) in before {
        match after.get(path) {
            None => w.appeared_or_vanished += 1,
            Some(st2) if st2 != st => {
                w.total += 1;
                if turn.contains(path.as_str()) {
                    w.of_turn += 1;
                }
            }
            Some(_) => {}
        }
    }
    w.appeared_or_vanished += after.keys().filter(|p| !before.contains_key(*p)).count();
    w
}

/// Number of `files` whose bytes on disk differ from `want` (same order).
fn content_mismatches(tree: &Path, files: &[&GenFile], want: &[Vec<u8>]) -> usize {
    files
        .iter()
        .zip(want)
        .filter(|(f, w)| fs::read(tree.join(&f.rel)).ok().as_deref() != Some(w.as_slice()))
        .count()
}

/// Checks a rollback answer: HTTP 200, `applied`, and one `done` action per turn file (with
/// `action` = `expect_action`), nothing else. Returns a description of the first problem.
fn check_answer(status: u16, v: &Value, turn: &BTreeSet<&str>, expect_action: &str) -> Option<String> {
    if status != 200 {
        return Some(format!("HTTP {status}: {}", short(v)));
    }
    if v.get("applied").and_then(Value::as_bool) != Some(true) {
        return Some(format!("applied is not true: {}", short(v)));
    }
    let actions = v
        .get("actions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut paths = BTreeSet::new();
    let mut not_done = 0;
    let mut other_action = 0;
    for a in &actions {
        if let Some(p) = a.get("path").and_then(Value::as_str) {
            paths.insert(p.to_string());
        }
        if a.get("status").and_then(Value::as_str) != Some("done") {
            not_done += 1;
        }
        if a.get("action").and_then(Value::as_str) != Some(expect_action) {
            other_action += 1;
        }
    }
    let missing = turn.iter().filter(|p| !paths.contains(**p)).count();
    let extra = paths.iter().filter(|p| !turn.contains(p.as_str())).count();
    let lists: Vec<String> = ["conflicts", "skipped", "not_restorable", "kept"]
        .iter()
        .filter_map(|k| {
            let n = v.get(*k).and_then(Value::as_array).map_or(0, Vec::len);
            (n > 0).then(|| format!("{k} {n}"))
        })
        .collect();
    if actions.len() != turn.len()
        || not_done > 0
        || other_action > 0
        || missing > 0
        || extra > 0
        || !lists.is_empty()
    {
        return Some(format!(
            "{} actions for {} files ({not_done} not done, {other_action} not `{expect_action}`, {missing} missing, {extra} unexpected){}",
            actions.len(),
            turn.len(),
            if lists.is_empty() {
                String::new()
            } else {
                format!("; {}", lists.join(", "))
            }
        ));
    }
    None
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        format!("{}…", &s[..300])
    } else {
        s
    }
}

/// The origin of the latest recorded version of `path` (`GET /v1/history`).
fn latest_origin(d: &Daemon, path: &str) -> String {
    d.get_json(&format!("/v1/history?path={path}"))
        .ok()
        .and_then(|v| {
            v.pointer("/versions")
                .and_then(Value::as_array)
                .and_then(|a| a.last())
                .and_then(|x| x.get("origin"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "?".into())
}

/// Everything one tree's W5 run measured and checked.
#[derive(Default)]
pub struct RollbackRun {
    /// Files the turn changed, and every how many files of the sorted list they were picked.
    pub files: usize,
    pub step: usize,
    pub fw: Vec<Duration>,
    pub git: Vec<Duration>,
    /// Daemon CPU from the undo request to its answer.
    pub fw_cpu: Vec<Duration>,
    /// git's own CPU (user + sys of the child).
    pub git_cpu: Vec<Duration>,
    pub fw_written: Vec<Written>,
    pub git_written: Vec<Written>,
    /// Repetitions whose undo answer was right (applied, 1,000 `restore` actions all `done`).
    pub answers_ok: usize,
    /// Repetitions where the files held their pre-turn bytes after the undo / after git.
    pub fw_content_ok: usize,
    pub git_content_ok: usize,
    /// Repetitions whose turn end listed exactly the 1,000 files.
    pub turns_ok: usize,
    /// The Codex-style restore (`git restore --source <ghost> --worktree --staged -- .` in the
    /// tree as a real repo), when that peer runs: times, git's CPU, files written, content.
    pub codex: Vec<Duration>,
    pub codex_cpu: Vec<Duration>,
    pub codex_written: Vec<Written>,
    pub codex_content_ok: usize,
    /// Origin of the first file's latest version after the undo and after git (+ barrier).
    pub origin_after_undo: Vec<String>,
    pub origin_after_git: Vec<String>,
    /// Descriptions of what went wrong (at most a few).
    pub problems: Vec<String>,
}

impl RollbackRun {
    fn problem(&mut self, s: String) {
        eprintln!("    problem: {s}");
        if self.problems.len() < 4 {
            self.problems.push(s);
        }
    }

    pub fn reps(&self) -> usize {
        self.fw.len()
    }

    /// Every check of every repetition held.
    pub fn ok(&self) -> bool {
        let r = self.reps();
        self.problems.is_empty()
            && self.answers_ok == r
            && self.fw_content_ok == r
            && self.git_content_ok == r
            && self.turns_ok == r
            && self.fw_written.iter().all(|w| w.exact(self.files))
            && self.git_written.iter().all(|w| w.exact(self.files))
            && self.codex_content_ok == self.codex.len()
    }
}

fn ticks(t: u64, tck: u64) -> Duration {
    Duration::from_secs_f64(t as f64 / tck as f64)
}

/// Step 5 of a repetition (Codex peer): the turn's bytes are put back with plain appends
/// (outside any turn) and a barrier, then `git restore --source <ghost> --worktree --staged
/// -- .` is timed and checked like the others, followed by a barrier.
#[allow(clippy::too_many_arguments)]
fn codex_leg(
    out: &mut RollbackRun,
    d: &Daemon,
    codex: &Codex,
    ghost: &str,
    tree: &Path,
    set: &[&GenFile],
    before: &[Vec<u8>],
    turn: &BTreeSet<&str>,
    (r, line, tck): (usize, &str, u64),
) -> Result<(), String> {
    for f in set {
        append_line(&tree.join(&f.rel), line)?;
    }
    d.sync()?;
    let st0 = stat_tree(tree)?;
    let ch0 = daemon::children_ticks();
    let dt = codex.restore(ghost, &[])?;
    let ch1 = daemon::children_ticks();
    let st1 = stat_tree(tree)?;
    let bad = content_mismatches(tree, set, before);
    if bad == 0 {
        out.codex_content_ok += 1;
    } else {
        out.problem(format!(
            "rep {r}: after the Codex restore {bad} files differ from their pre-turn bytes"
        ));
    }
    let w = compare(&st0, &st1, turn);
    d.sync()?;
    eprintln!(
        "          codex restore {} (CPU {}, wrote {})",
        super::stats::fmt_dur(dt),
        super::stats::fmt_dur(ticks(ch1 - ch0, tck)),
        w.total
    );
    out.codex.push(dt);
    out.codex_cpu.push(ticks(ch1 - ch0, tck));
    out.codex_written.push(w);
    Ok(())
}

/// Runs `reps` repetitions of W5 on `tree` (see the module's doc). `name` prefixes progress
/// lines on stderr. Errors are for what stops the run (a failed request, git failing);
/// wrong answers are recorded in the result. With `codex`, each repetition also times the
/// Codex-style restore from a ghost commit of the pre-turn tree (taken once, untimed).
#[allow(clippy::too_many_arguments)]
pub fn run(
    name: &str,
    d: &Daemon,
    sh: &Shadow,
    codex: Option<&Codex>,
    tree: &Path,
    files: &[GenFile],
    reps: usize,
    tck: u64,
) -> Result<RollbackRun, String> {
    let set = picks(files);
    let turn: BTreeSet<&str> = set.iter().map(|f| f.rel.as_str()).collect();
    let mut out = RollbackRun {
        files: set.len(),
        step: pick_step(files.len()),
        ..Default::default()
    };
    let before: Vec<Vec<u8>> = set
        .iter()
        .map(|f| fs::read(tree.join(&f.rel)).map_err(|e| format!("read {}: {e}", f.rel)))
        .collect::<Result<_, _>>()?;
    // The shadow snapshot of the pre-turn tree: git restores from it.
    let (_, tree_id) = sh.snapshot()?;
    let ghost = match codex {
        Some(c) => Some(c.snapshot()?.1),
        None => None,
    };
    eprintln!(
        "[{name}] rollback: {reps} × (turn appending a line to {} files, undo, redo, git restore --source {})",
        set.len(),
        &tree_id[..12.min(tree_id.len())]
    );
    for r in 0..reps {
        // 1. The turn.
        d.turn_start()?;
        let line = format!("// rollback bench {r}\n");
        for f in &set {
            append_line(&tree.join(&f.rel), &line)?;
        }
        let (_, ended) = d.turn_end()?;
        let got: BTreeSet<&str> = ended
            .get("changes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.get("path").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let n_changes = ended.get("changes").and_then(Value::as_array).map_or(0, Vec::len);
        if got == turn && n_changes == turn.len() {
            out.turns_ok += 1;
        } else {
            out.problem(format!(
                "rep {r}: the turn's end marker lists {n_changes} changes, expected the {} files",
                turn.len()
            ));
        }
        let after: Vec<Vec<u8>> = before
            .iter()
            .map(|b| [b.as_slice(), line.as_bytes()].concat())
            .collect();
        sh.snapshot()?; // opencode's snapshot at the turn's end (untimed)

        // 2. filewatchd undo.
        let st0 = stat_tree(tree)?;
        let cpu0 = d.sample();
        let (dt, status, answer) = d.undo()?;
        let cpu1 = d.sample();
        let st1 = stat_tree(tree)?;
        match check_answer(status, &answer, &turn, "restore") {
            None => out.answers_ok += 1,
            Some(p) => out.problem(format!("rep {r}: undo: {p}")),
        }
        let bad = content_mismatches(tree, &set, &before);
        if bad == 0 {
            out.fw_content_ok += 1;
        } else {
            out.problem(format!(
                "rep {r}: after the undo {bad} files differ from their pre-turn bytes"
            ));
        }
        let fw_w = compare(&st0, &st1, &turn);
        out.origin_after_undo.push(latest_origin(d, &set[0].rel));

        // 3. Redo (untimed) puts the turn's content back; barrier.
        let (_, status, answer) = d.redo()?;
        if let Some(p) = check_answer(status, &answer, &turn, "restore") {
            out.problem(format!("rep {r}: redo: {p}"));
        }
        let bad = content_mismatches(tree, &set, &after);
        if bad != 0 {
            out.problem(format!(
                "rep {r}: after the redo {bad} files differ from the turn's bytes"
            ));
        }
        d.sync()?;

        // 4. git restore from the shadow.
        let st0 = stat_tree(tree)?;
        let ch0 = daemon::children_ticks();
        let gt = sh.restore(&tree_id)?;
        let ch1 = daemon::children_ticks();
        let st1 = stat_tree(tree)?;
        let bad = content_mismatches(tree, &set, &before);
        if bad == 0 {
            out.git_content_ok += 1;
        } else {
            out.problem(format!(
                "rep {r}: after git restore {bad} files differ from their pre-turn bytes"
            ));
        }
        let git_w = compare(&st0, &st1, &turn);
        d.sync()?; // the daemon records git's writes before the next repetition
        out.origin_after_git.push(latest_origin(d, &set[0].rel));

        eprintln!(
            "[{name}]   rollback {r}: filewatchd undo {} (CPU {}, wrote {}) | git restore {} (CPU {}, wrote {})",
            super::stats::fmt_dur(dt),
            super::stats::fmt_dur(ticks(cpu1.ticks - cpu0.ticks, tck)),
            fw_w.total,
            super::stats::fmt_dur(gt),
            super::stats::fmt_dur(ticks(ch1 - ch0, tck)),
            git_w.total
        );
        if let (Some(c), Some(g)) = (codex, &ghost) {
            codex_leg(&mut out, d, c, g, tree, &set, &before, &turn, (r, &line, tck))?;
        }
        out.fw.push(dt);
        out.git.push(gt);
        out.fw_cpu.push(ticks(cpu1.ticks - cpu0.ticks, tck));
        out.git_cpu.push(ticks(ch1 - ch0, tck));
        out.fw_written.push(fw_w);
        out.git_written.push(git_w);
    }
    Ok(out)
}
