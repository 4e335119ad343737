//! Section 7: what is tracked. Ignore files and config globs, re-read while running.

use crate::common::*;

#[test]
fn gitignore_edited_during_a_run_takes_effect_without_restart() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.log\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "ignore gen/");
    ws.sh("echo 'gen/' >> .gitignore");
    let turn = daemon.turn_end("s1");
    assert_eq!(changed_paths(&turn), set([".gitignore"]));

    daemon.turn_start("s1", "generate");
    ws.sh("mkdir -p gen/deep && echo a > gen/a.txt && echo b > gen/deep/b.txt && echo kept > kept.txt");
    let turn = daemon.turn_end("s1");
    assert_eq!(changed_paths(&turn), set(["kept.txt"]));
}

#[test]
fn filewatchdignore_nested_gitignore_and_config_globs_are_honoured() {
    let ws = Workspace::new();
    ws.write(".filewatchdignore", "secrets/\n");
    ws.write("pkg/.gitignore", "out/\n");
    ws.write(".filewatchd.toml", "ignore = [\"*.tmp\", \"cache/\"]\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "ignored and not");
    ws.sh(
        "mkdir -p secrets cache pkg/out && echo k > secrets/key && echo c > cache/c \
         && echo o > pkg/out/bin && echo t > x.tmp && echo s > pkg/src.rs && echo out > out",
    );
    let turn = daemon.turn_end("s1");
    // `out/` in pkg/.gitignore applies below pkg/ only.
    assert_eq!(changed_paths(&turn), set(["pkg/src.rs", "out"]));
}

/// Files an ignore rule hid existed before the turn that lifted the rule: undoing that turn
/// must never delete them. They are found (`offline`) and were untracked, not absent, before
/// the turn: the undo brings the rule back and leaves them on disk, no conflict.
#[test]
fn undoing_a_turn_that_stops_ignoring_files_never_deletes_them() {
    let ws = Workspace::new();
    ws.write(".gitignore", "cache/\n*.log\n");
    ws.write("cache/model.bin", "weights\n");
    ws.write("x.log", "old log\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "stop ignoring");
    ws.write(".gitignore", "");
    daemon.turn_end("s1");
    let found = daemon.history("cache/model.bin");
    assert_eq!(latest(&found)["origin"], "offline", "{found:#}");

    let (status, answer) = daemon.undo("s1", serde_json::json!({}));
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(action_paths(&answer), set([".gitignore"]), "{answer:#}");
    assert_eq!(ws.read(".gitignore"), b"cache/\n*.log\n");
    assert_eq!(ws.read("cache/model.bin"), b"weights\n");
    assert_eq!(ws.read("x.log"), b"old log\n");
}

/// Deleting an ignore file lifts its rules: what it hid is recorded from then on.
#[test]
fn deleting_an_ignore_file_lifts_its_rules() {
    let ws = Workspace::new();
    ws.write(".gitignore", "node_modules/\n");
    ws.write("node_modules/lib/m.js", "m\n");
    let daemon = Daemon::start(&ws);
    assert_eq!(daemon.history_reply("node_modules/lib/m.js").0, 404);

    daemon.turn_start("s1", "drop the ignore file");
    ws.remove(".gitignore");
    daemon.turn_end("s1");
    let found = daemon.history("node_modules/lib/m.js");
    assert_eq!(latest(&found)["kind"], "file", "{found:#}");

    daemon.turn_start("s1", "edit it");
    ws.write("node_modules/lib/m.js", "m2\n");
    let turn = daemon.turn_end("s1");
    assert_eq!(changed_paths(&turn), set(["node_modules/lib/m.js"]));
}

const GETDENTS64: i32 = 217;

/// The rescan an ignore-file change causes can find a file before its own event is read: `git
/// checkout` writes `.gitignore` and then the files after it (the own-history replay in CI once
/// missed `tests/agents_codex.rs` and `tests/common/model.rs` this way). Such a file was
/// tracked under the old rules too: it is the turn's write. Only what the old rules hid comes
/// into view as found. strace holds the rescan's listing of the root while the files are made.
#[test]
fn files_written_while_an_ignore_change_is_rescanned_are_the_turns() {
    let ws = Workspace::new();
    ws.write(".gitignore", "/target\ncache/\n");
    ws.write("cache/model.bin", "weights\n");
    ws.write("tests/old.rs", "old\n");
    let daemon = Daemon::start(&ws);
    let held = "inject=getdents64:delay_enter=2000000:when=1";
    let Some(strace) = Strace::attach(daemon.pid, &["-e", "trace=getdents64", "-e", held]) else {
        return;
    };

    daemon.turn_start("s1", "checkout");
    ws.write(".gitignore", "/target\n");
    assert!(
        Strace::wait_in_syscall(daemon.pid, GETDENTS64),
        "the rescan after the .gitignore change is listing the root"
    );
    ws.write("tests/new.rs", "new\n");
    ws.write("tests/old.rs", "changed\n");
    let turn = daemon.turn_end("s1");
    strace.detach();
    assert_eq!(
        changed_paths(&turn),
        set([".gitignore", "tests/new.rs", "tests/old.rs"]),
        "{turn:#}"
    );
    let found = daemon.history("cache/model.bin");
    assert_eq!(latest(&found)["origin"], "offline", "{found:#}");

    let (status, answer) = daemon.undo("s1", serde_json::json!({}));
    assert_eq!(status, 200, "{answer:#}");
    assert!(!ws.path("tests/new.rs").exists(), "{answer:#}");
    assert_eq!(ws.read("tests/old.rs"), b"old\n");
    assert_eq!(ws.read("cache/model.bin"), b"weights\n");
}

/// An ignore file that is a FIFO, a symlink to a device that never ends, or larger than the
/// matcher is allowed to grow, is not applied: the daemon starts without waiting on it or
/// reading it whole, records what it would have ignored, and `status` names it.
#[test]
fn a_hostile_ignore_file_is_refused_by_name_and_hangs_nothing() {
    let huge: String = (0..6_000).map(|i| format!("dir{i}/**/*.ext{i}\n")).collect();
    for (name, make) in [
        ("fifo", "mkfifo .gitignore"),
        ("device", "ln -s /dev/zero .gitignore"),
        ("rules", "cat rules.txt > .gitignore"),
    ] {
        let ws = Workspace::new();
        ws.write("rules.txt", &huge);
        ws.sh(make);
        ws.write("kept.log", "a log the huge file would not have ignored anyway\n");
        let daemon = Daemon::start(&ws);
        daemon.turn_start("s1", "write");
        ws.sh("echo hi > dir7.txt");
        let turn = daemon.turn_end("s1");
        assert_eq!(changed_paths(&turn), set(["dir7.txt"]), "{name}");
        let status = daemon.status();
        let error = status["watcher"]["last_error"].as_str().unwrap_or_default();
        assert!(
            error.contains(".gitignore") && error.contains("not applied"),
            "{name}: {status:#}"
        );
    }
}

/// Issue 49: a file a `.gitignore` rule names is recorded up to `[ignored_files]`'s caps; one
/// the config's `ignore` or a `.filewatchdignore` names is not, nor anything in an ignored
/// directory.
#[test]
fn ignored_files_a_git_rule_names_are_recorded_up_to_the_caps() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.secret\n*.big\nout/\n");
    ws.write(".filewatchdignore", "mine.private\n");
    ws.write(
        ".filewatchd.toml",
        "ignore = [\"*.tmp\"]\n[ignored_files]\nmax_size = 100\nmax_files = 2\n",
    );
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "write ignored files");
    ws.sh("for n in a b c; do echo $n > $n.secret; done
           head -c 1000 /dev/zero > blob.big
           echo x > note.tmp && echo x > mine.private && mkdir out && echo x > out/a.secret");
    let turn = daemon.turn_end("s1");
    let listed = changed_paths(&turn);
    let secrets = ["a.secret", "b.secret", "c.secret"]
        .iter()
        .filter(|p| listed.contains(**p))
        .count();
    assert_eq!(secrets, 2, "max_files = 2: {listed:?}");
    for never in ["blob.big", "note.tmp", "mine.private", "out/a.secret"] {
        assert!(!listed.contains(never), "{never} is not recorded: {listed:?}");
    }
}
