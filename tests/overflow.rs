//! A kernel queue overflow triggers a rescan, counted in status, and loses nothing.
//!
//! A rollback's own writes do not overflow it: the rollback lets the watcher catch up.
//!
//! These tests lower `fs.inotify.max_queued_events` while the daemon creates its inotify
//! instance (the limit is taken at creation), with the machine to themselves
//! (`machine::exclusive()`: no other test runs meanwhile, docs/testing.md), and restore it at
//! once, so no other test's daemon or `doctor` sees the lowered limit.

use crate::common::*;

const QUEUE_LIMIT: &str = "/proc/sys/fs/inotify/max_queued_events";

/// Restores the sysctl even when the test fails.
struct Restore(String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(QUEUE_LIMIT, &self.0);
    }
}

/// The daemon started with its kernel queue limited to `limit` events.
fn start_with_queue(ws: &Workspace, limit: &str) -> Daemon {
    // Before the limit changes, until it is back (`_restore` drops first).
    let _alone = machine::exclusive();
    let Ok(original) = std::fs::read_to_string(QUEUE_LIMIT) else {
        panic!("{QUEUE_LIMIT} is not readable: inotify is required");
    };
    let daemon = {
        let _restore = Restore(original.clone());
        std::fs::write(QUEUE_LIMIT, limit).expect("root is needed to lower max_queued_events");
        Daemon::start(ws)
    };
    assert_eq!(
        std::fs::read_to_string(QUEUE_LIMIT).expect("read").trim(),
        original.trim()
    );
    daemon
}

#[test]
fn queue_overflow_is_caught_by_a_rescan() {
    let ws = Workspace::new();
    ws.write("seed.txt", "x");
    // An existing (so watched) directory: events for its files are queued, not caught later by
    // the scan of a new directory.
    ws.write("burst/.keep", "");
    let daemon = start_with_queue(&ws, "4096");

    daemon.turn_start("s", "burst");
    // Stopped, the daemon cannot drain its 4,096-event queue: the burst (16,000 events)
    // overflows it for sure (a running daemon may keep up, and then nothing is lost). After
    // the stop, some 2,000 files' hints stream in ahead of the overflow.
    // The end marker is sent while the daemon is still stopped, so that its cookie comes back
    // right behind the overflow: the rescan must run before the marker answers.
    let pid = daemon.pid.to_string();
    ws.sh(&format!(
        "kill -STOP {pid} && for i in $(seq 1 8000); do echo $i > burst/f$i.txt; done"
    ));
    let turn = std::thread::scope(|scope| {
        let ending = scope.spawn(|| daemon.turn_end("s"));
        // The request waits in the stopped daemon's socket; no answer can come before CONT.
        wait_for_connection_to(daemon.pid, daemon.port);
        ws.sh(&format!("kill -CONT {pid}"));
        ending.join().expect("the end marker's thread")
    });

    let files = changed_files(&turn);
    assert_eq!(files.len(), 8000, "every file of the burst is in the turn");
    assert!(files.contains("burst/f1.txt") && files.contains("burst/f8000.txt"));
    let watcher = &daemon.status()["watcher"];
    assert!(watcher["overflows"].as_u64() >= Some(1), "{watcher}");
    assert!(watcher["rescans"].as_u64() >= Some(1), "{watcher}");
    // The rescan's own account: the whole workspace, every file of the burst walked.
    let rescan = &watcher["last_rescan"];
    assert!(rescan["dir"].is_null(), "{watcher}");
    assert!(rescan["walked"].as_u64() > Some(8000), "{watcher}");
    assert!(
        rescan["total_ms"].as_u64() >= rescan["survey_ms"].as_u64(),
        "{watcher}"
    );
}

#[test]
fn a_rollback_lets_the_watcher_catch_up_and_loses_no_event() {
    let ws = Workspace::new();
    for i in 0..1500 {
        ws.write(format!("d{}/f{i}.txt", i % 6), format!("v1 {i}\n"));
    }
    // 512 events: a pass of 32 files of the rollback fills half of it at most.
    let daemon = start_with_queue(&ws, "512");
    daemon.turn_start("s", "edit all");
    for i in 0..1500 {
        ws.write(format!("d{}/f{i}.txt", i % 6), format!("v2 {i}\n"));
    }
    assert_eq!(changed_files(&daemon.turn_end("s")).len(), 1500);
    let before = daemon.status()["watcher"].clone();

    let (code, undo) = daemon.undo("s", serde_json::json!({}));
    assert_eq!(code, 200, "{undo}");
    // The marker's cookie comes back after every event of the rollback.
    daemon.turn_start("s", "after");
    daemon.turn_end("s");

    for i in (0..1500).step_by(97) {
        assert_eq!(
            ws.read(format!("d{}/f{i}.txt", i % 6)),
            format!("v1 {i}\n").into_bytes()
        );
    }
    let after = &daemon.status()["watcher"];
    // Some 13,000 events of its own in a queue of 512: without catching up, it overflows.
    assert_eq!(after["overflows"], before["overflows"], "{after}");
    assert_eq!(after["rescans"], before["rescans"], "{after}");
    assert!(
        after["hints"].as_u64() > before["hints"].as_u64().map(|h| h + 4 * 1500),
        "{after}"
    );
}

/// Polls, with a deadline, until the stopped daemon's port has something waiting for it: a
/// connection in the listener's accept queue, or request bytes on an open connection (`ss`
/// shows Recv-Q > 0 on either).
fn wait_for_connection_to(pid: u32, port: u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = std::process::Command::new("ss")
            .args(["-Htan", &format!("sport = :{port}")])
            .output()
            .expect("ss (iproute2) is needed");
        let text = String::from_utf8_lossy(&out.stdout);
        let waiting = text.lines().any(|line| {
            line.split_whitespace()
                .nth(1)
                .and_then(|q| q.parse::<u64>().ok())
                .is_some_and(|q| q > 0)
        });
        if waiting {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no connection reached daemon {pid} on port {port}: {text}"
        );
        std::thread::yield_now();
    }
}
