//! At the inotify watch limit (docs/guarantees.md G2, G12): the directories that
//! could not be watched are verified by a stat walk at every turn marker and rollback, so a
//! turn holds every edit and an undo puts every file back. The limit is set low in a user
//! namespace of the daemon's own (`user.max_inotify_watches` counts per namespace), so the rest
//! of the machine keeps its limit; the test skips where that cannot be done.

use crate::common::*;
use serde_json::json;

const DIRS: usize = 500;
const LIMIT: usize = 50;

fn original(i: usize) -> String {
    format!("original content of file {i}\n")
}

fn edited(i: usize) -> String {
    format!("edited in the turn: {i}\n")
}

/// The daemon in a user namespace whose inotify watch limit is `LIMIT`.
fn start_at_the_limit(ws: &Workspace) -> Daemon {
    let set_limit = format!("echo {LIMIT} > /proc/sys/user/max_inotify_watches && exec \"$@\"");
    let cmd = ws.wrapped_serve("unshare", &["-Ur", "sh", "-c", &set_limit, "sh"]);
    Daemon::start_command(ws, cmd)
}

#[test]
fn at_the_watch_limit_a_turn_records_every_edit_and_undo_puts_every_file_back() {
    if !user_namespace_watch_limit_works() {
        return;
    }
    let ws = Workspace::new();
    for i in 0..DIRS {
        ws.write(format!("d{i:03}/f.txt"), original(i));
    }
    let before = snapshot(ws.root());
    let daemon = start_at_the_limit(&ws);

    let status = daemon.status();
    let unwatched = status["watcher"]["unwatched_dirs"].as_u64().unwrap_or(0) as usize;
    assert!(
        unwatched >= DIRS - LIMIT,
        "at most {LIMIT} watches for {DIRS} dirs, yet {unwatched} unwatched: {status:#}"
    );
    let degraded = status["watcher"]["degraded"].as_str().unwrap_or_default();
    assert!(degraded.contains("fs.inotify.max_user_watches"), "{status:#}");

    daemon.turn_start("s", "edit every file");
    for i in 0..DIRS {
        ws.write(format!("d{i:03}/f.txt"), edited(i));
    }
    ws.write("d499/new/inner.txt", "made in an unwatched directory");
    let turn = daemon.turn_end("s");
    let mut expected: std::collections::BTreeSet<String> =
        (0..DIRS).map(|i| format!("d{i:03}/f.txt")).collect();
    expected.insert("d499/new/inner.txt".to_string());
    let recorded = changed_files(&turn);
    let missed: Vec<&String> = expected.difference(&recorded).collect();
    assert!(
        missed.is_empty() && recorded.len() == expected.len(),
        "the turn recorded {} of {} edits; missed e.g. {:?}",
        recorded.len(),
        expected.len(),
        &missed[..missed.len().min(5)]
    );

    let status = daemon.status();
    let verify = &status["watcher"]["last_unwatched_verify"];
    assert!(
        verify["ms"].is_u64() && verify["dirs"].as_u64() > Some(0),
        "{status:#}"
    );
    let text = cli_state_text(&ws, &["status"]);
    assert!(
        text.contains("unwatched:") && text.contains("fs.inotify.max_user_watches"),
        "status text:\n{text}"
    );

    rollback_applied(daemon.undo("s", json!({})));
    assert_tree_eq(&before, &snapshot(ws.root()), "after the undo");
    for i in [0, 137, DIRS - 1] {
        assert_eq!(ws.read(format!("d{i:03}/f.txt")), original(i).as_bytes());
    }
    daemon.stop();
}
