//! A kernel queue overflow triggers a rescan, counted in status, and loses nothing.
//!
//! This is the only test in its binary: it lowers `fs.inotify.max_queued_events` while the
//! daemon creates its inotify instance (the limit is taken at creation), and restores it at
//! once, so other tests' daemons are not affected.

mod common;

use common::*;

const QUEUE_LIMIT: &str = "/proc/sys/fs/inotify/max_queued_events";

/// Restores the sysctl even when the test fails.
struct Restore(String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(QUEUE_LIMIT, &self.0);
    }
}

#[test]
fn queue_overflow_is_caught_by_a_rescan() {
    let Ok(original) = std::fs::read_to_string(QUEUE_LIMIT) else {
        panic!("{QUEUE_LIMIT} is not readable: inotify is required");
    };
    let ws = Workspace::new();
    ws.write("seed.txt", "x");
    // An existing (so watched) directory: events for its files are queued, not caught later by
    // the scan of a new directory.
    ws.write("burst/.keep", "");
    let daemon = {
        let _restore = Restore(original.clone());
        std::fs::write(QUEUE_LIMIT, "16").expect("root is needed to lower max_queued_events");
        Daemon::start(&ws)
    };
    assert_eq!(
        std::fs::read_to_string(QUEUE_LIMIT).expect("read").trim(),
        original.trim()
    );

    daemon.turn_start("s", "burst");
    // Stopped, the daemon cannot drain its 16-event queue: the burst overflows it for sure
    // (a running daemon may keep up, and then nothing is lost to begin with).
    let pid = daemon.pid.to_string();
    ws.sh(&format!(
        "kill -STOP {pid} && for i in $(seq 1 3000); do echo $i > burst/f$i.txt; done; kill -CONT {pid}"
    ));
    let turn = daemon.turn_end("s");

    let files = changed_files(&turn);
    assert_eq!(files.len(), 3000, "every file of the burst is in the turn");
    assert!(files.contains("burst/f1.txt") && files.contains("burst/f3000.txt"));
    let watcher = &daemon.status()["watcher"];
    assert!(watcher["overflows"].as_u64() >= Some(1), "{watcher}");
    assert!(watcher["rescans"].as_u64() >= Some(1), "{watcher}");
}
