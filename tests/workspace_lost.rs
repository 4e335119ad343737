//! The workspace root replaced or removed while the daemon runs (docs/guarantees.md G7, G12): the
//! daemon enters `workspace_lost`, refuses every marker and rollback with 503,
//! writes nothing anywhere (above all not in the moved directory, outside the root), says so
//! in `status`, keeps serving its history, and stops cleanly. A subdirectory moved out of the
//! root stays an ordinary deletion.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};

/// A directory outside the workspace's temp dir, removed when the test ends.
struct Moved(PathBuf);

impl Drop for Moved {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `script` with the root's parent as its directory (the root itself is moved away).
fn sh_beside(root: &Path, script: &str) {
    let parent = root.parent().expect("the root has a parent");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .current_dir(parent)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Polls `status` until it reports the workspace lost (the watcher's event for the root
/// itself is enough, no marker needed).
fn wait_until_lost(daemon: &Daemon) -> Value {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let status = daemon.status();
        if status["workspace_lost"].is_object() || Instant::now() > until {
            return status;
        }
        std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
    }
}

#[track_caller]
fn assert_lost(root: &Path, (status, body): (u16, Value)) {
    assert_eq!(status, 503, "{body:#}");
    assert_eq!(body["error"]["code"], "workspace_lost", "{body:#}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&root.display().to_string()),
        "names the root: {message}"
    );
}

/// Every command that would record or write is refused.
fn assert_everything_refused(daemon: &Daemon, root: &Path) {
    assert_lost(root, daemon.post("/v1/sessions/s/turns", json!({})));
    assert_lost(root, daemon.post("/v1/sessions/s/turns/current/end", json!({})));
    assert_lost(root, daemon.fork("s", "t", json!(1)));
    assert_lost(root, daemon.undo("s", json!({"on_conflict": "force"})));
    assert_lost(root, daemon.redo("s", json!({"on_conflict": "force"})));
    assert_lost(
        root,
        daemon.rollback("s", json!({"to": "before", "turn": 1, "on_conflict": "force"})),
    );
    assert_lost(
        root,
        daemon.rollback_in_time(json!({"at": "2000-01-01T00:00:00Z"})),
    );
    assert_lost(root, daemon.post("/v1/gc", json!({})));
}

/// One ended turn that changed `a.txt`, so an undo would have something to rewrite.
fn one_turn(ws: &Workspace, daemon: &Daemon) {
    ws.write("a.txt", "before the turn");
    ws.write("src/b.txt", "untouched");
    daemon.turn_start("s", "edit a");
    ws.write("a.txt", "written by the turn");
    daemon.turn_end("s");
}

#[test]
fn a_root_moved_away_and_replaced_is_lost_and_nothing_is_written_anywhere() {
    let ws = Workspace::new();
    let root = ws.root().to_path_buf();
    let moved = Moved(root.with_extension("moved"));
    let mut daemon = Daemon::start(&ws);
    one_turn(&ws, &daemon);

    sh_beside(&root, &format!("mv {0:?} {1:?} && mkdir {0:?}", root, moved.0));
    ws.write("new.txt", "made in the new directory");
    let moved_tree = snapshot(&moved.0);
    let new_tree = snapshot(&root);

    // Noticed from the watcher's event for the root itself, before any marker asks.
    let status = wait_until_lost(&daemon);
    assert_everything_refused(&daemon, &root);
    let lost = &status["workspace_lost"];
    assert_eq!(lost["root"], root.display().to_string(), "{status:#}");
    let what = lost["what"].as_str().unwrap_or_default();
    assert!(
        what.contains(&moved.0.display().to_string()),
        "says where it went: {status:#}"
    );
    assert!(
        lost["remedy"].as_str().is_some_and(|r| !r.is_empty()),
        "{status:#}"
    );

    // The history is still there to recover by hand.
    let history = daemon.history("a.txt");
    assert_eq!(versions(&history).len(), 2, "{history:#}");
    assert_eq!(daemon.turn("s", 1, false)["turn"], 1);
    let text = cli_state_text(&ws, &["status"]);
    assert!(
        text.contains("WORKSPACE LOST") && text.contains("what to do"),
        "status text:\n{text}"
    );

    daemon.assert_alive();
    daemon.stop();
    assert_tree_eq(&moved_tree, &snapshot(&moved.0), "the moved directory");
    assert_tree_eq(
        &new_tree,
        &snapshot(&root),
        "the new directory at the root's path",
    );
}

#[test]
fn a_root_removed_and_made_again_is_lost() {
    let ws = Workspace::new();
    let root = ws.root().to_path_buf();
    let daemon = Daemon::start(&ws);
    one_turn(&ws, &daemon);

    sh_beside(&root, &format!("rm -rf {0:?} && mkdir {0:?}", root));
    let status = wait_until_lost(&daemon);
    assert_everything_refused(&daemon, &root);
    let what = status["workspace_lost"]["what"].as_str().unwrap_or_default();
    assert!(what.contains("removed"), "{status:#}");
    assert_eq!(versions(&daemon.history("a.txt")).len(), 2);
    daemon.stop();
    assert!(
        snapshot(&root).is_empty(),
        "nothing written into the new directory"
    );
}

#[test]
fn a_subdirectory_moved_out_of_the_root_is_an_ordinary_deletion() {
    let ws = Workspace::new();
    ws.write("sub/x.txt", "x");
    let outside = Moved(ws.root().with_extension("sub-moved"));
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", "move sub out");
    std::fs::rename(ws.path("sub"), &outside.0).expect("rename");
    let turn = daemon.turn_end("s");
    assert_eq!(change(&turn, "sub/x.txt")["change"], "deleted", "{turn:#}");
    assert!(daemon.status()["workspace_lost"].is_null());
    daemon.stop();
}
