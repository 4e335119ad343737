//! `POST /v1/stop` and `filewatchd stop` through it, on the real binary over loopback HTTP:
//! the daemon shuts down as on `SIGTERM` (what it recorded intact, its lock let go of), only
//! for a client with the token, in the portable build too (a core scenario of `.ci/run`);
//! a stop during a rollback lets the rollback finish, an API that refuses is never answered
//! with a signal, and a daemon with no API to ask (in its first index, or wedged) is
//! signalled by its proven pid on Linux while the portable build says what to do instead.

use std::time::Duration;

use serde_json::json;

use crate::common::*;

const DEADLINE: Duration = Duration::from_secs(60);

#[track_caller]
fn stdout_of(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stdout}{stderr}", out.status);
    stdout
}

/// `filewatchd stop`, which must say it stopped `daemon`, and the daemon's clean exit.
#[track_caller]
fn stop_and_wait(ws: &Workspace, daemon: &mut Daemon) {
    let stopped = stdout_of(&cli_state(ws, &["stop"]));
    assert!(
        stopped.starts_with(&format!("stopped: pid {}", daemon.pid)),
        "{stopped}"
    );
    let status = daemon.wait_exit(DEADLINE).expect("the daemon has exited");
    assert!(status.success(), "{status}: {}", daemon.stderr());
}

/// The pid in a line such as "started: pid 42, http://127.0.0.1:1, watching /x".
fn pid_in(line: &str) -> u32 {
    let after = line.split("pid ").nth(1).unwrap_or_default();
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no pid in {line:?}"))
}

#[test]
fn the_endpoint_stops_the_daemon_and_what_it_recorded_stays() {
    let ws = Workspace::new();
    let mut daemon = Daemon::start(&ws);
    daemon.turn_start("s", "one");
    ws.write("a.txt", "one\n");
    daemon.turn_end("s");

    let answer = expect(202, daemon.post_empty("/v1/stop"));
    assert_eq!(answer, json!({ "pid": daemon.pid }));
    let status = daemon
        .wait_exit(DEADLINE)
        .expect("the daemon exits once asked to stop");
    assert!(status.success(), "{status}: {}", daemon.stderr());
    assert!(
        !ws.state_dir().join("daemon.json").exists(),
        "a clean stop removes daemon.json"
    );

    // Its lock let go of, a new daemon takes the workspace, with the record as it was.
    let next = Daemon::start(&ws);
    let turn = next.turn("s", 1, false);
    let changed: Vec<&str> = turn["changes"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["path"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(changed, ["a.txt"], "{turn:#}");
}

#[test]
fn the_endpoint_refuses_a_request_without_the_token() {
    let ws = Workspace::new();
    let mut daemon = Daemon::start(&ws);
    let host = daemon.host();
    let none = daemon.raw("POST", "/v1/stop", &[("Host", &host)], None);
    assert_error(401, "unauthorized", none.pair());
    let wrong = [("Host", host.as_str()), ("Authorization", "Bearer 0123")];
    assert_error(
        401,
        "unauthorized",
        daemon.raw("POST", "/v1/stop", &wrong, None).pair(),
    );
    let bearer = daemon.bearer();
    let page = [
        ("Host", host.as_str()),
        ("Authorization", bearer.as_str()),
        ("Origin", "http://evil.example"),
    ];
    assert_error(
        403,
        "forbidden",
        daemon.raw("POST", "/v1/stop", &page, None).pair(),
    );
    assert_error(405, "method_not_allowed", daemon.get("/v1/stop"));

    daemon.assert_alive();
    assert_eq!(daemon.status()["root"], json!(ws.root()));
}

/// `stop` asks the daemon over its API (its log says so), in every build, and waits until it
/// has exited; `restart` stops the same way.
#[test]
fn stop_and_restart_ask_the_daemon_over_its_api() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let pid = pid_in(&stdout_of(&ws.cli(".", &["start"])));
    let restarted = stdout_of(&ws.cli(".", &["restart"]));
    let lines: Vec<&str> = restarted.lines().collect();
    assert_eq!(lines.len(), 2, "{restarted}");
    assert_eq!(pid_in(lines[0]), pid, "{restarted}");
    let next = pid_in(lines[1]);
    assert_ne!(next, pid, "{restarted}");

    let stopped = stdout_of(&ws.cli(".", &["stop"]));
    assert_eq!(
        stopped.trim_end(),
        format!("stopped: pid {next}, {}", ws.root().display())
    );
    let asked = ws.daemon_logs().matches("asked to stop over the API").count();
    assert_eq!(asked, 2, "{}", ws.daemon_logs());
    let gone = poll_until(DEADLINE, || (exited(pid) && exited(next)).then_some(()));
    assert!(gone.is_some(), "a stopped daemon still runs");
    let again = stdout_of(&ws.cli(".", &["stop"]));
    assert!(again.starts_with("not running"), "{again}");
}

/// A rollback under way when `stop` comes is finished, all of it, before the daemon exits.
#[test]
fn a_stop_during_a_rollback_lets_it_finish() {
    const FILES: usize = 300;
    let ws = Workspace::new();
    let mut daemon = Daemon::start(&ws);
    daemon.turn_start("s", "many files");
    for i in 0..FILES {
        ws.write(format!("f/{i:03}.txt"), format!("file {i}\n"));
    }
    daemon.turn_end("s");
    let answer = daemon.post_detached("/v1/sessions/s/rollback", json!({"to": "before", "turn": 1}));
    let any_gone = || (0..FILES).any(|i| !ws.path(format!("f/{i:03}.txt")).exists());
    assert!(
        poll_until(DEADLINE, || any_gone().then_some(())).is_some(),
        "no rollback"
    );

    stop_and_wait(&ws, &mut daemon);
    if let Ok(Some((code, body))) = answer.try_recv() {
        assert_eq!(code, 200, "{body:#}");
    }
    let left: Vec<usize> = (0..FILES)
        .filter(|i| ws.path(format!("f/{i:03}.txt")).exists())
        .collect();
    assert!(left.is_empty(), "a rollback half done: {left:?} left");

    let next = Daemon::start(&ws);
    let status = next.status();
    assert!(status["recovery"].is_null(), "{status:#}");
}

/// During its first index a daemon has no API yet: the Linux build stops it by its proven
/// pid as before; the portable one sends nothing, says what to do, and stops it once it answers.
#[test]
fn a_stop_during_the_first_index() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("a.txt", "a\n");
    let release = ws.state_dir().join("release");
    let pid = ws.spawn_held(&release);
    ws.wait_index_read(ws.root());

    let out = ws.cli(".", &["stop"]);
    if cfg!(feature = "portable") {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("cannot prove"), "{stderr}");
        assert!(stderr.contains(&format!("`kill {pid}`")), "{stderr}");
        assert!(!exited(pid), "the portable build signalled the daemon");
        std::fs::write(&release, "").expect("release the index");
        ws.wait_answering(ws.root());
        let stopped = stdout_of(&ws.cli(".", &["stop"]));
        assert!(stopped.starts_with(&format!("stopped: pid {pid}")), "{stopped}");
    } else {
        let stopped = stdout_of(&out);
        assert_eq!(
            stopped.trim_end(),
            format!("stopped: pid {pid}, {}", ws.root().display())
        );
    }
    let gone = poll_until(DEADLINE, || exited(pid).then_some(()));
    assert!(gone.is_some(), "pid {pid} still runs");
}

