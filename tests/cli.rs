//! The CLI client: discovery by walking up from the cwd, exit codes, `--json` output.

use std::process::Output;

use crate::common::*;
use serde_json::Value;

#[track_caller]
fn ok(out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {}; stdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[track_caller]
fn json(out: Output) -> Value {
    let stdout = ok(out);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

#[track_caller]
fn assert_exit(code: i32, out: Output) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn turn_commands_from_a_subdirectory_find_the_daemon_in_filewatchd_home() {
    let ws = Workspace::new();
    ws.write("sub/dir/.keep", "");
    let _daemon = Daemon::start_in_home(&ws);
    let here = "sub/dir";

    let status = json(ws.cli(here, &["status", "--json"]));
    assert_eq!(status["root"], ws.root().to_str().unwrap());
    // The start-up walk is the first rescan: the workspace, its two entries (sub, sub/dir)
    // and the file.
    let text = ok(ws.cli(here, &["status"]));
    assert!(
        text.contains("last rescan:   workspace: 3 paths walked"),
        "{text}"
    );
    ok(ws.cli(
        here,
        &["turn", "start", "--session", "cli", "--label", "first turn"],
    ));
    ws.write("sub/dir/x.txt", "from the cli test\n");
    ok(ws.cli(here, &["turn", "end", "--session", "cli"]));

    let log = ok(ws.cli(here, &["log", "--session", "cli"]));
    assert!(log.contains("first turn"), "label missing from the log:\n{log}");
    json(ws.cli(here, &["log", "--session", "cli", "--json"]));

    let turn = json(ws.cli(here, &["show", "1", "--session", "cli", "--json"]));
    assert_eq!(change(&turn, "sub/dir/x.txt")["change"], "added");

    // A path argument is relative to the cwd, like git's; the answer is root-relative.
    let history = json(ws.cli(here, &["history", "x.txt", "--json"]));
    assert_eq!(history["path"], "sub/dir/x.txt");
    assert_eq!(latest(&history)["origin"], "turn");
    assert_eq!(latest(&history)["session"], "cli");
}

#[test]
fn path_arguments_resolve_dots_slashes_and_absolute_paths_as_a_shell_does() {
    let ws = Workspace::new();
    ws.write("src/lib.rs", "one\n");
    ws.write("run.sh", "echo one\n");
    let _daemon = Daemon::start_in_home(&ws);
    ok(ws.cli(".", &["turn", "start", "--session", "s"]));
    ws.write("src/lib.rs", "two\n");
    ws.write("run.sh", "echo two\n");
    ok(ws.cli(".", &["turn", "end", "--session", "s"]));

    let absolute = ws.root().join("run.sh");
    for typed in ["../run.sh", "./../src/../run.sh", absolute.to_str().unwrap()] {
        let history = json(ws.cli("src", &["history", typed, "--json"]));
        assert_eq!(history["path"], "run.sh", "typed {typed:?} in src/");
    }
    let restore = [
        "restore",
        "--before",
        "1",
        "--session",
        "s",
        "--dry-run",
        "--json",
    ];
    for (cwd, typed) in [(".", "src/"), ("src", "."), ("src", "lib.rs/")] {
        let plan = json(ws.cli(cwd, &[&restore[..], &[typed]].concat()));
        assert_eq!(
            action_paths(&plan),
            set(["src/lib.rs"]),
            "{typed:?} in {cwd}: {plan:#}"
        );
    }

    for (typed, says) in [
        ("../..", "outside the workspace"),
        ("..", "the workspace root itself"),
    ] {
        let out = ws.cli("src", &["history", typed]);
        assert_exit(1, out.clone());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{typed:?}: {stderr}");
    }
}

#[test]
fn a_session_name_the_api_would_refuse_is_refused_before_any_request() {
    let ws = Workspace::new();
    let _daemon = Daemon::start_in_home(&ws);
    for name in ["bad name!", "a/b", ""] {
        let out = ws.cli(".", &["turn", "start", "--session", name]);
        assert_exit(1, out.clone());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("is not a session name: a session name is 1 to 128"),
            "{name:?}: {stderr}"
        );
    }
}

#[test]
fn url_and_token_from_the_environment_override_discovery() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let elsewhere = tempfile::tempdir().unwrap();

    let out = ws
        .command()
        .current_dir(elsewhere.path())
        .env("FILEWATCHD_URL", &daemon.url)
        .env("FILEWATCHD_TOKEN", &daemon.token)
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert_eq!(json(out)["pid"], daemon.pid);
}

