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
        std::fs::write(QUEUE_LIMIT, "4096").expect("root is needed to lower max_queued_events");
        Daemon::start(&ws)
    };
    assert_eq!(
        std::fs::read_to_string(QUEUE_LIMIT).expect("read").trim(),
        original.trim()
    );

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
