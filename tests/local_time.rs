//! Times as people read and type them: `log` shows local time with its UTC offset, a time
//! typed without an offset is local time, and a rollback to a time not reached yet is refused
//! (a local time once read as UTC rolled back to an hour that had not come).

use std::process::Output;

use crate::common::*;
use serde_json::Value;

/// A CLI command in the workspace with `--state-dir` and the time zone UTC+2 (POSIX spells
/// it `Etc/GMT-2`).
fn in_zone(ws: &Workspace, args: &[&str]) -> Output {
    ws.command()
        .env("TZ", "Etc/GMT-2")
        .args(args)
        .arg("--state-dir")
        .arg(ws.state_dir())
        .output()
        .expect("the CLI runs")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn a_time_typed_without_an_offset_is_local_and_log_shows_the_offset() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", "edit");
    ws.write("a.txt", "two\n");
    daemon.turn_end("s");

    let log = String::from_utf8_lossy(&in_zone(&ws, &["log"]).stdout).into_owned();
    assert!(log.contains("+02:00"), "no offset in {log}");

    // 10:00 local in UTC+2 is 08:00 UTC.
    let out = in_zone(
        &ws,
        &["rollback", "--at", "2026-01-02 10:00:00", "--dry-run", "--json"],
    );
    let answer = json_of(&out);
    let text = answer.to_string();
    assert!(
        text.contains("2026-01-02T08:00:00.000Z"),
        "not read as local time: {answer:#}"
    );
}

#[test]
fn a_rollback_to_a_time_not_reached_yet_is_refused() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let _daemon = Daemon::start(&ws);
    let out = in_zone(
        &ws,
        &["rollback", "--at", "2999-01-01T00:00:00Z", "--dry-run", "--json"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_of(&out)["error"]["code"], "bad_time");
    assert!(String::from_utf8_lossy(&out.stderr).contains("in the future"));
}
