//! What the watcher registers: no access events, no watches in ignored directories.

use crate::common::*;

fn hints(daemon: &Daemon) -> u64 {
    daemon.status()["watcher"]["hints"]
        .as_u64()
        .expect("hints counter")
}

fn watched_dirs(daemon: &Daemon) -> u64 {
    daemon.status()["watcher"]["watched_dirs"]
        .as_u64()
        .expect("watched_dirs")
}

/// A barrier: once the end marker returns, every event before it has been received.
fn settle(daemon: &Daemon) {
    daemon.turn_start("s", "settle");
    daemon.turn_end("s");
}

#[test]
fn a_read_storm_registers_no_events() {
    let ws = Workspace::new();
    ws.sh("mkdir -p src && for i in $(seq 1 500); do echo \"fn f$i() {}\" > src/f$i.rs; done");
    let daemon = Daemon::start(&ws);
    settle(&daemon);
    let before = hints(&daemon);
    settle(&daemon);
    let marker_cost = hints(&daemon) - before;

    let before = hints(&daemon);
    ws.sh("cat src/*.rs > /dev/null; grep -r fn src > /dev/null; tar -cf /dev/null src");
    settle(&daemon);
    let storm_cost = hints(&daemon) - before;

    // 1,500 opens and closes of files: none may reach the daemon, only the marker's own cookie.
    assert!(
        storm_cost <= marker_cost + 3,
        "reading 500 files three times produced {storm_cost} hints (a marker alone: {marker_cost})"
    );
    assert_eq!(daemon.status()["watcher"]["rescans"], 0);
}

/// A workspace without a subdirectory has one watch, its root's: `status` says 1, not 0.
#[test]
fn the_root_watch_is_counted_without_any_subdirectory() {
    let ws = Workspace::new();
    ws.write("only.txt", "one file\n");
    let daemon = Daemon::start(&ws);
    assert_eq!(watched_dirs(&daemon), 1);
}

#[test]
fn ignored_directories_get_no_watch() {
    let ws = Workspace::new();
    ws.write(".gitignore", "node_modules/\ntarget/\n");
    ws.sh("mkdir -p src/a src/b && for i in $(seq 1 100); do mkdir -p node_modules/p$i/lib; done && mkdir -p target/debug");
    let daemon = Daemon::start(&ws);
    // The root, src, src/a, src/b.
    assert_eq!(watched_dirs(&daemon), 4);

    daemon.turn_start("s", "npm install");
    ws.sh("for i in $(seq 1 200); do mkdir -p node_modules/q$i && echo x > node_modules/q$i/index.js; done; mkdir src/c");
    let turn = daemon.turn_end("s");
    assert_eq!(changed_paths(&turn), set(["src/c"]));
    assert_eq!(watched_dirs(&daemon), 5);
}