#[test]
fn exit_codes_tell_usage_from_errors() {
    let ws = Workspace::new();
    let _daemon = Daemon::start_in_home(&ws);

    assert_exit(2, ws.cli(".", &["no-such-command"]));
    assert_exit(2, ws.cli(".", &["turn", "start", "--no-such-flag"]));
    assert_exit(1, ws.cli(".", &["show", "99", "--session", "nobody"]));
    // A time that is no time is a usage error, said in the CLI's words.
    for args in [
        &["rollback", "--at", "yesterday"][..],
        &["rollback", "--ago", "yesterday"][..],
        &["show", "a.txt", "--at", "yesterday"][..],
    ] {
        let out = ws.cli(".", args);
        assert_exit(2, out.clone());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("\"yesterday\" is not"), "{args:?}: {stderr}");
        assert!(!stderr.contains("expected number"), "{args:?}: {stderr}");
    }

    // A refusal the user can act on says what to do next.
    ok(ws.cli(".", &["turn", "start", "--session", "s"]));
    ok(ws.cli(".", &["turn", "end", "--session", "s"]));
    for (args, says) in [
        (
            &["show", "9", "--session", "s"][..],
            "`filewatchd log --session NAME` their turns",
        ),
        (
            &["undo", "--session", "nobody"][..],
            "`filewatchd sessions` lists the sessions",
        ),
        (
            &["turn", "end", "--session", "s"][..],
            "`filewatchd turn start` opens one",
        ),
        (&["history", "never.txt"][..], "ignored paths are never recorded"),
    ] {
        let out = ws.cli(".", args);
        assert_exit(1, out.clone());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }

    let nowhere = tempfile::tempdir().unwrap();
    let out = ws
        .command()
        .current_dir(nowhere.path())
        .args(["status"])
        .output()
        .unwrap();
    assert_exit(1, out);
}

#[test]
fn a_dry_run_exits_3_when_the_same_command_would_be_refused() {
    let ws = Workspace::new();
    ws.write("a.txt", "before\n");
    let _daemon = Daemon::start_in_home(&ws);
    ok(ws.cli(".", &["turn", "start", "--session", "s"]));
    ws.write("a.txt", "the agent's\n");
    ok(ws.cli(".", &["turn", "end", "--session", "s"]));
    ws.write("a.txt", "the user's\n");

    let out = ws.cli(".", &["undo", "--dry-run"]);
    assert_exit(3, out.clone());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("without --dry-run this would be refused"),
        "{stdout}"
    );
    assert_exit(0, ws.cli(".", &["undo", "--dry-run", "--skip-conflicts"]));
    assert_eq!(ws.read("a.txt"), b"the user's\n");
}

#[test]
fn restoring_a_path_never_recorded_is_an_error_not_an_empty_plan() {
    let ws = Workspace::new();
    ws.write("a.txt", "before\n");
    let _daemon = Daemon::start_in_home(&ws);
    ok(ws.cli(".", &["turn", "start", "--session", "s"]));
    ws.write("a.txt", "after\n");
    ok(ws.cli(".", &["turn", "end", "--session", "s"]));

    let out = ws.cli(".", &["restore", "a.tx", "--before", "1"]);
    assert_exit(1, out.clone());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("'a.tx' was ever recorded"), "{stderr}");
    assert!(
        !stderr.contains("filewatchd sessions"),
        "a session hint on a path: {stderr}"
    );
    assert_eq!(ws.read("a.txt"), b"after\n");
    ok(ws.cli(".", &["restore", "a.txt", "--before", "1"]));
    assert_eq!(ws.read("a.txt"), b"before\n");
}

