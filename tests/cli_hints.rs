//! What the CLI tells a user to do next is a command that runs: every hint (a backquoted
//! `filewatchd ...` in an error) of a set of real failing commands is run, and clap takes it.
//! And what it prints lines up: `exec` counts renames as `R`, as `show` and `log` do, and
//! `history`'s columns stay in place past seq 100.

use std::process::Output;

use crate::common::*;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The commands an error names, backquoted, with their placeholders filled in.
fn hints(stderr: &str) -> Vec<String> {
    stderr
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.starts_with("filewatchd "))
        .map(|hint| {
            hint.split(' ')
                .map(|word| match word {
                    "NAME" | "S" => "s",
                    "N" => "1",
                    "PATH" => "a.txt",
                    other => other,
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Whether clap took the command line: not a usage error (exit 2).
fn taken_by_clap(out: &Output) -> bool {
    let stderr = text(&out.stderr);
    out.status.code() != Some(2)
        && !stderr.contains("unexpected argument")
        && !stderr.contains("unrecognized subcommand")
        && !stderr.contains("invalid value")
}

/// A workspace with session `s`: turn 1 added `a.txt` (one hunk), turn 2 changed it again
/// and added `c.txt`.
fn workspace() -> (Workspace, Daemon) {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s", "one");
    ws.write("a.txt", "one\n");
    daemon.turn_end("s");
    daemon.turn_start("s", "two");
    ws.write("a.txt", "one\ntwo\n");
    ws.write("c.txt", "c\n");
    daemon.turn_end("s");
    (ws, daemon)
}

/// Commands that fail, each with what its hint must say.
const FAILING: &[(&[&str], &str)] = &[
    (&["rollback", "--pin", "nosuch"], "`filewatchd pins`"),
    (
        &["revert", "--turn", "1", "a.txt", "--hunk", "9", "--session", "s"],
        "`filewatchd show 1 --session s --diff`",
    ),
    (
        &["revert", "--turn", "1", "c.txt", "--session", "s"],
        "`filewatchd show 1 --session s`",
    ),
    (
        &["revert", "--turn", "9", "a.txt", "--session", "s"],
        "`filewatchd sessions`",
    ),
    (
        &["review", "--turn", "9", "--session", "s"],
        "`filewatchd sessions`",
    ),
    (
        &["review", "--turn", "1", "c.txt", "--session", "s"],
        "`filewatchd show 1 --session s`",
    ),
    (&["show", "9", "--session", "s"], "`filewatchd sessions`"),
    (
        &["rollback", "--before", "9", "--session", "s"],
        "`filewatchd sessions`",
    ),
    (
        &["pin", "p", "--turn", "9", "--session", "s"],
        "`filewatchd sessions`",
    ),
    (&["unpin", "nosuch"], "`filewatchd pins`"),
    (&["turn", "end", "--session", "s"], "`filewatchd turn start`"),
    (&["restore", "a.txt", "--seq", "99999"], "`filewatchd history"),
    (&["log", "--session", "nobody"], "`filewatchd sessions`"),
];

#[test]
fn every_hint_of_a_failing_command_is_a_command_clap_takes() {
    let (ws, _daemon) = workspace();
    let mut all = Vec::new();
    for (args, says) in FAILING {
        let out = ws.cli(".", args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} did not fail: {stderr}");
        assert!(stderr.contains(says), "{args:?}: no {says} in: {stderr}");
        let found = hints(&stderr);
        assert!(!found.is_empty(), "{args:?}: no hint in: {stderr}");
        all.extend(found.into_iter().map(|hint| (args, hint)));
    }
    for (args, hint) in all {
        let words: Vec<&str> = hint.split(' ').skip(1).collect();
        let out = ws.cli(".", &words);
        assert!(
            taken_by_clap(&out),
            "the hint `{hint}` of {args:?} is not a command: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn exec_counts_renames_as_r_as_show_does() {
    let (ws, _daemon) = workspace();
    let out = ws.cli(".", &["exec", "--session", "s", "--", "mv", "a.txt", "b.txt"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(": +0 ~0 -0 R1, 1 path "), "{stderr}");
}

/// The column where each line's `n`th field (split on runs of spaces) starts.
fn column(line: &str, n: usize) -> Option<usize> {
    let mut field = 0;
    let mut in_space = true;
    for (at, c) in line.char_indices() {
        match (c == ' ', in_space) {
            (false, true) if field == n => return Some(at),
            (false, true) => {
                field += 1;
                in_space = false;
            }
            (true, false) => in_space = true,
            _ => {}
        }
    }
    None
}

#[test]
fn history_columns_line_up_past_seq_100() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s", "one");
    ws.write("a.txt", "one\n");
    daemon.turn_end("s");
    daemon.turn_start("s", "many");
    for n in 0..120 {
        ws.write(format!("many/f{n}.txt"), "x\n");
    }
    daemon.turn_end("s");
    // Outside any turn: another origin, a column of another width.
    ws.write("a.txt", "two\n");
    daemon.turn_start("s", "three");
    ws.write("a.txt", "three\n");
    daemon.turn_end("s");

    let out = ws.cli(".", &["history", "a.txt"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  #")).collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines.iter().any(|l| l.starts_with("  #1 ")), "{stdout}");
    assert!(lines.iter().any(|l| l.starts_with("  #12")), "{stdout}");
    // The time (field 1) and what the version is (`file ...`) start where they start above.
    let what = |line: &str| line.find(" file ").map(|at| at + 1);
    for line in &lines {
        assert_eq!(column(line, 1), column(lines[0], 1), "time shifted:\n{stdout}");
        assert_eq!(what(line), what(lines[0]), "columns shifted:\n{stdout}");
    }
}
