//! Retention (docs/rollback.md, "Retention"): `gc` collapses history before the cutoff to each path's state at
//! the cutoff and deletes blobs nothing names any more; a dry run changes nothing; every
//! retained boundary stays exactly restorable, an expired one is refused with 410 `expired`,
//! and whatever a pending redo needs is kept.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use serde_json::{Value, json};

const TURNS: usize = 8;

/// The files every test starts from, plus the retention config.
fn seed(ws: &Workspace, config: &str) {
    ws.write(".filewatchd.toml", config);
    ws.write("keep.txt", "never changes\n");
    ws.write("m.txt", noise(100, 4096));
    for f in 0..3 {
        ws.write(format!("f{f}.txt"), noise(200 + f, 2048));
    }
    ws.write("run.sh", "#!/bin/sh\necho run\n");
    ws.sh("ln -s f0.txt link");
}

/// Turn `i`: modifies `m.txt` and one of `f*.txt`, adds `add/{i}.txt`, deletes the file turn
/// `i - 2` added, now and then flips an executable bit or retargets a symlink. Every content
/// is new (incompressible), so every turn costs store space.
fn turn_body(ws: &Workspace, i: usize) {
    let i64 = i as u64;
    ws.write("m.txt", noise(100 + 10 * i64, 4096));
    ws.write(format!("f{}.txt", i % 3), noise(200 + 10 * i64, 2048));
    ws.write(format!("add/{i}.txt"), noise(300 + 10 * i64, 1024));
    if i >= 3 {
        ws.remove(format!("add/{}.txt", i - 2));
    }
    match i % 3 {
        0 => ws.sh("if [ -x run.sh ]; then chmod -x run.sh; else chmod +x run.sh; fi"),
        1 => ws.sh(&format!("ln -sfn f{}.txt link", i % 3)),
        _ => {}
    }
}

/// Runs `count` turns of session `s1`; returns the tree at every boundary, `before` and
/// `after`, and a time between each turn and the next, indexed by turn number (index 0
/// unused).
fn run_turns(ws: &Workspace, daemon: &Daemon, count: usize) -> (Vec<Tree>, Vec<Tree>, Vec<String>) {
    let (mut before, mut after, mut times) = (vec![Tree::new()], vec![Tree::new()], vec![String::new()]);
    for i in 1..=count {
        before.push(snapshot(ws.root()));
        daemon.turn_start("s1", &format!("turn {i}"));
        turn_body(ws, i);
        daemon.turn_end("s1");
        after.push(snapshot(ws.root()));
        times.push(time_mark());
    }
    (before, after, times)
}

/// The history of every path that was ever in one of the trees (directories included).
fn all_histories(daemon: &Daemon, trees: &[&[Tree]]) -> BTreeMap<String, (u16, Value)> {
    let paths: BTreeSet<String> = trees
        .iter()
        .flat_map(|list| list.iter())
        .flat_map(|tree| tree.keys().cloned())
        .collect();
    paths
        .into_iter()
        .map(|p| {
            let reply = daemon.history_reply(&p);
            (p, reply)
        })
        .collect()
}

fn num(report: &Value, key: &str) -> i64 {
    report[key]
        .as_i64()
        .unwrap_or_else(|| panic!("gc report without {key}: {report:#}"))
}

