//! A directory removed (or moved away) and made again under the same name within
//! milliseconds, as `git checkout` does when a commit empties a directory and adds a file to
//! it: the new directory is watched and walked at once, its files are in the
//! turn that made them, and nothing is left for the verification pass to find.

use crate::common::*;
use serde_json::json;

/// A verification pass finds nothing: the record already equals the disk (but for the
/// paths under `busy/`, which another process may be writing right now).
fn assert_record_is_disk(daemon: &Daemon, what: &str) {
    let found = expect(200, daemon.post_empty("/v1/verify"));
    assert_eq!(found["truncated"], false, "{what}: {found}");
    let missed: Vec<&serde_json::Value> = found["versions"]
        .as_array()
        .expect("the pass's versions")
        .iter()
        .filter(|v| !v["path"].as_str().is_some_and(|p| p.starts_with("busy/")))
        .collect();
    assert!(
        missed.is_empty(),
        "{what}: the verification pass found what capture missed: {missed:?}"
    );
}

/// What a change lists: `path kind`, renames as `path renamed from`.
fn listing(turn: &serde_json::Value) -> std::collections::BTreeSet<String> {
    changes(turn)
        .iter()
        .map(|c| match c["from"].as_str() {
            Some(from) => format!("{} renamed {from}", c["path"].as_str().unwrap_or("?")),
            None => format!(
                "{} {}",
                c["path"].as_str().unwrap_or("?"),
                c["change"].as_str().unwrap_or("?")
            ),
        })
        .collect()
}

#[test]
fn a_directory_made_again_at_once_is_watched_and_its_files_are_in_the_turn() {
    let ws = Workspace::new();
    ws.write("d/a", "old\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s", "checkout");
    ws.sh("rm d/a; rmdir d; mkdir d; echo new > d/b");
    let first = daemon.turn_end("s");
    assert_eq!(listing(&first), set(["d/a deleted", "d/b added"]), "{first}");

    daemon.turn_start("s", "edit");
    ws.sh("echo newer > d/b");
    let second = daemon.turn_end("s");
    assert_eq!(listing(&second), set(["d/b modified"]), "{second}");
    assert_record_is_disk(&daemon, "after the second turn");

    rollback_applied(daemon.undo("s", json!({})));
    assert_eq!(
        ws.read("d/b"),
        b"new\n",
        "undo of the edit brings back the first turn's content"
    );
}

/// x86_64's `inotify_add_watch`.
const INOTIFY_ADD_WATCH: i32 = 254;

/// Files made in a new directory after the batch that found it had seen their names absent,
/// and before the directory was armed, so that no event reports them: the listing after the
/// arming finds them and they are in the turn (a CI run of the bursts below once left `d/e`
/// and `d/e/f` to the verification pass). strace holds the arming while the files are made.
#[test]
fn files_made_while_a_new_directory_is_armed_are_in_the_turn() {
    let ws = Workspace::new();
    ws.write("d/a", "old\n");
    ws.write("d/e/f", "old\n");
    let daemon = Daemon::start(&ws);
    let held = "inject=inotify_add_watch:delay_enter=3000000:when=1";
    let Some(strace) = Strace::attach(daemon.pid, &["-e", "trace=inotify_add_watch", "-e", held]) else {
        return;
    };

    daemon.turn_start("s", "re-create");
    ws.sh("rm -r d && mkdir d");
    assert!(
        Strace::wait_in_syscall(daemon.pid, INOTIFY_ADD_WATCH),
        "the new d/ is being armed"
    );
    ws.sh("echo new > d/a && mkdir d/e && echo new > d/e/f");
    let turn = daemon.turn_end("s");
    strace.detach();
    assert_eq!(listing(&turn), set(["d/a modified", "d/e/f modified"]), "{turn}");
    assert_record_is_disk(&daemon, "after the turn");

    daemon.turn_start("s", "later");
    ws.sh("echo later > d/e/f");
    let later = daemon.turn_end("s");
    assert_eq!(
        listing(&later),
        set(["d/e/f modified"]),
        "d/e is watched: {later}"
    );
}

