//! CLI conventions: a command run with `--json` that fails says so in JSON on stdout, with
//! the exit code it has without `--json`; a missing config file is said once; a user's mistake
//! is not a WARN in the daemon's log.

use std::process::Output;

use crate::common::*;
use serde_json::Value;

/// The JSON error on stdout of a command that failed with `exit`, and its stderr line.
#[track_caller]
fn json_error(out: Output, exit: i32) -> (Value, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(exit),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let body: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    let error = &body["error"];
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(1), "{body}");
    (error.clone(), stderr)
}

/// What `NAME` prints: without `--json`, no JSON, the same exit code.
#[track_caller]
fn without_json(ws: &Workspace, args: &[&str], exit: i32) {
    let out = ws.cli(".", args);
    assert_eq!(out.status.code(), Some(exit), "{args:?}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("\"error\""),
        "{args:?}"
    );
}

#[test]
fn a_refusal_of_the_daemon_is_json_with_its_code() {
    let ws = Workspace::new();
    let _daemon = Daemon::start_in_home(&ws);
    let (error, stderr) = json_error(ws.cli(".", &["undo", "--session", "nobody", "--json"]), 1);
    assert_eq!(error["code"], "not_found", "{error}");
    assert!(error["message"].as_str().unwrap().contains("nobody"), "{error}");
    assert!(stderr.starts_with("filewatchd: no session named"), "{stderr}");
    without_json(&ws, &["undo", "--session", "nobody"], 1);

    let (error, _) = json_error(ws.cli(".", &["history", "/etc/passwd", "--json"]), 1);
    assert_eq!(error["code"], "bad_input", "{error}");
    let (error, _) = json_error(ws.cli(".", &["turn", "end", "--session", "s", "--json"]), 1);
    assert_eq!(error["code"], "not_found", "{error}");
}

#[test]
fn no_daemon_is_json_with_the_code_no_daemon() {
    let ws = Workspace::new();
    for args in [
        &["status", "--json"][..],
        &["turn", "start", "--session", "s", "--json"],
    ] {
        let (error, stderr) = json_error(ws.cli(".", args), 1);
        assert_eq!(error["code"], "no_daemon", "{args:?}: {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("no filewatchd is running"),
            "{error}"
        );
        assert!(stderr.contains("no filewatchd is running"), "{stderr}");
    }
    without_json(&ws, &["status"], 1);

    // A daemon that died leaves its daemon.json: the one that does not answer is no daemon too.
    let daemon = Daemon::start_in_home(&ws);
    daemon.kill9();
    let (error, _) = json_error(ws.cli(".", &["status", "--json"]), 1);
    assert_eq!(error["code"], "no_daemon", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("is no longer running"),
        "{error}"
    );
}

#[test]
fn a_usage_error_is_json_with_exit_2() {
    let ws = Workspace::new();
    let (error, stderr) = json_error(ws.cli(".", &["log", "--json", "--bogus"]), 2);
    assert_eq!(error["code"], "usage", "{error}");
    assert_eq!(error["message"], "unexpected argument '--bogus' found");
    assert!(
        stderr.contains("Usage:"),
        "clap's own message stays on stderr: {stderr}"
    );
    let (error, _) = json_error(
        ws.cli(".", &["rollback", "--json", "--before", "1", "--at", "x"]),
        2,
    );
    assert_eq!(error["code"], "usage", "{error}");
    without_json(&ws, &["log", "--bogus"], 2);
    // After `--`, `--json` is an operand, not the flag.
    let out = ws.cli(".", &["log", "--bogus", "--", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// A rollback refused because of conflicts is an answer, not a failure: the plan with its
/// error, exit 3.
#[test]
fn a_refused_rollback_is_its_plan_with_the_error_and_exit_3() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", "one");
    ws.write("a.txt", "from the turn\n");
    daemon.turn_end("s");
    ws.write("a.txt", "from the user\n");

    let out = cli_state(&ws, &["undo", "--session", "s", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["error"]["code"], "conflicts", "{plan}");
    assert_eq!(
        plan["error"]["message"],
        "1 path conflicts or cannot be restored; nothing was changed (use skip or force)"
    );
    assert_eq!(plan["conflicts"][0]["path"], "a.txt", "{plan}");
}