/// keep_days = 0, keep_turns = 3, eight turns and one undo: the dry run changes nothing and
/// predicts the collection; the collection removes versions and blobs, collapses each path's
/// older history to its state at the cutoff, keeps every boundary of the last three turns
/// exactly restorable, expires the older ones (410), and the pending redo still gives back the
/// exact tree.
#[test]
fn gc_keeps_the_last_turns_and_the_pending_redo_exactly() {
    let ws = Workspace::new();
    seed(&ws, "keep_days = 0\nkeep_turns = 3\n");
    let daemon = Daemon::start(&ws);
    let (before, after, times) = run_turns(&ws, &daemon, TURNS);
    let turns = daemon.turn_list("s1");
    assert_eq!(turns.len(), TURNS);
    let start_seq = |n: usize| turns[n - 1]["start_seq"].as_i64().unwrap();

    // One undo: a redo is pending.
    let answer = rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(answer["target"]["turn"], TURNS, "{answer:#}");
    assert_tree_eq(&before[TURNS], &snapshot(ws.root()), "after the undo");
    let undone = snapshot(ws.root());
    let stat = marks(ws.root());

    let histories = all_histories(&daemon, &[&before, &after]);
    let status = daemon.status();
    let store_bytes = num(&status, "store_bytes");

    // The dry run: says what would go, changes nothing.
    let dry = daemon.gc(true);
    assert_eq!(dry["dry_run"], true, "{dry:#}");
    assert!(num(&dry, "versions_removed") > 0, "{dry:#}");
    assert!(num(&dry, "blobs_removed") > 0, "{dry:#}");
    assert!(num(&dry, "bytes_freed") > 0, "{dry:#}");
    assert_eq!(
        num(&dry, "cutoff_seq"),
        start_seq(TURNS - 2),
        "the oldest kept turn's start: {dry:#}"
    );
    assert_eq!(num(&dry, "turns_expired"), 5, "{dry:#}");
    assert_eq!(num(&dry, "store_bytes_before"), store_bytes, "{dry:#}");
    let cli_dry = cli_state_json(&ws, &["gc", "--dry-run", "--json"]);
    assert_eq!(
        cli_dry, dry,
        "`gc --dry-run --json` differs from the API's dry run"
    );
    let text = cli_state_text(&ws, &["gc", "--dry-run"]);
    assert!(
        text.contains(&dry["versions_removed"].to_string()),
        "gc --dry-run output:\n{text}"
    );

    let now = daemon.status();
    assert_eq!(now["store_bytes"], status["store_bytes"], "a dry run freed bytes");
    assert_eq!(
        now["latest_seq"], status["latest_seq"],
        "a dry run recorded versions"
    );
    assert_eq!(
        all_histories(&daemon, &[&before, &after]),
        histories,
        "a dry run changed the history"
    );
    assert_tree_eq(&undone, &snapshot(ws.root()), "after the gc dry runs");
    assert_eq!(marks(ws.root()), stat, "a gc dry run touched files");

    // The collection (the CLI), as predicted.
    let report = cli_state_json(&ws, &["gc", "--json"]);
    assert_eq!(report["dry_run"], false, "{report:#}");
    for key in [
        "cutoff_seq",
        "versions_removed",
        "blobs_removed",
        "bytes_freed",
        "turns_expired",
    ] {
        assert_eq!(
            report[key], dry[key],
            "{key}: the dry run predicted otherwise: {report:#}"
        );
    }
    assert_eq!(num(&report, "store_bytes_before"), store_bytes, "{report:#}");
    assert!(
        num(&report, "store_bytes_after") < store_bytes,
        "the store did not shrink: {report:#}"
    );
    assert_eq!(
        num(&daemon.status(), "store_bytes"),
        num(&report, "store_bytes_after"),
        "status disagrees with the report"
    );
    assert_tree_eq(&undone, &snapshot(ws.root()), "after gc");
    assert_eq!(marks(ws.root()), stat, "gc touched files");

    // Each path's history before the cutoff collapsed to its state at the cutoff; everything
    // after it is as it was; the latest version of every path is still there.
    let cutoff = num(&report, "cutoff_seq");
    let mut collapsed = 0;
    for (path, (status, old)) in &histories {
        if *status == 404 {
            continue;
        }
        let old = versions(old);
        let seq = |v: &Value| v["seq"].as_i64().unwrap();
        let at_cutoff = old.iter().rfind(|v| seq(v) <= cutoff);
        let later: Vec<Value> = old.iter().filter(|v| seq(v) > cutoff).cloned().collect();
        let (new_status, new) = daemon.history_reply(path);
        let new: Vec<Value> = if new_status == 404 {
            Vec::new()
        } else {
            versions(&expect(200, (new_status, new))).clone()
        };
        let mut want: Vec<Value> = at_cutoff.into_iter().cloned().collect();
        want.extend(later.iter().cloned());
        collapsed += old.len() - want.len();
        let absent_at_cutoff = at_cutoff.is_some_and(|v| v["kind"] == "absent");
        assert!(
            new == want || (absent_at_cutoff && new == later),
            "{path}: history after gc\n{new:#?}\nwanted (the state at the cutoff {cutoff}, then everything later)\n{want:#?}"
        );
        assert!(
            old.last().is_some_and(|v| v["kind"] == "absent") || new.last() == old.last(),
            "{path}: the latest version is gone"
        );
    }
    assert!(collapsed > 0, "no history collapsed");
    assert_eq!(
        daemon.history("keep.txt"),
        histories["keep.txt"].1,
        "keep.txt's only version"
    );

    // Expired boundaries: refused with 410, nothing changed.
    for turn in 1..=5 {
        assert_error(
            410,
            "expired",
            daemon.rollback("s1", json!({"to": "before", "turn": turn})),
        );
    }
    for turn in 1..=4 {
        assert_error(
            410,
            "expired",
            daemon.rollback("s1", json!({"to": "after", "turn": turn})),
        );
    }
    let m_turn2 = versions(&histories["m.txt"].1)
        .iter()
        .find(|v| v["session"] == "s1" && v["turn"] == 2)
        .unwrap_or_else(|| panic!("{:#}", histories["m.txt"].1))["seq"]
        .clone();
    let (status, body) = daemon.get_bytes(&format!("/v1/content?path=m.txt&seq={m_turn2}"));
    assert_eq!(
        status,
        410,
        "content of an expired version: {}",
        String::from_utf8_lossy(&body)
    );
    let out = cli_state(&ws, &["rollback", "--before", "2", "--session", "s1"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A time before the cutoff has expired too, for a time rollback and for content.
    assert_error(410, "expired", daemon.rollback_in_time(json!({"at": times[2]})));
    let out = cli_state(&ws, &["show", "m.txt", "--at", &times[2]]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "show --at an expired time: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "show --at an expired time printed content");
    assert_tree_eq(&undone, &snapshot(ws.root()), "after refused rollbacks");
    assert_eq!(marks(ws.root()), stat, "a refused rollback touched files");

    // Every retained boundary: exact, and its redo comes back exactly.
    for turn in (TURNS - 2..=TURNS).rev() {
        for (to, tree) in [("after", &after[turn]), ("before", &before[turn])] {
            let what = format!("{to} {turn}");
            rollback_applied(daemon.rollback("s1", json!({"to": to, "turn": turn})));
            assert_tree_eq(
                tree,
                &snapshot(ws.root()),
                &format!("after gc, rolled back to {what}"),
            );
            rollback_applied(daemon.redo("s1", json!({})));
            assert_tree_eq(
                &undone,
                &snapshot(ws.root()),
                &format!("the redo of the rollback to {what}"),
            );
        }
    }

    // The redo that was pending before gc: the tree after turn 8, exactly.
    let answer = rollback_applied(daemon.redo("s1", json!({})));
    assert_eq!(answer["operation"], "redo", "{answer:#}");
    assert_tree_eq(&after[TURNS], &snapshot(ws.root()), "the redo pending before gc");
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));

    // A time rollback to a retained time (after turn 6), and its redo.
    rollback_applied(daemon.rollback_in_time(json!({"at": times[TURNS - 2]})));
    assert_tree_eq(
        &after[TURNS - 2],
        &snapshot(ws.root()),
        "after gc, a time rollback to after turn 6",
    );
    rollback_applied(daemon.redo_in_time(json!({})));
    assert_tree_eq(
        &after[TURNS],
        &snapshot(ws.root()),
        "the redo of the time rollback",
    );
}

/// With keep_turns = 0 and keep_days = 0 only pending redos hold the history: two undos are
/// redone exactly after gc, while every turn boundary before them has expired.
#[test]
fn gc_keeps_what_pending_redos_need() {
    let ws = Workspace::new();
    seed(&ws, "keep_days = 0\nkeep_turns = 0\n");
    let daemon = Daemon::start(&ws);
    let (before, after, _) = run_turns(&ws, &daemon, 3);

    rollback_applied(daemon.undo("s1", json!({})));
    rollback_applied(daemon.undo("s1", json!({})));
    assert_tree_eq(&after[1], &snapshot(ws.root()), "after two undos");

    let report = daemon.gc(false);
    assert!(num(&report, "versions_removed") > 0, "{report:#}");
    assert!(num(&report, "blobs_removed") > 0, "{report:#}");
    assert_tree_eq(&after[1], &snapshot(ws.root()), "after gc");

    for turn in 1..=3 {
        assert_error(
            410,
            "expired",
            daemon.rollback("s1", json!({"to": "before", "turn": turn})),
        );
    }
    rollback_applied(daemon.redo("s1", json!({})));
    assert_tree_eq(&after[2], &snapshot(ws.root()), "the first pending redo");
    rollback_applied(daemon.redo("s1", json!({})));
    assert_tree_eq(&after[3], &snapshot(ws.root()), "the second pending redo");
    drop(before);
}

/// keep_turns counts each session's turns, a fork's inherited turns included: the parent
/// keeps its last three, the fork its last three (one inherited, two its own); what either
/// keeps stays exact after gc, what neither keeps has expired for both.
#[test]
fn gc_keeps_the_last_turns_of_each_session_and_of_forks() {
    let ws = Workspace::new();
    seed(&ws, "keep_days = 0\nkeep_turns = 3\n");
    let daemon = Daemon::start(&ws);
    let (before, after, _) = run_turns(&ws, &daemon, 6);
    expect(201, daemon.fork("s1", "fork", json!(6)));
    let mut trees = vec![before[6].clone(), after[6].clone()];
    for i in 7..=8 {
        let started = daemon.turn_start("fork", &format!("fork turn {i}"));
        assert_eq!(started["turn"], i, "{started:#}");
        turn_body(&ws, i);
        daemon.turn_end("fork");
        trees.push(snapshot(ws.root()));
    }
    let latest_tree = snapshot(ws.root());
    let trunk_turns = daemon.turn_list("s1");

    let report = daemon.gc(false);
    assert_eq!(
        num(&report, "cutoff_seq"),
        trunk_turns[3]["start_seq"].as_i64().unwrap(),
        "the parent's third-last turn (4) starts the kept history: {report:#}"
    );
    assert!(num(&report, "versions_removed") > 0, "{report:#}");

    // The fork's kept boundaries: before/after 6 (inherited), 7 and 8 (its own).
    let boundaries = [("before", 6), ("after", 6), ("after", 7), ("after", 8)];
    for ((to, turn), tree) in boundaries
        .iter()
        .zip([&trees[0], &trees[1], &trees[2], &trees[3]])
    {
        rollback_applied(daemon.rollback("fork", json!({"to": to, "turn": turn})));
        assert_tree_eq(
            tree,
            &snapshot(ws.root()),
            &format!("the fork, after gc, at {to} {turn}"),
        );
        rollback_applied(daemon.redo("fork", json!({})));
        assert_tree_eq(
            &latest_tree,
            &snapshot(ws.root()),
            &format!("the fork's redo from {to} {turn}"),
        );
    }
    // The parent's oldest kept boundary (the fork's turns 7 and 8 changed its files since:
    // force them). The files only the fork made are the fork's, and stay (issue 48).
    let answer = expect(
        200,
        daemon.rollback("s1", json!({"to": "before", "turn": 4, "on_conflict": "force"})),
    );
    assert_eq!(answer["applied"], true, "{answer:#}");
    let parents = || {
        let mut now = snapshot(ws.root());
        for fork_only in ["add/7.txt", "add/8.txt"] {
            assert!(
                now.remove(fork_only).is_some(),
                "{fork_only}, the fork's own, is gone"
            );
        }
        now
    };
    assert_tree_eq(&before[4], &parents(), "the parent, after gc, at before 4");

    // Kept by neither: expired for both.
    assert_error(
        410,
        "expired",
        daemon.rollback("s1", json!({"to": "before", "turn": 3})),
    );
    assert_error(
        410,
        "expired",
        daemon.rollback("fork", json!({"to": "before", "turn": 3})),
    );
    assert_tree_eq(&before[4], &parents(), "after refused rollbacks");
}