#[test]
fn every_way_of_making_a_directory_again_is_followed() {
    let ws = Workspace::new();
    for dir in ["same", "nested", "moved", "empty"] {
        ws.write(format!("{dir}/a"), format!("{dir} old\n"));
    }
    ws.write("nested/e/f", "deep\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s", "re-create");
    ws.sh("rm -r same && mkdir same && echo reused > same/a
         rm -rf nested && mkdir -p nested/e && echo deeper > nested/e/g
         mv moved moved.old && mkdir moved && echo fresh > moved/b
         rm -r empty && mkdir empty");
    let turn = daemon.turn_end("s");
    let listed = listing(&turn);
    for expected in [
        "same/a modified",
        "nested/a deleted",
        "nested/e/f deleted",
        "nested/e/g added",
        "moved/b added",
        "moved.old added",
        "moved.old/a renamed moved/a",
        "empty/a deleted",
    ] {
        assert!(listed.contains(expected), "{expected} missing from {listed:?}");
    }

    // Every re-created directory is watched: later writes into each are recorded.
    daemon.turn_start("s", "later writes");
    ws.sh("echo 2 > same/a; echo 2 > nested/e/g; echo 2 > moved/b; echo 2 > empty/c; echo 2 > moved.old/a");
    let later = daemon.turn_end("s");
    assert_eq!(
        listing(&later),
        set([
            "same/a modified",
            "nested/e/g modified",
            "moved/b modified",
            "empty/c added",
            "moved.old/a modified",
        ]),
        "{later}"
    );
    assert_record_is_disk(&daemon, "after the later writes");
}

/// Thousands of `rm -rf d && mkdir d && write` bursts with no gap, nested and renamed, while
/// another process writes beside them: after every marker the record equals the disk, and
/// the last burst's files hold what the history says.
#[test]
fn bursts_of_re_creation_leave_the_record_equal_to_the_disk() {
    let ws = Workspace::new();
    ws.sh("mkdir -p d/e && echo 0 > d/e/f && echo 0 > d/f && mkdir busy");
    let daemon = Daemon::start(&ws);
    // Another process writing beside the bursts, all the time.
    let mut load = std::process::Command::new("bash")
        .arg("-c")
        .arg("i=0; while true; do i=$((i+1)); echo $i > busy/f$((i % 50)); done")
        .current_dir(ws.path(""))
        .spawn()
        .expect("start the writer beside the bursts");
    const TURNS: usize = 10;
    const BURSTS: usize = 100;
    for turn in 0..TURNS {
        daemon.turn_start("s", &format!("bursts {turn}"));
        ws.sh(&format!(
            "for i in $(seq 1 {BURSTS}); do
               rm -rf d && mkdir d && echo $i > d/f
               mkdir -p d/e && echo {turn}.$i > d/e/f
               if [ $((i % 10)) = 0 ]; then mv d d.gone && mkdir d && echo m$i > d/f && mkdir d/e && echo {turn} > d/e/f && rm -rf d.gone; fi
             done"
        ));
        daemon.turn_end("s");
        assert_record_is_disk(&daemon, &format!("turn {turn}"));
    }
    load.kill().expect("stop the writer");
    load.wait().expect("reap the writer");

    for (path, expected) in [
        ("d/f", format!("m{BURSTS}\n")),
        ("d/e/f", format!("{}\n", TURNS - 1)),
    ] {
        let history = daemon.history(path);
        let latest = latest(&history);
        assert_eq!(latest["kind"], "file", "{path}: {history}");
        assert_eq!(
            latest["hash"].as_str(),
            Some(blake3_hex(expected.as_bytes()).as_str()),
            "{path}: {history}"
        );
    }
}

/// A file replaced by a directory of the same name (and back) is listed as what it is: the
/// one deleted, the other added, in the answer, the counts and `show`.
#[test]
fn a_file_replaced_by_a_directory_is_a_deletion_and_an_addition() {
    let ws = Workspace::new();
    ws.write("benchsuite", "#!/bin/sh\n");
    ws.write("tools/x", "x\n");
    let daemon = Daemon::start(&ws);
    let before = snapshot(&ws.path(""));

    daemon.turn_start("s", "swap kinds");
    ws.sh("rm benchsuite && mkdir benchsuite && echo run > benchsuite/run.sh && rm -r tools && echo now-a-file > tools");
    let turn = daemon.turn_end("s");
    let kinds: std::collections::BTreeSet<String> = changes(&turn)
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                c["path"].as_str().unwrap_or("?"),
                c["change"],
                c["kind"]
            )
        })
        .collect();
    assert_eq!(
        kinds,
        set([
            r#"benchsuite "deleted" "file""#,
            r#"benchsuite "added" "dir""#,
            r#"benchsuite/run.sh "added" "file""#,
            r#"tools "deleted" "dir""#,
            r#"tools/x "deleted" "file""#,
            r#"tools "added" "file""#,
        ]),
        "{turn}"
    );
    assert_eq!(turn["counts"]["added"], 3, "{turn}");
    assert_eq!(turn["counts"]["deleted"], 3, "{turn}");
    assert_eq!(turn["counts"]["modified"], 0, "{turn}");
    let again = daemon.turn("s", turn["turn"].as_u64().expect("turn number"), false);
    assert_eq!(
        changes(&again),
        changes(&turn),
        "the ended turn lists what its end marker listed"
    );

    let shown = String::from_utf8_lossy(&cli_state_ok(&ws, &["show", "1"])).to_string();
    for line in ["benchsuite", "benchsuite/run.sh", "tools/x"] {
        assert!(shown.contains(line), "show lists {line}: {shown}");
    }

    rollback_applied(daemon.undo("s", json!({})));
    assert_tree_eq(&before, &snapshot(&ws.path("")), "the undo of the swap");
}
