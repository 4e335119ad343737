//! `show --diff` of a turn whose diffs are past what one answer of the daemon may hold (the
//! client reads 10 MiB at most): the CLI reads them page by page and shows every one, and a
//! file whose diff alone is past the limit is said to be, not reported as "not JSON".

use crate::common::*;
use serde_json::Value;

/// Files of the turn, each with a diff of about 300 KiB: together past the 10 MiB limit.
const FILES: usize = 40;

/// `lines` numbered lines of text unique to file `n`.
fn text(n: usize, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("line {i} of file {n}, with some words to make it longer\n"))
        .collect()
}

/// A turn of `FILES` text files (diffs ~12 MiB in all) and one of 11 MiB, whose diff alone is
/// past the limit.
fn big_turn(ws: &Workspace, daemon: &Daemon) {
    daemon.turn_start("s", "many files");
    for n in 0..FILES {
        ws.write(format!("src/f{n:02}.txt"), text(n, 5_000));
    }
    ws.write("huge.txt", text(999, 190_000));
    daemon.turn_end("s");
}

#[test]
fn show_diff_of_a_turn_past_the_answer_limit_shows_every_diff() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    big_turn(&ws, &daemon);

    let out = cli_state(&ws, &["show", "1", "--session", "s", "--diff", "--no-pager"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("not JSON"), "{stderr}");
    for n in 0..FILES {
        assert!(
            stdout.contains(&format!("  A src/f{n:02}.txt  (file")),
            "no src/f{n:02}.txt"
        );
        // Its diff's last line: the whole diff was printed.
        assert!(
            stdout.contains(&format!("+line 4999 of file {n}, with")),
            "no whole diff of src/f{n:02}.txt"
        );
    }
    assert!(stdout.contains("  A huge.txt  (file"), "no huge.txt");
    assert!(
        stdout
            .contains("(diff too large for one answer: `filewatchd show --at before:1 --session s huge.txt`"),
        "huge.txt's diff not said to be too large"
    );
    assert!(!stdout.contains("of file 999"), "huge.txt's diff was printed");
    assert!(
        stdout.trim_end().ends_with(&format!("{} paths", FILES + 2)),
        "no totals at the end: {}",
        &stdout[stdout.len().saturating_sub(300)..]
    );
}

#[test]
fn show_diff_json_of_a_turn_past_the_answer_limit_is_the_whole_turn() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    big_turn(&ws, &daemon);

    let turn = cli_state_json(&ws, &["show", "1", "--session", "s", "--diff", "--json"]);
    let changes = turn["changes"].as_array().expect("changes");
    // The files, `src/` and `huge.txt`.
    assert_eq!(changes.len(), FILES + 2, "{:?}", turn["counts"]);
    assert_eq!(turn["counts"]["added"], FILES + 2);
    assert!(
        turn.get("changes_total").is_none(),
        "a page's field in the whole turn"
    );
    let of = |path: &str| -> &Value {
        changes
            .iter()
            .find(|c| c["path"] == path)
            .unwrap_or_else(|| panic!("no {path}"))
    };
    for n in 0..FILES {
        let diff = of(&format!("src/f{n:02}.txt"))["diff"]
            .as_str()
            .unwrap_or_default();
        assert!(diff.ends_with(&format!(
            "+line 4999 of file {n}, with some words to make it longer\n"
        )));
    }
    assert_eq!(of("huge.txt")["diff_omitted"], true);
    assert!(of("huge.txt")["diff"].is_null());

    // The same turn without diffs is one page, listed whole.
    let listed = cli_state_text(&ws, &["show", "1", "--session", "s", "--all"]);
    assert_eq!(listed.matches("  A src/f").count(), FILES, "{listed}");
}

/// A turn of 33,000 files with 240-byte names: every answer about all of them is past 10 MiB.
/// `turn end`, `log --paths`, `undo --dry-run` and `undo` each read theirs whole and say what
/// happened with exit 0; the undo removed every file (no exit 1 after work done).
#[test]
fn answers_about_tens_of_thousands_of_paths_are_read_whole() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", "generate");
    ws.sh("mkdir gen && cd gen && for i in $(seq 33000); do printf x > \"$(printf 'n%0236d' \"$i\")\"; done");
    let end = cli_state(&ws, &["turn", "end", "--session", "s"]);
    let said = String::from_utf8_lossy(&end.stdout);
    assert!(said.contains("33001 paths"), "{said}");
    for args in [
        &["log", "--paths", "--no-pager"][..],
        &["undo", "--dry-run"],
        &["undo"],
    ] {
        let out = cli_state(&ws, args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The dry run is grouped by top directory (its answer is read whole all the same).
        let grouped = stdout.contains("gen/  33001 paths: 33000 delete, 1 remove_dir");
        let listed = stdout.lines().count() > 33_000 || grouped;
        assert!(listed, "{args:?}: {} lines", stdout.lines().count());
    }
    let left = std::fs::read_dir(ws.path("gen")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "the undo left files");
}
