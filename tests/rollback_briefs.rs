//! The turns listing and the timeline summarise each of the session's rollbacks from a brief
//! SQLite keeps beside its stored answer (so a long history's listing never reads the large
//! answers): the summary must say what the rollback's own answer said (its target, the paths it
//! added, modified, deleted, skipped and kept), and stay the same after a redo, after retention
//! and after a restart that finds an index from before briefs were kept.

use crate::common::*;
use serde_json::{Value, json};

/// What the listing must say of a rollback, from the answer the request got.
fn summary_of(answer: &Value) -> Value {
    let done = answer["actions"].as_array().map_or(0, |actions| {
        actions.iter().filter(|a| a["status"] == "done").count()
    });
    json!({
        "rollback_id": answer["rollback_id"],
        "operation": answer["operation"],
        "target": answer["target"],
        "paths_done": done,
        "skipped": answer["skipped"].as_array().map_or(0, Vec::len),
    })
}

/// The listing's rollbacks, and each checked against the summary of its answer.
fn listed(daemon: &Daemon, answers: &[Value]) -> Vec<Value> {
    let listing = expect(200, daemon.get("/v1/sessions/s1/turns"));
    let rollbacks = listing["rollbacks"].as_array().expect("rollbacks").clone();
    assert_eq!(rollbacks.len(), answers.len(), "{listing:#}");
    for (listed, answer) in rollbacks.iter().zip(answers) {
        let want = summary_of(answer);
        for (field, value) in want.as_object().expect("summary") {
            assert_eq!(&listed[field], value, "{field} of {listed:#} against {answer:#}");
        }
        assert_eq!(listed["status"], "committed", "{listed:#}");
    }
    rollbacks
}

/// What the timeline must count of a rollback, from the answer the request got.
fn counts_of(answer: &Value) -> Value {
    let done = |actions: &[&str]| {
        answer["actions"].as_array().map_or(0, |all| {
            let of = |a: &&Value| a["status"] == "done" && actions.iter().any(|name| a["action"] == *name);
            all.iter().filter(of).count()
        })
    };
    json!({
        "added": done(&["create"]),
        "modified": done(&["restore", "set_mode", "relink"]),
        "deleted": done(&["delete", "remove_dir"]),
        "skipped": answer["skipped"].as_array().map_or(0, Vec::len),
        "kept": answer["kept"].as_array().map_or(0, Vec::len),
    })
}

/// The timeline's rollback entries, oldest first, each checked against its answer: its target
/// and counts, with and without paths.
fn timelined(daemon: &Daemon, answers: &[Value]) -> Vec<Value> {
    let mut entries = Vec::new();
    for paths in ["false", "true"] {
        let page = expect(200, daemon.get(&format!("/v1/timeline?session=s1&paths={paths}")));
        let mut rollbacks: Vec<Value> = page["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter(|e| !e["rollback_id"].is_null())
            .cloned()
            .collect();
        rollbacks.reverse();
        assert_eq!(rollbacks.len(), answers.len(), "{page:#}");
        for (entry, answer) in rollbacks.iter().zip(answers) {
            assert_eq!(entry["rollback_id"], answer["rollback_id"], "{entry:#}");
            assert_eq!(entry["target"], answer["target"], "{entry:#} against {answer:#}");
            assert_eq!(entry["counts"], counts_of(answer), "{entry:#} against {answer:#}");
        }
        entries.extend(rollbacks);
    }
    entries
}

/// Makes the index one of an older release: no briefs, no permission bits, no owners, no
/// journaled step targets: schema version 13.
fn forget_briefs(ws: &Workspace) {
    let conn = rusqlite::Connection::open(ws.state_dir().join("index.sqlite")).expect("open");
    conn.execute_batch(
        "DROP TRIGGER rollbacks_brief;
         ALTER TABLE rollbacks DROP COLUMN brief_target;
         ALTER TABLE rollbacks DROP COLUMN brief_added;
         ALTER TABLE rollbacks DROP COLUMN brief_modified;
         ALTER TABLE rollbacks DROP COLUMN brief_deleted;
         ALTER TABLE rollbacks DROP COLUMN brief_skipped;
         ALTER TABLE rollbacks DROP COLUMN brief_kept;
         ALTER TABLE rollbacks DROP COLUMN brief_recovery;
         ALTER TABLE rollbacks DROP COLUMN brief_actor;
         ALTER TABLE versions DROP COLUMN mode;
         ALTER TABLE versions DROP COLUMN decided;
         ALTER TABLE turns DROP COLUMN windowed;
         ALTER TABLE rollback_steps DROP COLUMN target_hash;
         ALTER TABLE rollback_steps DROP COLUMN target_size;
         ALTER TABLE rollback_steps DROP COLUMN target_executable;
         ALTER TABLE rollback_steps DROP COLUMN target_mode;
         ALTER TABLE rollbacks DROP COLUMN git_moves;
         DROP TABLE git_states;
         PRAGMA user_version = 13;",
    )
    .expect("an index without briefs");
}

#[test]
fn the_listing_summarises_each_rollback_as_its_answer_did_after_a_redo_gc_and_restart() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "keep_days = 0\nkeep_turns = 0\n");
    for name in ["a.txt", "b.txt", "c.txt"] {
        ws.write(name, noise(name.len() as u64, 300));
    }
    let daemon = Daemon::start(&ws);
    for (i, files) in [&["a.txt"][..], &["b.txt", "n2.txt"], &["c.txt", "a.txt"]]
        .iter()
        .enumerate()
    {
        daemon.turn_start("s1", &format!("turn {}", i + 1));
        for (j, file) in files.iter().enumerate() {
            ws.write(file, noise(100 + 10 * i as u64 + j as u64, 300));
        }
        daemon.turn_end("s1");
    }
    // Written outside any turn: a conflict for every rollback of turn 3, skipped.
    ws.write("c.txt", "the user's\n");
    let skip = json!({"on_conflict": "skip"});
    let mut answers = vec![expect(200, daemon.undo("s1", skip.clone()))];
    answers.push(rollback_applied(daemon.redo("s1", json!({}))));
    let to_before_2 = json!({"to": "before", "turn": 2, "on_conflict": "skip"});
    answers.push(expect(200, daemon.rollback("s1", to_before_2)));
    assert_eq!(summary_of(&answers[0])["skipped"], 1, "{:#}", answers[0]);
    assert_eq!(summary_of(&answers[2])["paths_done"], 3, "{:#}", answers[2]);
    let before = listed(&daemon, &answers);

    answers.push(expect(200, daemon.redo("s1", skip)));
    let after_redo = listed(&daemon, &answers);
    let timeline = timelined(&daemon, &answers);
    assert_eq!(
        after_redo[..before.len()],
        before[..],
        "the earlier rollbacks after a redo"
    );

    let report = daemon.gc(false);
    assert!(report["versions_removed"].as_i64().unwrap_or(0) > 0, "{report:#}");
    assert_eq!(listed(&daemon, &answers), after_redo, "after gc");

    daemon.stop();
    forget_briefs(&ws);
    let daemon = Daemon::start(&ws);
    assert_eq!(
        listed(&daemon, &answers),
        after_redo,
        "after a restart on an older index"
    );
    assert_eq!(
        timelined(&daemon, &answers),
        timeline,
        "the timeline after a restart on an older index"
    );
}
