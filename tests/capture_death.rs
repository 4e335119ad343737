//! A dead capture thread ends the daemon. A reader that panics (made to by
//! `FILEWATCHD_TEST_PANIC_ON`) must not leave an HTTP server up whose markers all fail while
//! `status` calls it healthy: the daemon exits non-zero with one clear line, and the next
//! start recovers as after a crash.

use crate::common::*;
use std::time::Duration;

/// `GET /v1/status` that tolerates a daemon going away: `None` when nobody answers.
fn status_if_any(daemon: &Daemon) -> Option<u16> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let answer = agent
        .get(format!("{}/v1/status", daemon.url))
        .header("Authorization", daemon.bearer())
        .call();
    answer.ok().map(|r| r.status().as_u16())
}

#[test]
fn a_panicking_reader_ends_the_daemon_and_the_next_start_recovers() {
    let ws = Workspace::new();
    let mut daemon = Daemon::start_with_env(&ws, &[], &[("FILEWATCHD_TEST_PANIC_ON", "boom.txt")]);
    daemon.turn_start("s1", "a burst with one bad file");
    // Enough files for the batch to be read by the parallel readers (`map_parallel`).
    for i in 0..40 {
        ws.write(format!("f{i:02}.txt"), format!("file {i}\n"));
    }
    ws.write("boom.txt", "the reader panics on this one\n");
    let marker = daemon.post_detached("/v1/sessions/s1/turns/current/end", serde_json::json!({}));

    let status = daemon.wait_exit(Duration::from_secs(60));
    let stderr = daemon.stderr();
    let status =
        status.unwrap_or_else(|| panic!("the daemon serves on with a dead capture thread:\n{stderr}"));
    assert!(
        !status.success(),
        "a dead capture thread exited {status}:\n{stderr}"
    );
    assert_eq!(
        stderr.matches("the capture thread died").count(),
        1,
        "not one clear line:\n{stderr}"
    );
    let answer = marker.recv().expect("the marker's thread");
    assert!(
        answer.as_ref().is_none_or(|(code, _)| *code != 200),
        "the marker succeeded without its writes: {answer:?}"
    );
    assert_eq!(status_if_any(&daemon), None, "a stopped daemon still answers");

    // The next start recovers as after a crash: what was written is recorded (offline).
    let daemon = Daemon::start(&ws);
    assert_eq!(daemon.status()["pid"], daemon.pid);
    assert_eq!(latest(&daemon.history("boom.txt"))["origin"], "offline");
    assert!(
        !versions(&daemon.history("f39.txt")).is_empty(),
        "f39.txt is not recorded"
    );
}

/// A panic during the first index stops the start-up like any failure: exit 1, one line
/// naming it, nothing left listening.
#[test]
fn a_panic_in_the_first_index_stops_the_start_with_one_clear_line() {
    let ws = Workspace::new();
    ws.write("boom.txt", "the reader panics on this one\n");
    let (status, stderr) = ws.serve_expecting_exit_with_env(&[], &[("FILEWATCHD_TEST_PANIC_ON", "boom.txt")]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr
            .matches("filewatchd: indexing the workspace failed: it panicked")
            .count(),
        1,
        "not one clear line:\n{stderr}"
    );
    // The next start (no knob) indexes as after a crash.
    let daemon = Daemon::start(&ws);
    assert!(!versions(&daemon.history("boom.txt")).is_empty());
}

/// The test knobs are honoured only with `serve --test-knobs`: a variable left in a user's
/// shell changes nothing.
#[test]
fn a_daemon_started_without_test_knobs_ignores_them() {
    let ws = Workspace::new();
    ws.write("boom.txt", "read at the first index\n");
    let env = [
        ("FILEWATCHD_TEST_PANIC_ON", "boom.txt"),
        ("FILEWATCHD_TEST_PAUSE_BUILD", "1"),
    ];
    let mut daemon = Daemon::start_without_test_knobs(&ws, &env);
    daemon.turn_start("s1", "writes");
    ws.write("boom.txt", "written in a turn\n");
    let turn = daemon.turn_end("s1");
    assert_eq!(changed_paths(&turn), set(["boom.txt"]), "{turn:#}");
    daemon.assert_alive();
    assert!(
        !daemon.stderr().contains("test knobs are on"),
        "{}",
        daemon.stderr()
    );
}
