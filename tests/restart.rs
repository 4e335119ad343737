//! Start-up after a crash: offline changes are reconciled, one daemon per workspace.

mod common;

use common::*;

#[test]
fn changes_while_down_are_recorded_as_offline() {
    let ws = Workspace::new();
    ws.write("edited.txt", "before the crash\n");
    ws.write("deleted.txt", "doomed\n");
    Daemon::start(&ws).kill9();

    ws.write("edited.txt", "edited while the daemon was down\n");
    ws.remove("deleted.txt");
    ws.write("created.txt", "new while down\n");
    let daemon = Daemon::start(&ws);

    let edited = daemon.history("edited.txt");
    assert!(
        versions(&edited).len() >= 2,
        "the version before the crash is lost: {edited:#}"
    );
    assert_eq!(latest(&edited)["origin"], "offline", "{edited:#}");
    let deleted = daemon.history("deleted.txt");
    assert_eq!(latest(&deleted)["origin"], "offline", "{deleted:#}");
    assert_eq!(latest(&deleted)["kind"], "absent", "{deleted:#}");
    let created = daemon.history("created.txt");
    assert_eq!(latest(&created)["origin"], "offline", "{created:#}");

    daemon.turn_start("s1", "after restart");
    ws.write("turn.txt", "in the turn\n");
    let turn = daemon.turn_end("s1");
    assert_eq!(changed_paths(&turn), set(["turn.txt"]));
}

#[test]
fn second_daemon_on_the_same_root_refuses_and_names_the_first() {
    let ws = Workspace::new();
    let first = Daemon::start(&ws);

    let (status, stderr) = ws.serve_expecting_exit(&[]);
    assert!(!status.success(), "second daemon started; stderr:\n{stderr}");
    assert!(
        stderr.contains(&first.pid.to_string()),
        "pid {} not named:\n{stderr}",
        first.pid
    );
    assert!(
        stderr.contains(&first.url),
        "url {} not named:\n{stderr}",
        first.url
    );
    first.status(); // still serving
}

#[test]
fn stale_lock_of_a_killed_daemon_does_not_block_a_restart() {
    let ws = Workspace::new();
    Daemon::start(&ws).kill9();

    let daemon = Daemon::start(&ws);
    assert_eq!(daemon.status()["pid"], daemon.pid);
}
