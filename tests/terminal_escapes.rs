//! G14 on a terminal: text the daemon recorded (file names, labels, prompts, file lines) and
//! messages quoting it never reach a human's terminal raw. Every printing command is run on a
//! record full of escape sequences (OSC 0 sets the title, CSI 2J clears the screen, OSC 8
//! makes a link, C1 CSI, a bidi override) and none of it comes out as control bytes: each is
//! shown escaped (`\u{1b}`). `--json` stays JSON.

use std::process::Output;

use crate::common::*;

/// OSC 0 (title) ending in BEL, CSI 2J, an OSC 8 hyperlink, C1 CSI, and U+202E (no `/`, so
/// it can be a file name, and no `\`, so it can be typed as one).
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}]8;;mailto:x@evil.example\u{7}link\u{1b}]8;;\u{7}\u{9b}2J\u{202e}exe.txt";

/// The first raw character a terminal would act on, if any: C0 but tab and newline, DEL, C1,
/// and the bidi controls.
fn steering(bytes: &[u8]) -> Option<(usize, char)> {
    let text = String::from_utf8_lossy(bytes);
    text.char_indices().find(|&(_, c)| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

/// Fails when the command's stdout or stderr holds a raw control; when `shows` is set, the
/// hostile text must also be there, escaped (so the command did print it).
#[track_caller]
fn assert_clean(args: &[&str], out: &Output, shows: bool) {
    if let Some(wrong) = unclean(args, out, shows) {
        panic!("{wrong}");
    }
}

/// What `assert_clean` fails with, if anything.
fn unclean(args: &[&str], out: &Output, shows: bool) -> Option<String> {
    let said = format!(
        "filewatchd {args:?} (exit {:?}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).escape_debug(),
        String::from_utf8_lossy(&out.stderr).escape_debug()
    );
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if let Some((at, c)) = steering(bytes) {
            return Some(format!("raw {c:?} at byte {at} of {stream}: {said}"));
        }
    }
    let all = [&out.stdout[..], &out.stderr[..]].concat();
    let all = String::from_utf8_lossy(&all);
    let escaped = all.contains(r"\u{1b}]0;pwned\u{7}") && all.contains(r"\u{202e}");
    (shows && !escaped).then(|| format!("the hostile text is not shown (escaped): {said}"))
}

/// A record full of hostile text: a turn labelled with it that created a file named with it,
/// holding a line of it, and changed a plain file to hold one too.
fn hostile_record(ws: &Workspace, daemon: &Daemon) -> String {
    let name = format!("evil{HOSTILE}.sh");
    daemon.turn_start("s", &format!("label {HOSTILE}"));
    ws.write(&name, format!("line {HOSTILE}\n"));
    ws.write("plain.txt", format!("one\ntwo {HOSTILE}\n"));
    daemon.turn_end("s");
    name
}

#[test]
fn no_printing_command_lets_recorded_text_steer_the_terminal() {
    let ws = Workspace::new();
    ws.write("plain.txt", "one\n");
    let daemon = Daemon::start(&ws);
    let name = hostile_record(&ws, &daemon);
    let missing = format!("missing{HOSTILE}");
    let unknown_turn = format!("ref{HOSTILE}");
    let script = "printf x > \"$1\"";
    let made_by_exec = format!("exec{HOSTILE}");

    let printing: Vec<(Vec<&str>, bool)> = vec![
        (vec!["log"], true),
        (vec!["log", "--paths"], true),
        (vec!["log", "--paths", "--stat", "--all"], true),
        (vec!["show", "1"], true),
        (vec!["show", "1", "--diff"], true),
        (vec!["blame", "plain.txt"], true),
        (vec!["blame", &name], true),
        (vec!["history", &name], true),
        (vec!["sessions"], true),
        (vec!["status"], false),
        (vec!["undo", "--dry-run"], true),
        // Refusals whose messages quote what was typed or recorded.
        (vec!["show", &unknown_turn], true),
        (vec!["history", &missing], true),
        (vec!["restore", &missing, "--seq", "1"], true),
    ];
    let mut wrong: Vec<String> = printing
        .iter()
        .filter_map(|(args, shows)| unclean(args, &cli_state(&ws, args), *shows))
        .collect();
    // exec: its turn's label is the command line, its summary on stderr; then its listing.
    let state = ws.state_dir().to_string_lossy().into_owned();
    let exec = [
        "--state-dir",
        &state,
        "exec",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        &made_by_exec,
    ];
    let mut cmd = ws.command();
    cmd.args(exec).stdin(std::process::Stdio::null());
    let out = run_to_end(cmd);
    assert_eq!(
        out.status.code(),
        Some(0),
        "exec: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    wrong.extend(unclean(&exec, &out, false));
    let listing = ["log", "--paths", "--session", "exec"];
    wrong.extend(unclean(&listing, &cli_state(&ws, &listing), true));
    assert!(
        wrong.is_empty(),
        "{} commands:\n{}",
        wrong.len(),
        wrong.join("\n\n")
    );

    // A conflict refused: the file changed outside any turn, listed by its name.
    ws.write(&name, "changed by hand\n");
    daemon.turn_start("t", "barrier");
    daemon.turn_end("t");
    let refused = ["undo", "--session", "s"];
    let out = cli_state(&ws, &refused);
    assert_eq!(out.status.code(), Some(3), "the undo was not refused");
    assert_clean(&refused, &out, true);
}

/// On a terminal too (`script` gives the command a pty; `--color never` keeps our own colour
/// codes out): `show --at` escapes the file's bytes there, and leaves them exact when piped.
#[test]
fn file_content_is_escaped_on_a_terminal_and_exact_in_a_pipe() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", &format!("label {HOSTILE}"));
    ws.write("c.txt", format!("text {HOSTILE}\n"));
    daemon.turn_end("s");

    let piped = cli_state(&ws, &["show", "c.txt", "--at", "after:1"]);
    assert_eq!(piped.stdout, format!("text {HOSTILE}\n").into_bytes());

    let Ok(version) = std::process::Command::new("script").arg("--version").output() else {
        skip("needs script (util-linux) for a terminal");
        return;
    };
    assert!(version.status.success());
    let state = ws.state_dir().to_string_lossy().into_owned();
    for args in [
        vec!["show", "c.txt", "--at", "after:1"],
        vec!["log", "--no-pager"],
        vec!["show", "1", "--diff", "--no-pager"],
    ] {
        let line = format!(
            "'{BIN}' --color never --state-dir '{state}' {}",
            args.iter()
                .map(|a| format!("'{a}'"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let mut tty = std::process::Command::new("script");
        tty.args(["-qec", &line, "/dev/null"])
            .current_dir(ws.root())
            .stdin(std::process::Stdio::null());
        for (key, value) in ws.command().get_envs() {
            match value {
                Some(value) => tty.env(key, value),
                None => tty.env_remove(key),
            };
        }
        let mut out = run_to_end(tty);
        assert_eq!(out.status.code(), Some(0), "{args:?} on a terminal");
        // The terminal's own line ends (`onlcr`).
        out.stdout = String::from_utf8_lossy(&out.stdout)
            .replace("\r\n", "\n")
            .into_bytes();
        assert_clean(&args, &out, true);
    }
}
