//! The plan reviewed is the plan applied, and every answer says what the disk now holds: a
//! dry run of `--ago` names the moment to apply exactly it, a restore makes the directory its
//! file needs, undo takes back the session's latest turn not yet undone, a partial undo is
//! said to be partial, and the CLI points a git user to the command meant.

mod common;

use common::*;

/// `rollback --ago` resolves against the clock: its dry run names the moment it planned, and
/// `--at` that moment applies that very plan after more writes and more time.
#[test]
fn a_dry_run_of_ago_names_the_moment_that_applies_exactly_its_plan() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");

    let text = cli_state_text(&ws, &["rollback", "--ago", "0s", "--dry-run"]);
    let at = text
        .split("give `--at ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("the dry run names no moment to apply:\n{text}"))
        .to_string();
    assert!(text.contains(&format!("recorded at {at}")), "{text}");
    time_mark(); // every write from here is recorded after `at`
    daemon.turn_start("s1", "t2");
    ws.write("a.txt", "a2\n");
    daemon.turn_end("s1");

    let applied = cli_state_text(&ws, &["rollback", "--at", &at]);
    assert!(applied.contains(&format!("recorded at {at}")), "{applied}");
    assert_eq!(ws.read("a.txt"), b"a1\n", "not the state the dry run planned");
}

/// A restore of a file whose directory is gone makes the directory again (exit 0, the file
/// there); it never says done for a file it skipped.
#[test]
fn a_restore_of_a_file_whose_directory_is_gone_makes_the_directory() {
    let ws = Workspace::new();
    ws.write("src/main.rs", "fn main() {}\n");
    ws.write("src/lib.rs", "pub fn lib() {}\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "remove src");
    ws.sh("rm -r src");
    daemon.turn_end("s1");

    let out = cli_state(&ws, &["restore", "src/main.rs", "--before", "1", "--force"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stdout.contains("[skipped]"), "{stdout}");
    assert_eq!(ws.read("src/main.rs"), b"fn main() {}\n");
    assert!(!ws.path("src/lib.rs").exists(), "the restore of one file brought back another");
}
