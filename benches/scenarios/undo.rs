//! W5: the rollback of a 1,000-file turn (`POST …/undo`) against `git restore` from the shadow
//! and the Codex restore; and agent-undo's rows, measured on a copy of the tree after the
//! daemon stopped.

use std::fs;
use std::path::Path;

use super::run::Run;
use super::sed::SedOut;
use crate::common::agent_undo;
use crate::common::daemon::Daemon;
use crate::common::edits::{sed_baseline_reps, sed_script};
use crate::common::report::{Row, best_ratio, ratio_cell};
use crate::common::rollback::{self, RollbackRun, Written};
use crate::common::stats::{fmt_dur, fmt_int, fmt_med_p95, fmt_ratio, median, ratio};

/// W5: the rollback of a 1,000-file turn against `git restore` from the shadow and the Codex
/// restore.
pub fn w5_rollback(r: &mut Run, d: &Daemon) -> Result<(), String> {
    let rb = rollback::run(
        r.name,
        d,
        &r.sh,
        r.codex_peer(),
        &r.tree,
        &r.g.files,
        r.o.rollback_reps,
        r.tck,
    )?;
    r.correct_ok &= rb.ok();
    r.fw_undo = Some(median(&rb.fw));
    r.push_verified(rollback_row(&rb), "W5");
    r.rows.push(rollback_cpu_row(&rb));
    r.notes.push(rollback_note(&rb));
    Ok(())
}

/// "1,000 (all the turn's files) in 5/5 runs", or what differed.
fn written_text(ws: &[Written], n: usize) -> String {
    let exact = ws.iter().filter(|w| w.exact(n)).count();
    if exact == ws.len() {
        return format!(
            "{} files, all of them the turn's, in {exact}/{} runs",
            fmt_int(n as u64),
            ws.len()
        );
    }
    let list: Vec<String> = ws
        .iter()
        .map(|w| {
            let mut s = format!("{} ({} of the turn's)", w.total, w.of_turn);
            if w.appeared_or_vanished > 0 {
                s += &format!(" + {} appeared/vanished", w.appeared_or_vanished);
            }
            s
        })
        .collect();
    format!(
        "**not exactly the {} turn files**: {}",
        fmt_int(n as u64),
        list.join(", ")
    )
}

/// The timed row of W5: filewatchd's undo against both peers' restores.
fn rollback_row(rb: &RollbackRun) -> Row {
    let reps = rb.reps();
    let codex = (!rb.codex.is_empty()).then(|| median(&rb.codex));
    let best = best_ratio(median(&rb.fw), &[Some(median(&rb.git)), codex]);
    let mut row = Row::new(format!(
        "W5: rollback of a turn that changed {} files: `POST …/undo` → answer; shadow: `git restore --source <tree> --worktree -- .`; codex: `git restore --source <ghost> --worktree --staged -- .` (n={reps})",
        fmt_int(rb.files as u64)
    ));
    row.fw = fmt_med_p95(&rb.fw);
    row.shadow = fmt_med_p95(&rb.git);
    row.codex = if codex.is_some() {
        fmt_med_p95(&rb.codex)
    } else {
        "not run".into()
    };
    row.ratio = ratio_cell(best);
    row.floor = "write+rename 0.21 s; with fsync 0.39 s".into();
    row.goal = "≤ 1.0× best peer (perf. W5: ≤ 0.3 s, ≤ 0.5 s durable)".into();
    row.pass = Some(best.is_some_and(|b| b <= 1.0));
    row.correct = rollback_correct(rb);
    row
}

/// W5's checks: which files each tool wrote, the undo's answer, the bytes back.
fn rollback_correct(rb: &RollbackRun) -> String {
    let reps = rb.reps();
    let n = rb.files;
    let codex = !rb.codex.is_empty();
    let mut correct = format!(
        "written: filewatchd {}; shadow git {}",
        written_text(&rb.fw_written, n),
        written_text(&rb.git_written, n)
    );
    if codex {
        // Information, not a check: `--staged` resets the repo's index to the ghost commit, and
        // git rewrites every path whose index entry it replaced (here: the files of earlier
        // workloads, uncommitted in the repo), with the same bytes.
        let w: Vec<String> = rb
            .codex_written
            .iter()
            .map(|w| format!("{} ({} of the turn's)", w.total, w.of_turn))
            .collect();
        correct += &format!("; codex wrote {} (info)", w.join(", "));
    }
    correct += &format!(
        "; undo answer applied with {} `done` actions in {}/{reps}; pre-turn bytes back: filewatchd {}/{reps}, shadow git {}/{reps}",
        fmt_int(n as u64),
        rb.answers_ok,
        rb.fw_content_ok,
        rb.git_content_ok
    );
    if codex {
        correct += &format!(", codex {}/{}", rb.codex_content_ok, rb.codex.len());
    }
    if rb.turns_ok != reps {
        correct += &format!(
            "; **turn end listed the {n} files in only {}/{reps}**",
            rb.turns_ok
        );
    }
    if !rb.problems.is_empty() {
        correct += &format!("; **{}**", rb.problems.join("; "));
    }
    correct
}

