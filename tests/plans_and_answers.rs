//! The plan reviewed is the plan applied, and every answer says what the disk now holds: a
//! dry run of `--ago` names the moment to apply exactly it, a restore makes the directory its
//! file needs, undo takes back the session's latest turn not yet undone, a partial undo is
//! said to be partial, and the CLI points a git user to the command meant.

use crate::common::*;

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
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("[skipped]"), "{stdout}");
    assert_eq!(ws.read("src/main.rs"), b"fn main() {}\n");
    assert!(
        !ws.path("src/lib.rs").exists(),
        "the restore of one file brought back another"
    );

    // A path absent at the boundary needs no directory: none is made for it.
    daemon.turn_start("s1", "make gen");
    ws.write("gen/tmp.rs", "tmp\n");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "remove gen");
    ws.sh("rm -r gen");
    daemon.turn_end("s1");
    cli_state_ok(
        &ws,
        &["restore", "gen/tmp.rs", "--before", "2", "--session", "s1"],
    );
    assert!(
        !ws.path("gen").exists(),
        "an empty directory was made for nothing"
    );
}

/// A restore between undos leaves the session where it was: after undoing turn 3 and restoring
/// one file to before turn 2, `undo` takes back turn 2 (not turns 1 and 2 of another file).
#[test]
fn undo_after_a_restore_takes_back_the_latest_turn_not_yet_undone() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    for (n, script) in [
        (1, "echo b1 > b.txt"),
        (2, "echo a2 > a.txt && echo b2 > b.txt"),
        (3, "echo c3 > c.txt"),
    ] {
        daemon.turn_start("s1", &format!("turn {n}"));
        ws.sh(script);
        daemon.turn_end("s1");
    }
    cli_state_ok(&ws, &["undo", "--session", "s1"]);
    cli_state_ok(&ws, &["restore", "a.txt", "--before", "2", "--session", "s1"]);
    let plan = cli_state_text(&ws, &["undo", "--session", "s1", "--dry-run"]);
    assert!(plan.contains("back to before turn 2"), "{plan}");
    cli_state_ok(&ws, &["undo", "--session", "s1"]);
    assert_eq!(ws.read("b.txt"), b"b1\n", "turn 1's file was taken back too");
    let log = cli_state_text(&ws, &["log", "--session", "s1", "--no-pager"]);
    let undone = log
        .lines()
        .filter(|l| l.contains("turn ") && l.contains("(undone)"))
        .count();
    assert_eq!(undone, 2, "{log}");
}

