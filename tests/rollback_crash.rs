//! G6 crash safety of rollbacks: `kill -9` after any number of a rollback's file-system
//! changes leaves no half-applied rollback behind. The restart finishes it (the tree is
//! exactly the target), says so in `status.recovery`, records it like a rollback that was not
//! interrupted, and a second crash and restart changes nothing and re-applies nothing.
//!
//! The daemon's test-only hook `FILEWATCHD_TEST_PAUSE_AFTER=K` parks a rollback after K changes
//! (K=0: the plan is journaled, nothing is changed yet); the test waits for the daemon to say
//! it parked, then kills it. Every K from 0 to the rollback's last change is run, each in its
//! own workspace; the failures of all of them are listed together.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};

const PAUSED: &str = "FILEWATCHD_TEST_PAUSE_AFTER reached";
const DEADLINE: Duration = Duration::from_secs(60);

/// The tree before the turn.
fn prepare(ws: &Workspace) {
    for i in 0..3 {
        ws.write(format!("m{i}.txt"), format!("modified {i}, before\n"));
    }
    ws.write("gone.txt", "deleted by the turn\n");
    ws.write("gonedir/inner/x.txt", "deleted with its directory\n");
    ws.write("tool.sh", "#!/bin/sh\necho tool\n");
    ws.write("mv_a.txt", "renamed by the turn\n");
    ws.write("swap", "a file the turn turns into a directory\n");
    ws.write("steady/s.txt", "never changed\n");
    ws.sh("ln -s m0.txt link");
}

/// The turn: restores, creates, deletes, a chmod, a relink, a rename, a directory tree removed
/// and one created, for the undo; the same backwards for the redo.
const TURN: &str = r#"
for i in 0 1 2; do echo "modified $i, after" > m$i.txt; done
rm gone.txt
rm -rf gonedir
chmod +x tool.sh
ln -sfn m1.txt link
mv mv_a.txt mv_b.txt
echo new > new1.txt
mkdir -p newdir/sub && echo a > newdir/a.txt && echo b > newdir/sub/b.txt
"#;

/// Added to `TURN` for the undo: a file replaced by a directory (two changes for one path).
const SWAP: &str = "rm swap && mkdir swap && echo inside > swap/f.txt";

/// How one crash point ended.
enum Point {
    /// The rollback parked after K changes, the daemon was killed, and every check passed.
    Crashed,
    /// K was more than the rollback's changes: it finished normally with this many actions.
    Finished(usize),
}

/// Runs `one(k)` for K = 0, 1, ... until the rollback finishes without parking. A K that
/// fails does not stop the others; all failures are listed at the end.
fn every_crash_point(what: &str, one: impl Fn(usize) -> Point) {
    let mut failed = Vec::new();
    let mut crashed = 0;
    for k in 0..60 {
        match catch_unwind(AssertUnwindSafe(|| one(k))) {
            Ok(Point::Crashed) => crashed += 1,
            Ok(Point::Finished(actions)) => {
                assert!(
                    failed.is_empty(),
                    "{what}: {} of {} crash points failed: K = {failed:?} (messages above)",
                    failed.len(),
                    k
                );
                assert!(
                    crashed > actions,
                    "{what}: only {crashed} crash points for {actions} actions"
                );
                return;
            }
            Err(_) => failed.push(k),
        }
    }
    panic!("{what}: the rollback never finished; failed K = {failed:?}");
}

/// Sends the rollback-like request and waits until it parks (kills the daemon, true) or
/// finishes (its answer, false).
fn park_and_kill(k: usize, daemon: Daemon, path: &str) -> Result<(), Value> {
    park_and_kill_with(k, daemon, path, json!({}))
}

fn park_and_kill_with(k: usize, daemon: Daemon, path: &str, body: Value) -> Result<(), Value> {
    let answer = daemon.post_detached(path, body);
    let until = Instant::now() + DEADLINE;
    loop {
        if let Ok(reply) = answer.try_recv() {
            let (status, body) = reply.unwrap_or_else(|| panic!("K={k}: {path} failed; {}", daemon.stderr()));
            assert_eq!(status, 200, "K={k}: {path}: {body:#}");
            return Err(body);
        }
        if daemon.stderr().contains(PAUSED) {
            break;
        }
        assert!(
            Instant::now() < until,
            "K={k}: {path} neither parked nor finished; stderr:\n{}",
            daemon.stderr()
        );
        std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
    }
    daemon.kill9();
    let reply = answer
        .recv_timeout(DEADLINE)
        .expect("the pending request never ended");
    assert!(reply.is_none(), "K={k}: the parked {path} answered: {reply:?}");
    Ok(())
}

