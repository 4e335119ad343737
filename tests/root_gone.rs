//! A workspace root removed while its daemon runs: the CLI finds that daemon by its record
//! (the state directory naming the root, the tree lock's note naming the state directory), not
//! by the root's existence. `status` and `log` reach it, `projects` shows it running, `stop
//! --root DIR` stops it, and `forget` then deletes its history; from a shell still in the
//! removed directory too.

use std::process::Output;

use crate::common::*;
use serde_json::Value;

/// `filewatchd ARGS` run from the workspace's home (the root is gone).
fn run(ws: &Workspace, args: &[&str]) -> Output {
    let mut cmd = ws.command();
    cmd.current_dir(ws.home()).args(args);
    run_to_completion(cmd)
}

#[track_caller]
fn run_ok(ws: &Workspace, args: &[&str]) -> String {
    let out = run(ws, args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        ws.daemon_logs()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `projects --json` says of `root`.
fn project_of(ws: &Workspace, root: &str) -> Value {
    let text = run_ok(ws, &["projects", "--json"]);
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let found = answer["projects"].as_array().into_iter().flatten();
    found
        .into_iter()
        .find(|p| p["root"] == root)
        .cloned()
        .unwrap_or_else(|| panic!("{root} not listed: {answer:#}"))
}

/// Starts the daemon of the workspace in the background, records one edit, removes the root.
fn started_then_removed(ws: &Workspace) -> (Background, String) {
    ws.write("a.txt", "one\n");
    run_ok(ws, &["start", "--root", ws.root().to_str().expect("utf-8")]);
    let daemon = ws.wait_answering(ws.root());
    ws.write("a.txt", "two\n");
    let root = ws.root().to_str().expect("utf-8").to_string();
    std::fs::remove_dir_all(ws.root()).expect("remove the root");
    (daemon, root)
}

#[test]
fn a_daemon_whose_root_was_removed_is_reached_stopped_and_forgotten_by_its_record() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let (daemon, root) = started_then_removed(&ws);

    let status = run_ok(&ws, &["status", "--root", &root, "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap_or_else(|e| panic!("{e}: {status}"));
    assert_eq!(status["root"], root.as_str(), "{status:#}");
    let log = run_ok(&ws, &["log", "--root", &root]);
    assert!(log.contains("found at start-up"), "{log}");

    let listed = project_of(&ws, &root);
    assert_eq!(listed["root_exists"], false, "{listed:#}");
    assert_eq!(
        (listed["running"].as_bool(), listed["pid"].as_u64()),
        (Some(true), Some(u64::from(daemon.pid))),
        "{listed:#}"
    );

    // Refused while it runs, pointing at the `stop` that now works.
    let out = run(&ws, &["forget", &root, "--yes"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("filewatchd stop --root {root}")),
        "{stderr}"
    );

    let said = run_ok(&ws, &["stop", "--root", &root]);
    assert!(
        said.starts_with(&format!("stopped: pid {}", daemon.pid)),
        "{said}"
    );
    assert!(exited(daemon.pid), "pid {} still runs after stop", daemon.pid);
    assert_eq!(project_of(&ws, &root)["running"], false);

    let out = run(&ws, &["status", "--root", &root]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no longer exists") && stderr.contains("no filewatchd is running"),
        "{stderr}"
    );

    // `--root DIR`, which `forget --help` lists, names it as well as `forget DIR`.
    let said = run_ok(&ws, &["forget", "--root", &root, "--yes"]);
    assert!(said.starts_with(&format!("forgot {root}")), "{said}");
    assert!(ws.home_state_of(ws.root()).is_none(), "its state is still there");
}

#[test]
fn a_shell_still_in_the_removed_root_reaches_and_stops_its_daemon() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("a.txt", "one\n");
    run_ok(&ws, &["start", "--root", ws.root().to_str().expect("utf-8")]);
    let daemon = ws.wait_answering(ws.root());
    // bash keeps `$PWD` for a directory removed under it, as a user's shell does.
    let script = format!(
        "set -eu\ncd '{root}'\nrm -rf '{root}'\n\"$BIN\" log\n\"$BIN\" stop",
        root = ws.root().display()
    );
    let mut bash = std::process::Command::new("bash");
    for (name, value) in ws.command().get_envs() {
        match value {
            Some(value) => bash.env(name, value),
            None => bash.env_remove(name),
        };
    }
    bash.current_dir(ws.home()).env("BIN", BIN).args(["-c", &script]);
    let out = run_to_completion(bash);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("found at start-up"), "{stdout}");
    assert!(
        stdout.contains(&format!("stopped: pid {}", daemon.pid)),
        "{stdout}"
    );
}