/// A time rollback and its redo leave the session's files as its turns made them: a plain
/// `redo` right after `rollback --at` redoes that rollback, and a later undo of the session
/// finds no conflict in what the pair wrote.
#[test]
fn a_time_rollback_and_its_redo_are_nobodys_change() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");
    let t = time_mark();
    daemon.turn_start("s1", "t2");
    ws.write("a.txt", "a2\n");
    daemon.turn_end("s1");

    cli_state_ok(&ws, &["rollback", "--at", &t]);
    assert_eq!(ws.read("a.txt"), b"a1\n");
    let redone = cli_state_text(&ws, &["redo"]);
    assert!(redone.contains("the latest time rollback"), "{redone}");
    assert_eq!(ws.read("a.txt"), b"a2\n");

    let out = cli_state(&ws, &["undo", "--session", "s1"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(!said.contains("conflict"), "{said}");
    assert_eq!(ws.read("a.txt"), b"a1\n");
}

/// An undo that skipped a conflicting path leaves its turn partly undone, and the listing
/// says so and names the path kept, rather than `(undone)`.
#[test]
fn a_partial_undo_is_shown_as_partial_with_the_paths_kept() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edit two");
    ws.write("a.txt", "agent\n");
    ws.write("Cargo.toml", "agent\n");
    daemon.turn_end("s1");
    ws.write("Cargo.toml", "mine\n"); // someone else's change since: a conflict

    let out = cli_state(&ws, &["undo", "--session", "s1", "--skip-conflicts"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let log = cli_state_text(&ws, &["log", "--session", "s1", "--no-pager"]);
    let turn = log.lines().find(|l| l.contains("  turn 1  ")).unwrap_or_default();
    assert!(turn.contains("(partly undone: Cargo.toml kept)"), "{log}");
    let json = cli_state_json(&ws, &["log", "--session", "s1", "--json"]);
    let entry = json["entries"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["kind"] == "turn"))
        .cloned();
    assert_eq!(
        entry.map(|e| e["kept"].clone()),
        Some(serde_json::json!(["Cargo.toml"]))
    );
}

/// One definition per figure: `status` counts the tracked files, directories and symlinks the
/// first index found, names the content and the index apart, and a run of writes outside any
/// turn says how many of the paths it wrote are back as they were.
#[test]
fn the_figures_agree_with_each_other() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    ws.write("src/b.rs", "b\n");
    ws.write("src/deep/c.rs", "c\n");
    ws.sh("ln -s a.txt link");
    let daemon = Daemon::start(&ws);
    let status = cli_state_text(&ws, &["status"]);
    assert!(
        status.contains("tracked:       3 files, 2 directories, 1 symlink"),
        "{status}"
    );
    assert!(status.contains(" of content, index "), "{status}");
    let log = cli_state_text(&ws, &["log", "--all", "--no-pager"]);
    assert!(
        log.contains("6 paths +6"),
        "the first index counts what status counts: {log}"
    );

    ws.write("a.txt", "changed\n");
    let seen = poll_until(std::time::Duration::from_secs(30), || {
        let versions = daemon.history("a.txt")["versions"].as_array().map_or(0, Vec::len);
        (versions == 2).then_some(())
    });
    assert!(seen.is_some(), "the edit of a.txt was never recorded");
    ws.write("src/b.rs", "changed\n");
    ws.write("a.txt", "a\n");
    daemon.turn_start("s1", "after the edits"); // the barrier: the run is recorded
    let log = cli_state_text(&ws, &["log", "--all", "--no-pager"]);
    let run = log.lines().find(|l| l.contains("outside")).unwrap_or_default();
    assert!(run.contains("2 paths (1 back as it was) +0 ~1 -0"), "{log}");
}

/// What a git or jj user reaches for: `show PATH` points to `history`, `show N PATH` narrows a
/// turn, `log -- PATH` keeps the entries that changed it, `diff --from --to [PATH]` compares two
/// points, a dry run of many paths is grouped, blame numbers its lines, and `filewatchd` alone
/// prints its usage instead of starting a daemon.
#[test]
fn the_commands_a_git_user_reaches_for() {
    let ws = Workspace::new();
    ws.write("README.md", "hello\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "one");
    ws.write("README.md", "hello\nworld\n");
    ws.sh("mkdir gen && for i in $(seq 30); do echo $i > gen/f$i.txt; done");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "two");
    ws.write("other.txt", "other\n");
    daemon.turn_end("s1");

    let out = ws.cli(
        ".",
        &[
            "show",
            "README.md",
            "--state-dir",
            &ws.state_dir().to_string_lossy(),
        ],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("filewatchd history README.md"),
        "{said}"
    );

    let narrowed = cli_state_text(
        &ws,
        &[
            "show",
            "1",
            "README.md",
            "--session",
            "s1",
            "--diff",
            "--no-pager",
        ],
    );
    assert!(
        narrowed.contains("+world") && !narrowed.contains("gen/"),
        "{narrowed}"
    );
    assert!(narrowed.contains("1 path at or beneath README.md"), "{narrowed}");
    let untouched = cli_state_text(&ws, &["show", "2", "README.md", "--session", "s1", "--no-pager"]);
    assert!(
        untouched.contains("turn 2 changed nothing at or beneath README.md"),
        "{untouched}"
    );

    let state = ws.state_dir().to_string_lossy().into_owned();
    let out = ws.cli(
        ".",
        &[
            "log",
            "--session",
            "s1",
            "--no-pager",
            "--state-dir",
            &state,
            "--",
            "other.txt",
        ],
    );
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("turn 2") && !log.contains("turn 1"), "{log}");
    assert!(log.contains("other.txt") && !log.contains("README.md"), "{log}");

    let diff = cli_state_text(
        &ws,
        &[
            "diff",
            "--from",
            "before:1",
            "--to",
            "after:2",
            "README.md",
            "--session",
            "s1",
            "--no-pager",
        ],
    );
    assert!(diff.contains("+world") && !diff.contains("other.txt"), "{diff}");
    let whole = cli_state_text(
        &ws,
        &[
            "diff",
            "--from",
            "after:1",
            "--session",
            "s1",
            "--stat",
            "--no-pager",
        ],
    );
    assert!(
        whole.contains("A other.txt") && !whole.contains("README.md"),
        "{whole}"
    );

    let plan = cli_state_text(&ws, &["undo", "--session", "s1", "--dry-run"]);
    assert!(plan.contains("other.txt"), "{plan}");
    cli_state_ok(&ws, &["undo", "--session", "s1"]);
    let plan = cli_state_text(&ws, &["undo", "--session", "s1", "--dry-run"]);
    assert!(
        plan.contains("gen/  31 paths: 30 delete, 1 remove_dir"),
        "not grouped:\n{plan}"
    );
    assert!(plan.lines().count() < 10, "{plan}");

    let blame = cli_state_text(&ws, &["blame", "README.md"]);
    let numbers: Vec<&str> = blame
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(numbers, ["1", "2"], "{blame}");
    assert!(
        blame.lines().all(|l| l.contains(" #")),
        "each line names its version as #seq: {blame}"
    );

    let bare = ws.command().current_dir(ws.root()).output().expect("filewatchd");
    assert_eq!(bare.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bare.stdout).contains("Usage: filewatchd"));
}