fn pause_env(k: &str) -> [(&'static str, &str); 2] {
    [
        ("FILEWATCHD_TEST_PAUSE_AFTER", k),
        ("RUST_LOG", "filewatchd=info"),
    ]
}

/// The restart finished the rollback: the tree is exactly `target`, the recovery is reported
/// with nothing left, every planned path's latest version is the rollback's, and the
/// rollback is listed as recovered.
fn check_recovered(k: usize, ws: &Workspace, target: &Tree, planned: &[String], operation: &str) -> Daemon {
    let daemon = Daemon::start(ws);
    assert_tree_eq(target, &snapshot(ws.root()), &format!("K={k}: after the restart"));
    let status = daemon.status();
    let recovery = &status["recovery"];
    assert!(
        recovery["rollback_id"].as_u64().is_some(),
        "K={k}: no recovery reported: {status:#}"
    );
    assert_eq!(recovery["operation"], operation, "K={k}: {recovery:#}");
    assert_eq!(recovery["outcome"], "finished", "K={k}: {recovery:#}");
    assert!(
        recovery["note"].as_str().is_some_and(|n| !n.is_empty()),
        "K={k}: {recovery:#}"
    );
    assert_eq!(
        recovery["left"],
        json!([]),
        "K={k}: paths left as found: {recovery:#}"
    );
    let text = String::from_utf8_lossy(&cli_state_ok(ws, &["status"])).into_owned();
    assert!(
        text.contains(&format!("recovered:     {operation} #")),
        "K={k}: `filewatchd status` does not say so:\n{text}"
    );
    for path in planned {
        let history = daemon.history(path);
        assert_eq!(
            latest(&history)["origin"],
            "rollback",
            "K={k}: {path} not recorded as rolled back: {history:#}"
        );
    }
    let listing = expect(200, daemon.get("/v1/sessions/s1/turns"));
    let rollback = listing["rollbacks"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["rollback_id"] == recovery["rollback_id"]))
        .unwrap_or_else(|| panic!("K={k}: the recovered rollback is not listed: {listing:#}"));
    assert_eq!(rollback["status"], "recovered", "K={k}: {rollback:#}");
    daemon
}

/// A second crash after the recovery, and a restart: nothing changes, nothing is re-applied.
fn check_second_restart(k: usize, ws: &Workspace, daemon: Daemon) -> Daemon {
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));
    let status = daemon.status();
    daemon.kill9();
    let daemon = Daemon::start(ws);
    let again = daemon.status();
    assert_eq!(
        again["latest_seq"], status["latest_seq"],
        "K={k}: versions recorded at the second restart"
    );
    assert_eq!(
        again["recovery"]["rollback_id"], status["recovery"]["rollback_id"],
        "K={k}: {again:#}"
    );
    assert_tree_eq(
        &tree,
        &snapshot(ws.root()),
        &format!("K={k}: after the second restart"),
    );
    assert_eq!(
        marks(ws.root()),
        stat,
        "K={k}: files rewritten by the second restart"
    );
    daemon
}

/// K from 0 (plan journaled, nothing changed) to the undo's last change: each restart finishes
/// the undo exactly, a second crash changes nothing, and redo then returns to the turn's tree.
#[test]
fn a_crash_after_any_step_of_an_undo_is_finished_at_restart() {
    every_crash_point("undo", |k| {
        let ws = Workspace::new();
        prepare(&ws);
        let k_text = k.to_string();
        let daemon = Daemon::start_with_env(&ws, &[], &pause_env(&k_text));
        let boundary = snapshot(ws.root());
        daemon.turn_start("s1", "the turn");
        ws.sh(&format!("{TURN}\n{SWAP}"));
        daemon.turn_end("s1");
        let after_turn = snapshot(ws.root());
        let plan = expect(200, daemon.undo("s1", json!({"dry_run": true})));
        assert_eq!(plan["conflicts"], json!([]), "{plan:#}");
        let planned: Vec<String> = action_paths(&plan).into_iter().collect();
        assert!(planned.len() >= 15, "the plan is too small: {planned:?}");

        if let Err(answer) = park_and_kill(k, daemon, "/v1/sessions/s1/undo") {
            assert_tree_eq(&boundary, &snapshot(ws.root()), &format!("K={k}: after the undo"));
            return Point::Finished(actions(&answer).len());
        }
        let daemon = check_recovered(k, &ws, &boundary, &planned, "undo");
        let daemon = check_second_restart(k, &ws, daemon);

        // The recovered undo is part of the session's chain: redo returns to the turn's tree.
        // (force: a redo of SWAP is refused as `symlink_in_the_way` without any crash too, see
        // rollback.rs a_file_replaced_by_a_directory_is_undone_and_redone; the point here is
        // the chain and the exact tree.)
        let answer = expect(200, daemon.redo("s1", json!({"on_conflict": "force"})));
        assert_eq!(answer["applied"], true, "K={k}: {answer:#}");
        assert_tree_eq(
            &after_turn,
            &snapshot(ws.root()),
            &format!("K={k}: after the redo"),
        );
        Point::Crashed
    });
}

