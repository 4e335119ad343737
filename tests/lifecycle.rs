//! `start`, `stop`, `restart` on the real binary: the daemon in the background, one per
//! workspace, stopped cleanly, never started on a home directory without being asked, and
//! `status` while it indexes.

use std::process::{Command, Output, Stdio};

use crate::common::*;

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[track_caller]
fn ok(ws: &Workspace, args: &[&str]) -> String {
    let out = ws.cli(".", args);
    let (stdout, stderr) = text(&out);
    let logs = ws.daemon_logs();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}: stdout:\n{stdout}\nstderr:\n{stderr}\n{logs}",
        out.status
    );
    stdout
}

/// The pid in a line such as "started: pid 42, http://127.0.0.1:1, watching /x".
fn pid_in(line: &str) -> u32 {
    let after = line
        .split("pid ")
        .nth(1)
        .unwrap_or_else(|| panic!("no pid in {line:?}"));
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no pid in {line:?}"))
}

#[test]
fn start_returns_with_a_daemon_answering_and_a_second_start_starts_nothing() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("src/a.rs", "fn a() {}\n");
    let first = ok(&ws, &["start"]);
    assert_eq!(first.lines().count(), 1, "{first}");
    assert!(first.starts_with("started: pid "), "{first}");
    assert!(first.contains(&ws.root().display().to_string()), "{first}");
    // It answers already: no polling.
    let daemon = ws
        .answering(ws.root())
        .expect("the daemon answers once start returns");
    assert_eq!(pid_in(&first), daemon.pid);
    assert!(first.contains(&daemon.url), "{first}");
    let status = expect(200, daemon.get("/v1/status"));
    assert_eq!(status["tracked_files"], 1, "{status:#}");

    // From a subdirectory too: the same workspace, the same daemon.
    let out = ws.cli("src", &["start"]);
    assert!(out.status.success(), "{out:?}");
    let second = text(&out).0;
    assert!(second.starts_with("already running: pid "), "{second}");
    assert_eq!(pid_in(&second), daemon.pid, "{second}");
    assert_eq!(
        daemons_of(ws.home()),
        vec![daemon.pid],
        "a second daemon was started"
    );
}

#[test]
fn stop_waits_for_the_exit_and_frees_the_workspace() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let pid = pid_in(&ok(&ws, &["start"]));
    let stopped = ok(&ws, &["stop"]);
    assert_eq!(
        stopped.trim(),
        format!("stopped: pid {pid}, {}", ws.root().display())
    );
    // Gone when stop returns: no waiting here.
    assert!(exited(pid), "pid {pid} still runs after stop returned");
    let state = ws.home_state_of(ws.root()).expect("state directory");
    assert!(
        !state.join("daemon.json").exists(),
        "a clean stop removes daemon.json"
    );

    let again = ok(&ws, &["stop"]);
    assert!(again.starts_with("not running"), "{again}");
    // The workspace is free: a new daemon starts.
    let restarted = ok(&ws, &["start"]);
    assert!(restarted.starts_with("started: pid "), "{restarted}");
    assert_ne!(pid_in(&restarted), pid);
}

/// `start` right after `kill -9` of the daemon: the dying process still holds its lock for a
/// moment after `kill` returns, and it was named as holding the workspace but not answering.
/// Now start waits for it to go and starts the next one, each of many times.
#[test]
fn start_right_after_a_kill_9_starts_a_new_daemon() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let mut pid = pid_in(&ok(&ws, &["start"]));
    for round in 0..20 {
        let killed = Command::new("kill").args(["-9", &pid.to_string()]).status();
        assert!(killed.is_ok_and(|s| s.success()), "kill -9 {pid}");
        let out = ws.cli(".", &["start"]);
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success() && stdout.starts_with("started: pid "),
            "round {round}, after kill -9 {pid}: {}\nstdout: {stdout}\nstderr: {stderr}",
            out.status
        );
        let next = pid_in(&stdout);
        assert_ne!(next, pid, "round {round}: the killed pid named as running");
        pid = next;
    }
}

