//! Start-up after a crash: offline changes are reconciled, one daemon per workspace.

use crate::common::*;
use std::os::fd::AsRawFd;

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
fn a_first_start_says_it_indexes_and_a_restart_that_it_looks_for_changes() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    let first = Daemon::start(&ws);
    let said = first.stderr();
    assert!(said.contains("filewatchd: indexing "), "first start:\n{said}");
    first.stop();

    let again = Daemon::start(&ws);
    let said = again.stderr();
    assert!(
        said.contains("filewatchd: looking for what changed in ") && said.contains(" while stopped"),
        "restart:\n{said}"
    );
    assert!(
        !said.contains("filewatchd: indexing "),
        "a restart is not a first index:\n{said}"
    );
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
fn a_daemon_inside_or_around_a_watched_workspace_refuses_and_names_the_other() {
    let ws = Workspace::new();
    ws.write("sub/a.txt", "a\n");
    let sub = ws.path("sub");
    let outer = Daemon::start_in_home(&ws);
    let (status, stderr) = ws.serve_in_home_expecting_exit(&sub);
    assert!(!status.success(), "a daemon started inside a watched workspace");
    assert!(
        stderr.contains(&format!("(pid {}, {}) already watches", outer.pid, outer.url))
            && stderr.contains("which holds"),
        "{stderr}"
    );
    outer.status(); // still serving

    // A killed daemon's leftover daemon.json does not count; then the other way round.
    drop(outer);
    let inner = Daemon::start_in_home_at(&ws, &sub);
    let (status, stderr) = ws.serve_in_home_expecting_exit(ws.root());
    assert!(!status.success(), "a daemon started around a watched directory");
    assert!(
        stderr.contains(&format!("(pid {}, {}) already watches", inner.pid, inner.url))
            && stderr.contains("inside"),
        "{stderr}"
    );
    inner.status();
}

/// Two daemons on one tree would record each other's writes as `outside`, so the check is
/// machine-wide per tree. A daemon keeping its state elsewhere (`--state-dir`) and one under
/// another state home both see it; `kill -9` releases it.
#[test]
fn one_daemon_per_tree_whatever_the_state_directory() {
    let ws = Workspace::new();
    ws.write("sub/a.txt", "a\n");
    let first = Daemon::start(&ws); // --state-dir outside the home
    let state = first.state_dir.display().to_string();
    let named = |stderr: &str| {
        stderr.contains(&format!("(pid {}, {}) already watches", first.pid, first.url))
            && stderr.contains(&state)
    };
    let (status, stderr) = ws.serve_in_home_expecting_exit(ws.root());
    assert!(
        !status.success(),
        "a second daemon with the default state dir started"
    );
    assert!(named(&stderr), "the first daemon is not named:\n{stderr}");

    let other_home = tempfile::tempdir().expect("tempdir");
    let out = ws
        .command()
        .env("FILEWATCHD_HOME", other_home.path())
        .args(["serve", "--root"])
        .arg(ws.root())
        .output()
        .expect("run serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a daemon under another state home started");
    assert!(named(&stderr), "the first daemon is not named:\n{stderr}");

    let (status, stderr) = ws.serve_in_home_expecting_exit(&ws.path("sub"));
    assert!(!status.success(), "a daemon inside the tree started");
    assert!(named(&stderr) && stderr.contains("which holds"), "{stderr}");
    first.status(); // still serving

    first.kill9();
    let second = Daemon::start_in_home(&ws);
    assert_eq!(
        second.status()["pid"],
        second.pid,
        "a killed daemon's lock blocked the restart"
    );
}

/// Kills (SIGKILL) and reaps a child process when dropped, even when the test panics.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