/// The same for a redo: a crash at any step is finished at restart, and the session's own
/// recovered redo never conflicts with its next undo.
#[test]
fn a_crash_after_any_step_of_a_redo_is_finished_at_restart() {
    every_crash_point("redo", |k| {
        let ws = Workspace::new();
        prepare(&ws);
        let boundary = snapshot(ws.root());
        // The hook is read by every rollback: the undo runs before it is set.
        let daemon = Daemon::start(&ws);
        daemon.turn_start("s1", "the turn");
        ws.sh(TURN);
        daemon.turn_end("s1");
        let after_turn = snapshot(ws.root());
        let undo = expect(200, daemon.undo("s1", json!({})));
        assert_eq!(undo["applied"], true, "{undo:#}");
        drop(daemon);

        let k_text = k.to_string();
        let daemon = Daemon::start_with_env(&ws, &[], &pause_env(&k_text));
        let plan = expect(200, daemon.redo("s1", json!({"dry_run": true})));
        assert_eq!(plan["conflicts"], json!([]), "{plan:#}");
        let planned: Vec<String> = action_paths(&plan).into_iter().collect();
        if let Err(answer) = park_and_kill(k, daemon, "/v1/sessions/s1/redo") {
            assert_tree_eq(
                &after_turn,
                &snapshot(ws.root()),
                &format!("K={k}: after the redo"),
            );
            return Point::Finished(actions(&answer).len());
        }
        let daemon = check_recovered(k, &ws, &after_turn, &planned, "redo");
        let daemon = check_second_restart(k, &ws, daemon);

        // The redo is done: undo walks back again, with no conflict from the session's own work.
        let answer = daemon.undo("s1", json!({}));
        let answer = expect(200, answer);
        assert_eq!(answer["conflicts"], json!([]), "K={k}: {answer:#}");
        assert_tree_eq(&boundary, &snapshot(ws.root()), &format!("K={k}: after the undo"));
        Point::Crashed
    });
}

/// A large undo (2,000 paths: 1,000 restored, 500 deleted, 500 recreated), crashed early, in
/// the middle and near the end of its changes: the restart finishes it exactly, and the
/// stored answer (a repeated `op_id` returns it) says every one of the 2,000 actions is done.
#[test]
fn a_crash_in_a_large_undo_is_finished_exactly_with_every_action_done() {
    const PATHS: usize = 2_000;
    for k in [1, PATHS / 2, PATHS - 1] {
        let ws = Workspace::new();
        for i in 0..1_500 {
            ws.write(format!("big/{}/{i}.txt", i % 40), format!("before {i}\n"));
        }
        let k_text = k.to_string();
        let daemon = Daemon::start_with_env(&ws, &[], &pause_env(&k_text));
        let boundary = snapshot(ws.root());
        daemon.turn_start("s1", "the large turn");
        ws.sh(
            "for i in $(seq 0 999); do echo after $i > big/$((i % 40))/$i.txt; done
             for i in $(seq 1000 1499); do rm big/$((i % 40))/$i.txt; done
             for i in $(seq 1500 1999); do echo new $i > big/$((i % 40))/$i.txt; done",
        );
        daemon.turn_end("s1");
        let body = json!({"op_id": "large-undo"});
        let parked = park_and_kill_with(k, daemon, "/v1/sessions/s1/undo", body.clone());
        assert!(parked.is_ok(), "K={k}: the undo finished without parking");
        let daemon = check_recovered(k, &ws, &boundary, &[], "undo");
        let stored = expect(200, daemon.undo("s1", body));
        let done = actions(&stored).iter().filter(|a| a["status"] == "done").count();
        assert_eq!(actions(&stored).len(), PATHS, "K={k}: {:#}", stored["counts"]);
        assert_eq!(done, PATHS, "K={k}: actions not done in the stored answer");
        assert_tree_eq(
            &boundary,
            &snapshot(ws.root()),
            &format!("K={k}: after the repeat"),
        );
    }
}

/// A session's undo whose target is a merge of lines (the person's later edit kept) writes
/// content no version holds: a crash after the plan is journaled and before the file is
/// changed (K=0), or after (K=1), is finished at the restart with exactly the merged content,
/// never a deletion (issue 48).
#[test]
fn a_crash_in_an_undo_that_merges_is_finished_with_the_merged_file() {
    const BEFORE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
    for k in 0..=1 {
        let ws = Workspace::new();
        ws.write("f.txt", BEFORE);
        let daemon = Daemon::start_with_env(&ws, &[], &pause_env(&k.to_string()));
        daemon.turn_start("s1", "agent");
        ws.write("f.txt", BEFORE.replace("two", "TWO by the agent"));
        daemon.turn_end("s1");
        ws.write(
            "f.txt",
            BEFORE
                .replace("two", "TWO by the agent")
                .replace("six", "six, the person's"),
        );
        let merged = BEFORE.replace("six", "six, the person's");
        let mut target = snapshot(ws.root());
        ws.write("f.txt", &merged);
        target.insert("f.txt".into(), snapshot(ws.root())["f.txt"].clone());
        ws.write(
            "f.txt",
            BEFORE
                .replace("two", "TWO by the agent")
                .replace("six", "six, the person's"),
        );
        assert!(
            park_and_kill(k, daemon, "/v1/sessions/s1/undo").is_ok(),
            "K={k} did not park"
        );
        let daemon = check_recovered(k, &ws, &target, &["f.txt".to_string()], "undo");
        assert_eq!(String::from_utf8_lossy(&ws.read("f.txt")), merged, "K={k}");
        drop(daemon);
    }
}
