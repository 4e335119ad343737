//! `filewatchd exec -- CMD`: any command as one turn. Its writes are one turn
//! labelled with the command line, its exit code is passed through (127 when it cannot be
//! found, 128 + N when signal N kills it), its stdin and stdout are its own, the turn's summary
//! is one line on stderr, and the turn ends even when Ctrl-C or SIGTERM stops the command.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use crate::common::*;

/// `filewatchd --state-dir STATE exec ARGS...` in the root, stdin closed.
fn exec_cmd(ws: &Workspace, args: &[&str]) -> Command {
    let mut cmd = ws.command();
    cmd.arg("--state-dir")
        .arg(ws.state_dir())
        .arg("exec")
        .args(args)
        .stdin(Stdio::null());
    cmd
}

fn exec(ws: &Workspace, args: &[&str]) -> Output {
    run_to_end(exec_cmd(ws, args))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Each command that started is one ended turn (`sh -c 'exit 3'` that changed nothing too:
/// its turn says it ran); one that could not start (not found, not executable) opens none.
#[test]
fn exit_codes_pass_through_and_only_a_started_command_is_a_turn() {
    let ws = Workspace::new();
    ws.write("data.txt", "not a program\n");
    let daemon = Daemon::start(&ws);
    // The label of the turn, when the command opens one.
    let cases: [(&[&str], i32, Option<&str>); 6] = [
        (&["sh", "-c", "exit 0"], 0, Some("sh -c 'exit 0'")),
        (&["sh", "-c", "exit 3"], 3, Some("sh -c 'exit 3'")),
        (&["no-such-command-fwd"], 127, None),
        (&["./data.txt"], 126, None),
        (&["./no-such-file-fwd"], 127, None),
        (
            &["sh", "-c", "kill -TERM $$"],
            128 + 15,
            Some("sh -c 'kill -TERM $$'"),
        ),
    ];
    for (args, code, _) in cases {
        let out = exec(&ws, args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: stderr:\n{}",
            text(&out.stderr)
        );
    }
    let missing = exec(&ws, &["no-such-command-fwd"]);
    assert_eq!(
        text(&missing.stderr),
        "filewatchd exec: no-such-command-fwd: command not found\n"
    );

    let turns = daemon.turn_list("exec");
    let labels: Vec<&str> = turns.iter().filter_map(|t| t["label"].as_str()).collect();
    let expected: Vec<&str> = cases.iter().filter_map(|(_, _, label)| *label).collect();
    assert_eq!(labels, expected);
    for t in &turns {
        assert!(t["ended_at"].is_string(), "a turn was left open: {t:#}");
    }
}

#[test]
fn the_commands_writes_are_its_turn_and_its_stdin_and_stdout_are_untouched() {
    let ws = Workspace::new();
    ws.write("old.txt", "old\n");
    let daemon = Daemon::start(&ws);
    let script = r#"cat; echo a > a.txt; echo b > "b c.txt"; rm old.txt; printf 'to stderr\n' >&2"#;
    let input = tempfile::tempfile().unwrap();
    {
        use std::io::{Seek, Write};
        let mut input = input.try_clone().unwrap();
        input.write_all(b"from stdin\n").unwrap();
        input.rewind().unwrap();
    }
    let mut cmd = exec_cmd(&ws, &["--session", "job", "--", "sh", "-c", script]);
    cmd.stdin(input);
    let out = run_to_end(cmd);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", text(&out.stderr));
    assert_eq!(out.stdout, b"from stdin\n", "stdout is the command's alone");
    assert_eq!(
        text(&out.stderr),
        "to stderr\nfilewatchd: turn 1 of job: +2 ~0 -1, 3 paths (undo: filewatchd undo --session job)\n"
    );

    let turn = daemon.turn("job", 1, false);
    assert_eq!(
        turn["label"],
        format!("sh -c '{}'", script.replace('\'', "'\\''"))
    );
    assert_eq!(changed_paths(&turn), set(["a.txt", "b c.txt", "old.txt"]));
    rollback_applied(daemon.undo("job", serde_json::json!({})));
    assert_eq!(ws.read("old.txt"), b"old\n");
    assert!(!ws.path("a.txt").exists(), "the undo of the exec turn left a.txt");
}

#[test]
fn the_session_is_the_flag_the_environment_or_exec_and_the_label_may_be_given() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let out = exec(&ws, &["--label", "build it", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut cmd = exec_cmd(&ws, &["--", "true"]);
    cmd.env("FILEWATCHD_SESSION", "from-env");
    assert_eq!(run_to_end(cmd).status.code(), Some(0));
    let mut cmd = exec_cmd(&ws, &["--", "true"]);
    cmd.env("FILEWATCHD_SESSION", "");
    assert_eq!(
        run_to_end(cmd).status.code(),
        Some(0),
        "an empty variable counts as unset"
    );
    assert_eq!(daemon.turn_list("exec")[0]["label"], "build it");
    assert_eq!(daemon.turn_list("exec").len(), 2);
    assert_eq!(daemon.turn_list("from-env").len(), 1);
    let bad = exec(&ws, &["--session", "no spaces", "--", "true"]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
}

#[test]
fn without_a_daemon_the_command_is_not_run_unless_unrecorded_is_ok() {
    let ws = Workspace::new();
    let refused = ws.cli(".", &["exec", "--", "sh", "-c", "touch ran.txt"]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the command was not run"), "{stderr}");
    assert!(stderr.contains("no filewatchd is running"), "{stderr}");
    assert!(!ws.path("ran.txt").exists(), "the command ran without its turn");

    let ran = ws.cli(
        ".",
        &[
            "exec",
            "--unrecorded-ok",
            "--",
            "sh",
            "-c",
            "touch ran.txt; exit 4",
        ],
    );
    let stderr = text(&ran.stderr);
    assert_eq!(ran.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("unrecorded"), "{stderr}");
    assert!(
        ws.path("ran.txt").exists(),
        "--unrecorded-ok did not run the command"
    );
}

/// Starts `exec -- sh -c "echo > started.txt; exec sleep 600"` and waits until the command
/// is `sleep` (its file is there and the shell has exec'd), so the signal always finds the
/// same program. (CI once saw exec not end within 60 s of a Ctrl-C, cause unknown: `wait`
/// now says whether the command or exec itself was still running.)
fn start_sleeper(ws: &Workspace, own_group: bool) -> Child {
    let mut cmd = exec_cmd(
        ws,
        &["--", "sh", "-c", "echo started > started.txt; exec sleep 600"],
    );
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    if own_group {
        cmd.process_group(0);
    }
    let child = cmd.spawn().unwrap();
    let started = poll_until(Duration::from_secs(30), || {
        (ws.path("started.txt").exists() && child_is(child.id(), "sleep")).then_some(())
    });
    assert!(started.is_some(), "the command never started");
    child
}

/// Whether a child of `parent` runs the program `comm` (by /proc/PID/stat).
fn child_is(parent: u32, comm: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
        // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so split at the
        // last ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            return false;
        };
        let named = head.split_once(" (").is_some_and(|(_, name)| name == comm);
        let ppid = tail.split_whitespace().nth(1).and_then(|v| v.parse::<u32>().ok());
        named && ppid == Some(parent)
    })
}

fn wait(child: &mut Child) -> ExitStatus {
    poll_until(Duration::from_secs(60), || child.try_wait().unwrap()).unwrap_or_else(|| {
        let command = ["sh", "sleep"]
            .into_iter()
            .find(|comm| child_is(child.id(), comm));
        child.kill().ok();
        match command {
            Some(comm) => panic!("the signal did not stop the command: {comm} still runs"),
            None => panic!("exec did not end after its command was stopped"),
        }
    })
}

fn kill(signal: &str, target: &str) {
    let sent = Command::new("kill")
        .args([signal, "--", target])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {target}");
}

/// Ctrl-C: the terminal sends SIGINT to the whole foreground process group.
#[test]
fn ctrl_c_stops_the_command_and_its_turn_still_ends() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let mut child = start_sleeper(&ws, true);
    kill("-INT", &format!("-{}", child.id()));
    assert_eq!(wait(&mut child).code(), Some(128 + 2));
    let turn = daemon.turn("exec", 1, false);
    assert!(turn["ended_at"].is_string(), "the turn was left open: {turn:#}");
    assert_eq!(changed_paths(&turn), set(["started.txt"]));
}

/// SIGTERM to exec alone (an agent's timeout) is passed on to the command.
#[test]
fn sigterm_to_exec_reaches_the_command_and_its_turn_still_ends() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let mut child = start_sleeper(&ws, false);
    kill("-TERM", &child.id().to_string());
    assert_eq!(wait(&mut child).code(), Some(128 + 15));
    let turn = daemon.turn("exec", 1, false);
    assert!(turn["ended_at"].is_string(), "the turn was left open: {turn:#}");
}