fn rollback_cpu_row(rb: &RollbackRun) -> Row {
    let mut cpu = Row::new("W5: rollback CPU: daemon during the undo, vs git's own");
    cpu.fw = fmt_dur(median(&rb.fw_cpu));
    cpu.shadow = format!("{} (git)", fmt_dur(median(&rb.git_cpu)));
    if !rb.codex.is_empty() {
        cpu.codex = format!("{} (git)", fmt_dur(median(&rb.codex_cpu)));
    }
    cpu.ratio = fmt_ratio(ratio(median(&rb.fw_cpu), median(&rb.git_cpu)));
    cpu.goal = "info".into();
    cpu
}

/// Consecutive repeats removed, joined: the origins W5 saw recorded.
fn uniq(v: &[String]) -> String {
    let mut u: Vec<&str> = v.iter().map(String::as_str).collect();
    u.dedup();
    u.join(", ")
}

fn rollback_note(rb: &RollbackRun) -> String {
    format!(
        "W5 (rollback): each run opens a turn, appends a line to {} files (every {}th file of the sorted list, disjoint from the other workloads' files), ends it and takes the shadow's turn-end snapshot (untimed); then `POST /v1/sessions/bench/undo` `{{}}` is timed until its answer; `redo` (untimed) puts the turn back and a barrier lets the daemon record its own writes; then `git --git-dir=$SHADOW --work-tree=. restore --source <pre-turn tree id> --worktree -- .` is timed, followed by a barrier; then (Codex) the same lines are appended again outside any turn, a barrier, and `git restore --source <ghost commit of the pre-turn tree> --worktree --staged -- .` in the real repo is timed, followed by a barrier. “written” = (inode, mtime_ns) changed between stat walks of the whole tree (`.git/` left out) before and after. filewatchd writes each file temp + fsync + rename (durable); git writes without fsync. Latest recorded origin of a restored file: {} after the undo, {} after git.",
        fmt_int(rb.files as u64),
        rb.step,
        uniq(&rb.origin_after_undo),
        uniq(&rb.origin_after_git)
    )
}

/// Copies `files` (relative paths) from `tree` into a new `dest`, keeping their paths.
fn copy_subset(tree: &Path, dest: &Path, files: &[String]) -> Result<(), String> {
    for f in files {
        let to = dest.join(f);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("mkdir {}: {e}", parent.display()))?;
        }
        fs::copy(tree.join(f), &to).map_err(|e| format!("copy {f}: {e}"))?;
    }
    Ok(())
}

/// agent-undo after filewatchd stopped, on a copy of the tree holding only the files of its two
/// turns (its `au init` hashes and stores every file with one fsync each: 52 s for t20k in a
/// trial, far over the quick run's budget): W2's sed (the next script of the chain) and W5's
/// 1,000-file turn, each undone.
pub fn au_rows(r: &mut Run, au: &agent_undo::Tool, sed: &SedOut, base: &Path) {
    let sed_files: Vec<String> = sed
        .list
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let undo_files: Vec<String> = rollback::picks(&r.g.files)
        .iter()
        .map(|f| f.rel.clone())
        .collect();
    let au_tree = base.join("au-tree");
    let all: Vec<String> = sed_files.iter().chain(&undo_files).cloned().collect();
    if au.bin.is_some()
        && let Err(e) = copy_subset(&r.tree, &au_tree, &all)
    {
        r.rows
            .extend(agent_undo::not_measured(&format!("copying its tree: {e}")));
        return;
    }
    let inputs = agent_undo::Inputs {
        tree: &au_tree,
        sed_files,
        sed_script: sed_script(r.o.sed_reps + sed_baseline_reps(r.o.sed_reps)),
        undo_files,
        fw_sed: r.fw_sed,
        fw_undo: r.fw_undo,
        log: base.join("au-serve.log"),
    };
    let (rows, notes) = agent_undo::run(r.name, au, &inputs);
    r.rows.extend(rows);
    r.notes.extend(notes);
}