/// A restore and a revert say which path they are about, not "rollback of session": the
/// whole workspace is not what they roll back.
#[test]
fn a_restore_and_a_revert_are_headed_by_their_path() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let _daemon = Daemon::start_in_home(&ws);
    ok(ws.cli(".", &["turn", "start", "--session", "s"]));
    ws.write("a.txt", "two\n");
    ok(ws.cli(".", &["turn", "end", "--session", "s"]));
    let heads = [
        (
            &["restore", "a.txt", "--before", "1", "--dry-run"][..],
            "restore of a.txt (session s): back to before turn 1 (dry run: nothing changed)",
        ),
        (
            &["revert", "--turn", "1", "a.txt", "--dry-run"][..],
            "revert of a.txt (session s): back to",
        ),
        (
            &["undo", "--dry-run"][..],
            "undo of session s: back to before turn 1 (dry run: nothing changed)",
        ),
    ];
    for (args, head) in heads {
        let out = ok(ws.cli(".", args));
        let first = out.lines().next().unwrap_or_default().to_string();
        assert!(first.starts_with(head), "{args:?}: {out}");
    }
}

#[test]
fn text_output_quotes_odd_names_shows_link_targets_and_says_each_skip_once() {
    let ws = Workspace::new();
    ws.write("a.txt", "before\n");
    let _daemon = Daemon::start_in_home(&ws);
    ok(ws.cli(".", &["turn", "start", "--session", "s"]));
    ws.write("odd\nname.txt", "x\n");
    ws.sh("ln -s a.txt link");
    ws.write("a.txt", "the agent's\n");
    ok(ws.cli(".", &["turn", "end", "--session", "s"]));

    let shown = ok(ws.cli(".", &["show", "1"]));
    assert!(shown.contains(r#"A "odd\nname.txt"  (file, 2 B)"#), "{shown}");
    assert!(shown.contains("A link  (symlink to a.txt)"), "{shown}");

    ws.write("a.txt", "the user's\n");
    let undone = ok(ws.cli(".", &["undo", "--skip-conflicts"]));
    assert_eq!(undone.matches("  a.txt: ").count(), 1, "{undone}");
    assert!(undone.contains("delete      \"odd\\nname.txt\""), "{undone}");
    assert_eq!(ws.read("a.txt"), b"the user's\n");
}

#[test]
fn a_query_whose_reader_went_away_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let ws = Workspace::new();
    let _daemon = Daemon::start_in_home(&ws);
    let mut child = ws
        .command()
        .args(["status"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // as `filewatchd status | head -0` would
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // SIGPIPE (13) as any Unix tool; exit 0 only if it had written before the pipe closed.
    assert!(
        out.status.signal() == Some(13) || out.status.success(),
        "{:?}: {stderr}",
        out.status
    );
}

/// With `RUST_LOG=trace` the CLI printed the bearer token: the HTTP client's trace is a hex
/// dump of every byte it sends (`authorization: Bearer ...`, 16 characters a row). No log
/// level prints any 8 characters of the token in a row, whatever `RUST_LOG` asks for.
#[test]
fn no_log_level_prints_the_token() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let token = daemon.token.clone();
    for filter in ["trace", "ureq_proto=trace,ureq_proto::util=trace,ureq=trace"] {
        let out = cli_state_with_env(&ws, &["status"], &[("RUST_LOG", filter)]);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{log}");
        assert!(log.contains("TRACE"), "RUST_LOG={filter} logged nothing: {log}");
        let leaked = (0..=token.len() - 8).find(|&i| log.contains(&token[i..i + 8]));
        assert_eq!(leaked, None, "RUST_LOG={filter} printed the token:\n{log}");
    }
}
