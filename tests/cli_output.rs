//! What the commands print: every command ends quietly when its stdout is a closed pipe
//! (`filewatchd ... | head -1`), and a hook's warning reads right.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Output, Stdio};

use crate::common::*;

/// Runs `filewatchd ARGS` in the root, `stdin` on its stdin, with stdout a pipe whose reading
/// end is already closed (what `| head -1` leaves once it has its line).
fn with_closed_stdout(ws: &Workspace, home: &std::path::Path, args: &[&str], stdin: &str) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = ws.command();
    cmd.env("HOME", home)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// The subcommands `filewatchd --help` lists.
fn listed_commands(ws: &Workspace) -> BTreeSet<String> {
    let help = ws.cli(".", &["--help"]);
    let text = String::from_utf8_lossy(&help.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Each command, its stdout closed, ends with exit 0 or SIGPIPE, never a panic
/// ("failed printing to stdout"). `serve` is the one left out: it prints nothing on stdout and
/// runs until stopped.
#[test]
fn every_command_ends_quietly_on_a_closed_stdout() {
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let _daemon = Daemon::start_in_home(&ws);
    let ok = |out: Output| assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A second workspace with state and no daemon, for stop, restart and forget.
    let other = tempfile::tempdir().unwrap();
    let _reaper = ws.reaper();
    let other = other.path().to_str().unwrap();
    ok(ws.cli(".", &["start", "--root", other]));
    ok(ws.cli(".", &["stop", "--root", other]));
    ok(ws.cli(".", &["turn", "start", "--session", "s", "--label", "one"]));
    ws.write("a.txt", "one\n");
    ok(ws.cli(".", &["turn", "end", "--session", "s"]));

    let stop = format!(
        "{{\"hook_event_name\":\"Stop\",\"session_id\":\"c\",\"cwd\":{:?}}}",
        ws.root().display().to_string()
    );
    let cases: &[(&[&str], &str)] = &[
        (&["status"], ""),
        (&["status", "--json"], ""),
        (&["turn", "start", "--session", "t", "--label", "x"], ""),
        (&["turn", "end", "--session", "t"], ""),
        (&["log"], ""),
        (&["show", "1", "--session", "s", "--diff"], ""),
        (&["diff", "--from", "before:1", "--session", "s"], ""),
        (&["history", "a.txt"], ""),
        (&["blame", "a.txt"], ""),
        (&["review", "--turn", "1", "--session", "s"], ""),
        (
            &["revert", "--turn", "1", "a.txt", "--session", "s", "--dry-run"],
            "",
        ),
        (&["sessions"], ""),
        (&["fork", "f", "--session", "s", "--turn", "1"], ""),
        (&["rollback", "--before", "1", "--session", "s", "--dry-run"], ""),
        (
            &["restore", "a.txt", "--before", "1", "--session", "s", "--dry-run"],
            "",
        ),
        (&["undo", "--session", "s"], ""),
        (&["redo", "--session", "s"], ""),
        (&["gc", "--dry-run"], ""),
        (&["verify"], ""),
        (&["pin", "p"], ""),
        (&["pins"], ""),
        (&["unpin", "p"], ""),
        (&["exec", "--", "true"], ""),
        (&["purge", "a.txt", "--yes"], ""),
        (&["doctor"], ""),
        (&["ui", "--print-url"], ""),
        (&["hook", "install", "opencode", "--dry-run"], ""),
        (&["hook", "install", "claude-code"], ""),
        (&["hook", "uninstall", "claude-code"], ""),
        (&["hook", "claude-code"], &stop),
        // The MCP client closes stdin before it initializes: nothing to serve.
        (&["mcp"], ""),
        (&["completions", "bash"], ""),
        (&["man"], ""),
        (&["start"], ""),
        (&["stop", "--root", other], ""),
        (&["restart", "--root", other], ""),
        // The daemon the restart started, stopped through its API: "stopped: pid ...".
        (&["stop", "--root", other], ""),
        (&["projects"], ""),
        (&["projects", "--json"], ""),
        (&["forget", other, "--yes"], ""),
        (&["--help"], ""),
        (&["--version"], ""),
    ];
    for (args, stdin) in cases {
        let out = with_closed_stdout(&ws, home.path(), args, stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "{args:?} ended with {:?}: {stderr}",
            out.status
        );
    }
    let covered: BTreeSet<String> = cases.iter().map(|(args, _)| args[0].to_string()).collect();
    for command in listed_commands(&ws) {
        assert!(
            covered.contains(&command) || command == "serve" || command == "help",
            "`{command}` is not covered by this test"
        );
    }
}

/// An opencode event without a session id says so in plain words.
#[test]
fn a_hook_payload_without_a_session_id_says_so() {
    let ws = Workspace::new();
    let mut cmd = ws.command();
    cmd.args(["hook", "opencode"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(br#"{"event":{"type":"session.idle","properties":{}}}"#)
        .unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no session id"), "{stderr}");
    assert!(!stderr.contains("has no the"), "{stderr}");
}
