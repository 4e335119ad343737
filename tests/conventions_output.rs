//! CLI conventions: colour only where it is wanted (`--color`, `NO_COLOR`, a terminal or
//! not), sizes in human units and counts with the right plural in text output, `--json`
//! unchanged.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use filewatchd::cli::style;
use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(120);
const SGR: &str = "\x1b[";

/// Runs `cmd` to completion with `stdout` as its stdout, reading `output` once it has exited.
fn run_into(mut cmd: Command, stdout: OwnedFd, mut output: impl Read + Send + 'static) -> String {
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    // The command holds the other end until dropped: the reader must see it closed.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        // A terminal's reading end says EIO, not end of file, once the last writer is gone.
        while let Ok(n @ 1..) = output.read(&mut buf) {
            bytes.extend_from_slice(&buf[..n]);
        }
        bytes
    });
    if poll_until(DEADLINE, || child.try_wait().unwrap()).is_none() {
        child.kill().ok();
        panic!("filewatchd still running after {DEADLINE:?}");
    }
    String::from_utf8_lossy(&reader.join().unwrap()).into_owned()
}

/// `filewatchd ARGS` with `env`, its stdout a terminal (a pseudo-terminal this test reads).
fn on_terminal(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> String {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two new descriptors into the two ints; the null pointers ask for
    // no name, default terminal settings and no window size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    let (master, slave) = unsafe { (std::fs::File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut cmd = ws.command();
    cmd.args(args).env_remove("NO_COLOR").envs(env.iter().copied());
    run_into(cmd, slave, master)
}

/// `filewatchd ARGS` with `env`, its stdout a pipe.
fn into_pipe(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> String {
    let (reader, writer) = std::io::pipe().unwrap();
    let mut cmd = ws.command();
    cmd.args(args).env_remove("NO_COLOR").envs(env.iter().copied());
    run_into(cmd, writer.into(), reader)
}

/// A workspace whose turn 1 of session `s` changed `a.txt` from "one" to "two".
fn one_turn_with_a_diff() -> (Workspace, Daemon) {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s", "edit");
    ws.write("a.txt", "two\n");
    daemon.turn_end("s");
    (ws, daemon)
}

#[test]
fn diffs_are_coloured_as_color_and_no_color_say() {
    let (ws, _daemon) = one_turn_with_a_diff();
    let show = ["show", "1", "--session", "s", "--diff"];
    let with = |extra: &[&'static str]| -> Vec<&str> { show.iter().chain(extra).copied().collect() };
    let added = format!("{SGR}32m+two");

    // `auto` colours a terminal: so the cases below that do not colour one can fail.
    let auto_terminal = on_terminal(&ws, &show, &[]);
    assert!(auto_terminal.contains(&added), "{auto_terminal:?}");
    let always_pipe = into_pipe(&ws, &with(&["--color", "always"]), &[]);
    assert!(always_pipe.contains(&added), "{always_pipe:?}");
    assert!(always_pipe.contains(&format!("{SGR}31m-one")), "{always_pipe:?}");
    // An explicit `always` wins over NO_COLOR, as no-color.org asks.
    let always_no_color = into_pipe(&ws, &with(&["--color", "always"]), &[("NO_COLOR", "1")]);
    assert!(always_no_color.contains(&added), "{always_no_color:?}");

    let plain = [
        (
            "never, on a terminal",
            on_terminal(&ws, &with(&["--color", "never"]), &[]),
        ),
        (
            "NO_COLOR=1, on a terminal",
            on_terminal(&ws, &show, &[("NO_COLOR", "1")]),
        ),
        (
            "auto, into a pipe",
            into_pipe(&ws, &with(&["--color", "auto"]), &[]),
        ),
        ("the default, into a pipe", into_pipe(&ws, &show, &[])),
    ];
    for (case, out) in plain {
        assert!(out.contains("+two"), "{case}: no diff: {out:?}");
        assert!(!out.contains(SGR), "{case}: coloured: {out:?}");
    }
}

#[test]
fn every_diff_the_cli_prints_follows_color() {
    let (ws, _daemon) = one_turn_with_a_diff();
    let undo = [
        "undo",
        "--session",
        "s",
        "--dry-run",
        "--diff",
        "--color",
        "always",
    ];
    let out = into_pipe(&ws, &undo, &[]);
    assert!(out.contains(&format!("{SGR}32m+one")), "{out:?}");
    let home = tempfile::tempdir().unwrap();
    let home = home.path().to_str().unwrap();
    let install = ["hook", "install", "opencode", "--dry-run", "--color"];
    let coloured = into_pipe(&ws, &[&install[..], &["always"]].concat(), &[("HOME", home)]);
    assert!(coloured.contains(&format!("{SGR}32m+")), "{coloured:?}");
    let plain = on_terminal(&ws, &[&install[..], &["never"]].concat(), &[("HOME", home)]);
    assert!(plain.contains("+++ after") && !plain.contains(SGR), "{plain:?}");
}

/// Text a count with the wrong plural ("1 paths") would give.
#[track_caller]
fn assert_plurals_right(text: &str) {
    let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).collect();
    let nouns = [
        "paths",
        "versions",
        "blobs",
        "turns",
        "dirs",
        "rescans",
        "overflows",
        "runs",
        "writes",
        "changes",
    ];
    for pair in words.windows(2) {
        assert!(
            !(pair[0] == "1" && nouns.contains(&pair[1])),
            "\"1 {}\" in:\n{text}",
            pair[1]
        );
    }
}

fn turn(ws: &Workspace, daemon: &Daemon, seed: u64) {
    daemon.turn_start("s", &format!("turn {seed}"));
    ws.write("a.txt", noise(seed, 3000));
    daemon.turn_end("s");
}

fn text(ws: &Workspace, args: &[&str]) -> String {
    let out = ws.cli(".", args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_plurals_right(&text);
    text
}

fn json(ws: &Workspace, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&text(ws, &args)).unwrap()
}

/// Sizes in `status`, `history`, `show` and `gc` are human units (the JSON keeps the bytes);
/// "1 turn", "1 version", "1 blob", "1 turn expires" read right.
#[test]
fn sizes_are_human_and_counts_singular_when_one() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "keep_turns = 1\nkeep_days = 0\n");
    let daemon = Daemon::start_in_home(&ws);
    turn(&ws, &daemon, 1);
    let sessions = text(&ws, &["sessions"]);
    assert!(sessions.starts_with("s  -  1 turn  last active"), "{sessions}");
    assert!(text(&ws, &["show", "1"]).contains("  A a.txt  (file, 2.9 KiB)"));
    let history = text(&ws, &["history", "a.txt"]);
    assert!(history.contains(" file 2.9 KiB "), "{history}");
    assert_eq!(json(&ws, &["history", "a.txt"])["versions"][0]["size"], 3000);

    let status = json(&ws, &["status"]);
    let store = format!(
        "store:         {} of content, index {}, latest seq {}",
        style::size(status["store_bytes"].as_u64().unwrap()),
        style::size(status["index_bytes"].as_u64().unwrap()),
        status["latest_seq"]
    );
    assert!(text(&ws, &["status"]).contains(&store), "no line {store:?}");

    turn(&ws, &daemon, 2);
    let gc = text(&ws, &["gc", "--dry-run"]);
    assert!(gc.contains("; 1 turn expires ("), "{gc}");
    assert!(text(&ws, &["sessions"]).starts_with("s  -  2 turns  last active"));

    turn(&ws, &daemon, 3);
    let gc = text(&ws, &["gc", "--dry-run"]);
    assert!(
        gc.starts_with("would remove 1 version and 1 blob (2.9 KiB); 2 turns expire ("),
        "{gc}"
    );
    let report = json(&ws, &["gc", "--dry-run"]);
    assert_eq!(report["bytes_freed"], 3000);
    let store = format!(
        "store: {} before, {} after",
        style::size(report["store_bytes_before"].as_u64().unwrap()),
        style::size(report["store_bytes_after"].as_u64().unwrap())
    );
    assert!(gc.contains(&store), "no line {store:?} in:\n{gc}");
    for args in [&["verify"][..], &["log"], &["status"]] {
        text(&ws, args);
    }
}

/// A collection that removes versions but no blob says why no space is freed: their content is
/// also in versions it keeps.
#[test]
fn a_gc_that_frees_nothing_says_why() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "keep_turns = 1\nkeep_days = 0\n");
    let daemon = Daemon::start_in_home(&ws);
    for seed in [1, 2, 1] {
        turn(&ws, &daemon, seed);
    }
    let report = json(&ws, &["gc", "--dry-run"]);
    assert!(report["versions_removed"].as_u64() > Some(0), "{report:#}");
    assert_eq!(report["blobs_removed"], 0, "{report:#}");
    let why = "no space would be freed: kept versions have the same content (each content is stored once)";
    let gc = text(&ws, &["gc", "--dry-run"]);
    assert!(gc.lines().any(|l| l == why), "{gc}");
    let gc = text(&ws, &["gc"]);
    assert!(gc.lines().any(|l| l == why.replace("would be", "was")), "{gc}");
    // A collection that frees a blob says nothing of the kind.
    turn(&ws, &daemon, 3);
    let gc = text(&ws, &["gc"]);
    assert!(gc.contains("1 blob") && !gc.contains("no space"), "{gc}");
}
