//! G1: a write that completed before a marker is attributed by its position.

use crate::common::*;

#[test]
fn write_before_end_is_in_the_turn_and_never_in_the_next() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    for i in 0..200 {
        daemon.turn_start("s1", &format!("round {i}"));
        ws.write(format!("f{i}.txt"), format!("round {i}\n"));
        let turn = daemon.turn_end("s1");
        assert_eq!(changed_paths(&turn), set([format!("f{i}.txt")]), "round {i}");
    }
}

#[test]
fn write_before_start_is_outside_the_turn() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    for i in 0..50 {
        ws.write(format!("before{i}.txt"), "no turn open\n");
        daemon.turn_start("s1", &format!("round {i}"));
        ws.write(format!("during{i}.txt"), "turn open\n");
        let turn = daemon.turn_end("s1");
        assert_eq!(changed_paths(&turn), set([format!("during{i}.txt")]), "round {i}");

        let before = daemon.history(&format!("before{i}.txt"));
        assert_eq!(latest(&before)["origin"], "outside", "round {i}: {before:#}");
    }
}

/// The daemon deletes no file it did not make: a name that starts like a cookie does not make
/// a cookie. The user's files named so are kept at start-up and recorded like any other; only
/// this daemon's own cookies (their names carry its instance id) are left out.
#[test]
fn a_user_file_named_like_a_cookie_is_kept_and_recorded() {
    let ws = Workspace::new();
    ws.write(".filewatchd-cookie-mine", "the user's notes\n");
    ws.write(".filewatchd-cookie-4242-1", ""); // the shape cookies had before instance ids
    let daemon = Daemon::start(&ws);

    assert_eq!(ws.read(".filewatchd-cookie-mine"), b"the user's notes\n");
    assert!(
        ws.path(".filewatchd-cookie-4242-1").is_file(),
        "an empty user file was removed"
    );
    for path in [".filewatchd-cookie-mine", ".filewatchd-cookie-4242-1"] {
        let history = daemon.history(path);
        assert_eq!(
            latest(&history)["origin"],
            "offline",
            "{path} not recorded: {history:#}"
        );
    }
    daemon.turn_start("s1", "writes one more");
    ws.write(".filewatchd-cookie-later", "written in a turn\n");
    let turn = daemon.turn_end("s1");
    assert_eq!(changed_paths(&turn), set([".filewatchd-cookie-later"]));
}

/// A cookie a killed daemon left is its own, not the user's: it is recognised by the instance
/// id its state directory recorded, removed at the next start and never recorded.
#[test]
fn a_cookie_a_killed_daemon_left_is_removed_at_the_next_start() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let instances = std::fs::read_to_string(ws.state_dir().join("cookies")).expect("cookie instances");
    let instance = instances.lines().last().expect("an instance").to_string();
    daemon.kill9();
    let left = format!(".filewatchd-cookie-{instance}-7");
    ws.write(&left, ""); // as a kill -9 between planting and removing leaves it

    let daemon = Daemon::start(&ws);
    assert!(!ws.path(&left).exists(), "the stale cookie is still there");
    let (_, history) = daemon.history_reply(&left);
    assert!(
        history["versions"].as_array().is_none_or(Vec::is_empty),
        "a cookie was recorded: {history:#}"
    );
}
