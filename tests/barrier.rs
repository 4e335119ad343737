//! G1: a write that completed before a marker is attributed by its position.

mod common;

use common::*;

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