/// A path a rollback could not do (a symlink now stands where its directory was) makes the
/// command exit 1, after it did the rest and said which: never 0 for work not done.
#[test]
fn a_path_skipped_for_a_symlink_in_the_way_is_not_done_and_exits_1() {
    let ws = Workspace::new();
    ws.write("d/f.txt", "f\n");
    ws.write("g.txt", "g\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "replace d");
    ws.sh("rm -r d && rm g.txt && ln -s /tmp d");
    daemon.turn_end("s1");

    let out = cli_state(
        &ws,
        &[
            "restore",
            "d/f.txt",
            "--before",
            "1",
            "--session",
            "s1",
            "--force",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("[skipped]"), "{stdout}");
    assert!(
        !stdout.contains("temp files left"),
        "no temp file was made: {stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not all done"));
    assert!(
        !std::path::Path::new("/tmp/f.txt").exists()
            || std::fs::read("/tmp/f.txt").ok() != Some(b"f\n".to_vec())
    );
}

/// A rollback splits the runs of writes outside any turn: each run stands at its own place and
/// time in the timeline, not merged with a later one across the rollback.
#[test]
fn a_rollback_splits_the_writes_outside_turns_into_their_own_runs() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "one");
    ws.write("a.txt", "agent\n");
    daemon.turn_end("s1");
    ws.write("mine.txt", "before the undo\n");
    cli_state_ok(&ws, &["undo", "--session", "s1", "--skip-conflicts"]);
    ws.write("later.txt", "after the undo\n");
    daemon.turn_start("s1", "two"); // the barrier: the last run is recorded
    let log = cli_state_text(&ws, &["log", "--all", "--paths", "--no-pager"]);
    let lines: Vec<&str> = log.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or(usize::MAX)
    };
    let (later, undo, mine) = (at("A later.txt"), at("undo #1"), at("A mine.txt"));
    assert!(
        later < undo && undo < mine,
        "each run at its own place (newest first):\n{log}"
    );
}

/// A person's edit made while the turn of an agent that reports no tool calls was open is the
/// turn's: the undo's plan says so before it is applied; a restore's plan does not.
#[test]
fn an_undos_plan_says_a_persons_edit_during_the_turn_goes_with_it() {
    let ws = Workspace::new();
    ws.write("README.md", "hello\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "agent work");
    ws.write("src.rs", "fn main() {}\n");
    ws.write("README.md", "hello\nmy own line\n"); // the person, at the keyboard meanwhile
    daemon.turn_end("s1");
    let plan = cli_state_text(&ws, &["undo", "--session", "s1", "--dry-run"]);
    assert!(plan.contains("README.md"), "{plan}");
    assert!(plan.contains("cannot tell its writes from yours"), "{plan}");
    let restore = cli_state_text(
        &ws,
        &[
            "restore",
            "src.rs",
            "--before",
            "1",
            "--session",
            "s1",
            "--dry-run",
        ],
    );
    assert!(!restore.contains("cannot tell its writes"), "{restore}");
}