#[test]
fn restart_replaces_the_daemon() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let before = pid_in(&ok(&ws, &["start"]));
    let out = ok(&ws, &["restart"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(pid_in(lines[0]), before, "{out}");
    assert!(
        lines[0].starts_with("stopped") && lines[1].starts_with("started"),
        "{out}"
    );
    let after = pid_in(lines[1]);
    assert!(exited(before));
    assert_eq!(ws.answering(ws.root()).map(|d| d.pid), Some(after));
    // A restart with nothing running just starts one.
    ok(&ws, &["stop"]);
    let out = ok(&ws, &["restart"]);
    assert!(
        out.starts_with("not running") && out.contains("started: pid "),
        "{out}"
    );
}

/// `start` and `serve` with `cmd`'s environment, no terminal; the output.
fn run(mut cmd: Command, args: &[&str]) -> Output {
    cmd.args(args).stdin(Stdio::null());
    cmd.output().expect("run filewatchd")
}

#[test]
fn start_on_a_home_directory_refuses_without_a_terminal_and_starts_with_yes() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    // The workspace is the home directory, then holds it.
    for home in [ws.root().to_path_buf(), ws.path("me")] {
        std::fs::create_dir_all(&home).expect("mkdir");
        for args in [&["start"][..], &["serve", "--root", "."][..]] {
            let mut cmd = ws.command();
            cmd.env("HOME", &home);
            let out = run(cmd, args);
            let (stdout, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stdout}{stderr}");
            assert!(
                stderr.contains("--yes") && stderr.contains("home directory"),
                "{stderr}"
            );
            assert!(daemons_of(ws.home()).is_empty(), "{args:?} started a daemon");
        }
    }
    let mut cmd = ws.command();
    cmd.env("HOME", ws.root());
    let out = run(cmd, &["start", "--yes"]);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success() && stdout.starts_with("started: pid "),
        "{stdout}{stderr}"
    );
    ws.answering(ws.root()).expect("started with --yes");
}

#[test]
fn a_start_that_fails_says_why() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write(".filewatchd.toml", "colour = 1\n");
    let out = ws.cli(".", &["start"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("did not start") && stderr.contains("colour"),
        "{stderr}"
    );
    assert!(stderr.contains("daemon.log"), "the log is named: {stderr}");
}

#[test]
fn status_shows_the_first_index_while_it_runs() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("a.txt", "a\n");
    let release = ws.state_dir().join("release");
    let pid = ws.spawn_held(&release);
    let state = ws.wait_index_read(ws.root());

    let status = ok(&ws, &["status"]);
    assert!(
        status.contains("indexing") && status.contains("1 of 1 files read"),
        "{status}"
    );
    let json = cli_json(&ws, &["status", "--json"]);
    assert_eq!(json["pid"], pid, "{json:#}");
    assert_eq!(
        (
            json["indexing"]["read"].as_u64(),
            json["indexing"]["total"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let start = ok(&ws, &["start"]);
    assert!(
        start.starts_with(&format!("already running: pid {pid}, indexing")),
        "{start}"
    );

    std::fs::write(&release, "").expect("release");
    let daemon = ws.wait_answering(ws.root());
    assert_eq!(daemon.pid, pid);
    assert!(
        !state.join("indexing.json").exists(),
        "the progress outlives the index"
    );
}

#[track_caller]
fn cli_json(ws: &Workspace, args: &[&str]) -> serde_json::Value {
    let out = ok(ws, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// A symlink where the workspace's tree lock goes (`/tmp/filewatchd-<uid>/trees/`)
/// neither makes `start` report a failure nor `stop` say "not running" while the daemon runs:
/// the lock is refused (and said so) and the state directory's lock stands in.
#[test]
fn a_symlink_as_the_tree_lock_neither_fails_start_nor_hides_the_daemon() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let meta = std::fs::metadata(ws.root()).expect("stat the root");
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let trees = std::path::PathBuf::from(format!("/tmp/filewatchd-{uid}/trees"));
    std::fs::create_dir_all(&trees).expect("the private directory");
    let planted = trees.join(format!(
        "{}-{}.lock",
        std::os::unix::fs::MetadataExt::dev(&meta),
        std::os::unix::fs::MetadataExt::ino(&meta)
    ));
    // Lock files stay behind when their daemon stops: one left by an earlier root whose inode
    // this root reuses is in the way of the plant (it is ours, and no daemon holds it).
    match std::fs::remove_file(&planted) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("clear a stale lock: {e}"),
    }
    std::os::unix::fs::symlink(ws.home().join("elsewhere"), &planted).expect("plant the symlink");
    struct Unplant(std::path::PathBuf);
    impl Drop for Unplant {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _unplant = Unplant(planted);

    let started = ok(&ws, &["start"]);
    assert!(started.starts_with("started: pid "), "{started}");
    let daemon = ws.answering(ws.root()).expect("the daemon answers");
    assert!(
        ws.daemon_logs().contains("is a symlink: refused"),
        "{}",
        ws.daemon_logs()
    );
    let stopped = ok(&ws, &["stop"]);
    assert_eq!(
        stopped.trim_end(),
        format!("stopped: pid {}, {}", daemon.pid, ws.root().display())
    );
}