#[test]
fn a_daemon_still_in_its_first_index_counts_and_the_cli_says_it_is_indexing() {
    let ws = Workspace::new();
    ws.write("sub/a.txt", "a\n");
    let log = tempfile::tempfile().expect("log file");
    let _indexing = KillOnDrop(
        ws.command()
            .args(["serve", "--root"])
            .arg(ws.root())
            .arg("--test-knobs")
            .env("FILEWATCHD_TEST_PAUSE_BUILD", "1")
            .env("RUST_LOG", "filewatchd=info")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log.try_clone().expect("log file"))
            .spawn()
            .expect("spawn the daemon"),
    );
    let read_log =
        || std::fs::read_to_string(format!("/proc/self/fd/{}", log.as_raw_fd())).unwrap_or_default();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !read_log().contains("pausing the first index") {
        assert!(std::time::Instant::now() < until, "never paused: {}", read_log());
        std::thread::sleep(std::time::Duration::from_millis(20)); // polling a condition, not synchronising
    }
    let (status, stderr) = ws.serve_in_home_expecting_exit(&ws.path("sub"));
    assert!(!status.success(), "a daemon started inside one still indexing");
    assert!(
        stderr.contains("a filewatchd that is still indexing already watches"),
        "{stderr}"
    );
    // `status` shows the index under way; the other commands say to wait.
    let out = ws.cli("sub", &["status"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && shown.contains("indexing"), "{out:?}");
    assert!(shown.contains(&ws.root().display().to_string()), "{shown}");
    let out = ws.cli("sub", &["log"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("is still indexing it"), "{said}");
}

#[test]
fn stale_lock_of_a_killed_daemon_does_not_block_a_restart() {
    let ws = Workspace::new();
    Daemon::start(&ws).kill9();

    let daemon = Daemon::start(&ws);
    assert_eq!(daemon.status()["pid"], daemon.pid);
}

/// Stat-cache entries a restart cannot trust (`mtime + 100 ms >= checked`): it re-reads them.
fn racy_entries(ws: &Workspace) -> i64 {
    let db = ws.state_dir().join("index.sqlite");
    let conn = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the index");
    conn.query_row(
        "SELECT count(*) FROM path_state WHERE mtime_ns + 100000000 >= checked_ns",
        [],
        |r| r.get(0),
    )
    .expect("count racy entries")
}

/// Lets a file's mtime fall behind the 100 ms racy window: ages the file; the daemon has
/// already recorded it (a turn marker), so nothing here waits for the daemon.
fn age_past_racy_window(ws: &Workspace, path: &str) {
    let written = std::fs::metadata(ws.root().join(path))
        .and_then(|m| m.modified())
        .expect("stat the file");
    let old_enough = written + std::time::Duration::from_millis(150);
    while std::time::SystemTime::now() < old_enough {
        std::thread::yield_now();
    }
}

#[test]
fn a_clean_stop_leaves_nothing_to_re_read() {
    let ws = Workspace::new();
    // Files count as settled however recently they were written (the default is 2 s).
    let env = [("FILEWATCHD_TEST_SETTLED_AFTER_MS", "0")];
    let daemon = Daemon::start_with_env(&ws, &[], &env);
    daemon.turn_start("s1", "fresh writes");
    ws.write("a.txt", "recorded right after it was written\n");
    daemon.turn_end("s1");
    // Recorded within 100 ms of the write (the settle time is 20 ms), a.txt is racy, unless
    // the machine was so loaded that recording took longer: then there is nothing to settle.
    let before = racy_entries(&ws);
    age_past_racy_window(&ws, "a.txt");
    daemon.stop();
    if before == 0 {
        eprintln!("a.txt was recorded over 100 ms after its write: nothing racy to settle");
    }
    assert_eq!(racy_entries(&ws), 0, "a clean stop left racy entries");

    // A crash settles nothing; the restart re-reads what is racy and records no new version.
    let daemon = Daemon::start_with_env(&ws, &[], &env);
    daemon.turn_start("s1", "fresh writes, then a crash");
    ws.write("b.txt", "recorded right after it was written\n");
    daemon.turn_end("s1");
    daemon.kill9();
    let daemon = Daemon::start(&ws);
    let b = daemon.history("b.txt");
    assert_eq!(
        versions(&b).len(),
        1,
        "b.txt unchanged, yet recorded again: {b:#}"
    );
    let a = daemon.history("a.txt");
    assert_eq!(
        versions(&a).len(),
        1,
        "a.txt unchanged, yet recorded again: {a:#}"
    );
}

#[test]
fn a_damaged_index_stops_the_start_and_is_left_untouched() {
    let ws = Workspace::new();
    for i in 0..200 {
        ws.write(format!("src/f{i}.txt"), format!("line of file {i}\n").repeat(40));
    }
    Daemon::start(&ws).stop();
    let db = ws.state_dir().join("index.sqlite");
    let mut bytes = std::fs::read(&db).expect("read the index");
    let page = 4096;
    assert!(
        bytes.len() > 8 * page,
        "index too small to damage: {}",
        bytes.len()
    );
    // Scramble the header of every page after the schema's: B-tree pages no reader can parse.
    for header in (2 * page..bytes.len()).step_by(page) {
        bytes[header..header + 12].copy_from_slice(&[0x5a; 12]);
    }
    std::fs::write(&db, &bytes).expect("damage the index");
    assert_refused_as_damaged(&ws, &bytes);
}

#[test]
fn damage_only_the_check_finds_stops_the_start_before_anything_is_recorded() {
    let ws = Workspace::new();
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for i in 0..200 {
        // Incompressible content is stored as is: the marker can be found in the index file.
        let mut bytes = format!("MARKER-{i:04}").into_bytes();
        while bytes.len() < 2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        ws.write(format!("blob{i}.bin"), bytes);
    }
    Daemon::start(&ws).stop();
    ws.write("changed-while-down.txt", "to be recorded by the next start\n");
    let db = ws.state_dir().join("index.sqlite");
    let mut bytes = std::fs::read(&db).expect("read the index");
    let at = bytes
        .windows(11)
        .position(|w| w == b"MARKER-0100")
        .expect("the blob's bytes are in the index");
    // Damage the header of the page holding that blob: start-up's own queries never read it.
    let page = at / 4096 * 4096;
    bytes[page..page + 8].copy_from_slice(&[0x5a; 8]);
    std::fs::write(&db, &bytes).expect("damage the index");
    assert_refused_as_damaged(&ws, &bytes);
    let wal = ws.state_dir().join("index.sqlite-wal");
    let wal_len = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(wal_len, 0, "something was written to the damaged index's WAL");
}

#[test]
fn a_first_index_killed_before_it_was_made_durable_starts_over() {
    let ws = Workspace::new();
    for i in 0..40 {
        ws.write(format!("d{}/f{i}.txt", i % 4), format!("content {i}\n"));
    }
    let log = tempfile::tempfile().expect("log file");
    let mut cmd = ws.command();
    cmd.args(["serve", "--root"])
        .arg(ws.root())
        .arg("--state-dir")
        .arg(ws.state_dir())
        .arg("--test-knobs")
        .env("FILEWATCHD_TEST_PAUSE_BUILD", "1")
        .env("RUST_LOG", "filewatchd=info")
        .stdin(std::process::Stdio::null())
        .stderr(log.try_clone().expect("log file"));
    let mut child = cmd.spawn().expect("spawn the daemon");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let read_log =
        || std::fs::read_to_string(format!("/proc/self/fd/{}", log.as_raw_fd())).unwrap_or_default();
    while !read_log().contains("pausing the first index") {
        assert!(
            std::time::Instant::now() < until,
            "the first index never paused: {}",
            read_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20)); // polling a condition, not synchronising
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    let marker = ws.state_dir().join("index.sqlite.building");
    assert!(marker.exists(), "no marker while the first index was unjournaled");

    let daemon = Daemon::start(&ws);
    assert!(
        daemon.wait_for_stderr(
            "indexing again from the start",
            std::time::Duration::from_secs(10)
        ),
        "the interrupted index was not discarded: {}",
        daemon.stderr()
    );
    assert!(!marker.exists(), "the marker outlived the new first index");
    for i in 0..40 {
        let history = daemon.history(&format!("d{}/f{i}.txt", i % 4));
        assert_eq!(versions(&history).len(), 1, "{history:#}");
        assert_eq!(latest(&history)["kind"], "file", "{history:#}");
    }
}

#[test]
fn a_directory_replaced_by_a_file_while_down_records_each_child_gone_once() {
    let ws = Workspace::new();
    ws.write("foo/a.txt", "a\n");
    ws.write("foo/sub/b.txt", "b\n");
    Daemon::start(&ws).stop();
    ws.sh("rm -r foo && printf 'now a file\\n' > foo");
    let daemon = Daemon::start(&ws);
    for child in ["foo/a.txt", "foo/sub/b.txt"] {
        let history = daemon.history(child);
        let gone = versions(&history)
            .iter()
            .filter(|v| v["kind"] == "absent")
            .count();
        assert_eq!(gone, 1, "{child} recorded gone {gone} times: {history:#}");
    }
    assert_eq!(latest(&daemon.history("foo"))["kind"], "file");
}

/// Starting on the damaged index fails, says the index is damaged, and leaves the index file
/// exactly as `damaged`.
#[track_caller]
fn assert_refused_as_damaged(ws: &Workspace, damaged: &[u8]) {
    let (status, stderr) = ws.serve_expecting_exit(&[]);
    assert!(!status.success(), "a damaged index started: {stderr}");
    assert!(
        stderr.contains("damaged"),
        "the error does not say the index is damaged: {stderr}"
    );
    let db = ws.state_dir().join("index.sqlite");
    assert_eq!(
        std::fs::read(db).expect("read the index"),
        damaged,
        "the damaged index was changed"
    );
}
