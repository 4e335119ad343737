//! Files that vanish, cannot be read, or are not files at all do not stop capture.

use crate::common::*;

#[test]
fn files_deleted_right_after_writing_do_not_stop_capture() {
    let ws = Workspace::new();
    let mut daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "churn");
    ws.sh("mkdir churn && for i in $(seq 1 500); do echo $i > churn/f$i; done && rm -rf churn");
    ws.sh("for i in $(seq 1 200); do echo $i > flicker; rm flicker; done");
    let churn = daemon.turn_end("s1");
    for c in changes(&churn) {
        let p = c["path"].as_str().unwrap();
        assert!(
            !(p.starts_with("churn/") && c["change"] == "added"),
            "vanished file recorded as present: {c}"
        );
    }

    assert_still_captures(&mut daemon, &ws);
}

#[test]
fn fifo_and_unreadable_file_do_not_stop_capture() {
    let ws = Workspace::new();
    ws.write("locked.txt", "secret\n");
    let mut daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "odd files");
    ws.sh("mkfifo pipe && chmod 000 locked.txt && echo changed >> locked.txt");
    let odd = daemon.turn_end("s1");
    // The FIFO is not a file: never opened (that would block), never recorded. The file its
    // owner cannot read is recorded with its new bits: by content where it can still be read
    // (root), else by what can be known of it.
    assert_eq!(changed_paths(&odd), set(["locked.txt"]), "{odd:#}");
    let locked = change(&odd, "locked.txt");
    assert_eq!(locked["change"], "modified", "{odd:#}");
    assert_eq!(locked["mode"], "0000", "{odd:#}");
    assert_eq!(locked["mode_changed"], true, "{odd:#}");

    assert_still_captures(&mut daemon, &ws);
}

/// The daemon is alive, answers, and records a write in a following turn.
fn assert_still_captures(daemon: &mut Daemon, ws: &Workspace) {
    daemon.assert_alive();
    let status = daemon.status();
    assert!(status["watcher"].is_object(), "{status:#}");
    daemon.turn_start("s1", "later");
    ws.write("later.txt", "still recorded\n");
    let turn = daemon.turn_end("s1");
    assert_eq!(change(&turn, "later.txt")["change"], "added");
}