/// A daemon that answers its API with an error is not signalled behind the user's back: the
/// error is said, and the daemon runs on.
#[test]
fn a_refusal_of_the_api_is_said_and_nothing_is_signalled() {
    let ws = Workspace::new();
    let mut daemon = Daemon::start(&ws);
    let token = ws.state_dir().join("token");
    std::fs::write(&token, format!("{}\n", "0".repeat(64))).expect("a wrong token");
    let out = cli_state(&ws, &["stop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("wrong bearer token"), "{stderr}");
    daemon.assert_alive();

    std::fs::write(&token, format!("{}\n", daemon.token)).expect("the right token");
    stop_and_wait(&ws, &mut daemon);
}

/// Whether a `SIGTERM` waits for the stopped process `pid` (`ShdPnd`: signals sent to the
/// process, pending; `SIGTERM` is bit 14).
fn sigterm_pending(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let pending = status.lines().find_map(|l| l.strip_prefix("ShdPnd:"));
    pending
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGTERM - 1)) != 0)
}

/// A daemon that holds the workspace but does not answer (wedged: here stopped by `SIGSTOP`)
/// is stopped by the Linux build through its proven pid, as before the API; the portable build
/// sends nothing and says what to do instead.
#[test]
fn a_daemon_that_does_not_answer_its_api() {
    let ws = Workspace::new();
    let mut daemon = Daemon::start(&ws);
    let pid = daemon.pid;
    let signal = |name: &str| {
        let sent = std::process::Command::new("kill")
            .args([name, &pid.to_string()])
            .status();
        assert!(sent.is_ok_and(|s| s.success()), "kill {name} {pid}");
    };
    signal("-STOP");
    let out = std::thread::scope(|scope| {
        let stop = scope.spawn(|| cli_state(&ws, &["stop"]));
        if !cfg!(feature = "portable") {
            let sent = poll_until(DEADLINE, || sigterm_pending(pid).then_some(()));
            signal("-CONT");
            assert!(sent.is_some(), "stop sent the wedged daemon no SIGTERM");
        }
        stop.join().expect("the stop thread")
    });
    if cfg!(feature = "portable") {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("nothing answered at http://127.0.0.1:"),
            "{stderr}"
        );
        assert!(stderr.contains(&format!("`kill {pid}`")), "{stderr}");
        // Still stopped, it would hold a signal sent to it.
        assert!(!sigterm_pending(pid), "the portable build signalled the daemon");
        signal("-CONT");
        return;
    }
    let stopped = stdout_of(&out);
    assert!(stopped.starts_with(&format!("stopped: pid {pid}")), "{stopped}");
    let status = daemon.wait_exit(DEADLINE).expect("the daemon has exited");
    assert!(status.success(), "{status}: {}", daemon.stderr());
}
