//! G2: everything a shell does in a turn is seen, with the right change and kind.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// Files created before the turn so the turn can change them.
fn prepare(ws: &Workspace) {
    ws.write(".gitignore", "node_modules/\n*.log\n");
    // Files a .gitignore rule names are recorded since issue 49 (docs/tracking.md, "Ignored
    // files"); here `*.log` stands for what is not recorded.
    ws.write(".filewatchd.toml", "[ignored_files]\nrecord = false\n");
    ws.write(".git/HEAD", "ref: refs/heads/main\n");
    for i in 0..500 {
        ws.write(format!("many/f{i:03}.txt"), format!("hello {i}\n"));
    }
    ws.write("doomed.txt", "bye\n");
    ws.write("a.txt", "moving\n");
    ws.write("dir/one.txt", "one\n");
    ws.write("dir/sub/two.txt", "two\n");
    ws.write("run.sh", "#!/bin/sh\necho hi\n");
    ws.write("target.txt", "pointed at\n");
    ws.write("saved.txt", "old text\n");
}

const SCRIPT: &str = r#"
sed -i 's/hello/bye/' many/*.txt
rm doomed.txt
mv a.txt b.txt
mv dir dir2
mkdir -p x/y && echo > x/y/z
chmod +x run.sh
ln -s target.txt link
printf 'new text\n' > .saved.txt.swp && mv .saved.txt.swp saved.txt
printf '\x00\x01\x02\xff\xfe' > blob.bin
: > empty.txt
printf 'hi\n' > $'caf\xe9.txt'
mkdir -p node_modules/pkg && echo 'x' > node_modules/pkg/index.js
echo 'log' > build.log && mkdir -p deep && echo 'log' > deep/trace.log
echo 'object' > .git/packed-refs && mkdir -p .git/objects/ab && echo 'o' > .git/objects/ab/cd
"#;

#[test]
fn one_shell_script_is_captured_whole() {
    let ws = Workspace::new();
    prepare(&ws);
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "shell storm");
    ws.sh(SCRIPT);
    let turn = daemon.turn_end("s1");

    for i in 0..500 {
        assert_change(&turn, &format!("many/f{i:03}.txt"), "modified", "file");
    }
    assert_change(&turn, "doomed.txt", "deleted", "file");
    let b = assert_change(&turn, "b.txt", "renamed", "file");
    assert_eq!(b["from"], "a.txt");
    for (new, old) in [
        ("dir2/one.txt", "dir/one.txt"),
        ("dir2/sub/two.txt", "dir/sub/two.txt"),
    ] {
        assert_eq!(assert_change(&turn, new, "renamed", "file")["from"], old);
    }
    assert_change(&turn, "x", "added", "dir");
    assert_change(&turn, "x/y", "added", "dir");
    assert_change(&turn, "x/y/z", "added", "file");
    let run = assert_change(&turn, "run.sh", "modified", "file");
    assert_eq!(run["mode_changed"], true, "{run}");
    assert_eq!(run["executable"], true, "{run}");
    assert_eq!(
        assert_change(&turn, "link", "added", "symlink")["target"],
        "target.txt"
    );
    assert_change(&turn, "saved.txt", "modified", "file");
    assert_eq!(assert_change(&turn, "blob.bin", "added", "file")["size"], 5);
    assert_eq!(assert_change(&turn, "empty.txt", "added", "file")["size"], 0);
    assert_change(&turn, r"caf\xe9.txt", "added", "file");

    // The old names of moved paths and the editor's temp file are not changes of their own.
    let paths = changed_paths(&turn);
    for gone in ["a.txt", "dir/one.txt", "dir/sub/two.txt", ".saved.txt.swp"] {
        assert!(!paths.contains(gone), "{gone} listed: {paths:?}");
    }
    assert_no_ignored(&paths);
    assert_counts_match(&turn);
}

#[test]
fn ignored_paths_have_no_history() {
    let ws = Workspace::new();
    prepare(&ws);
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "ignored writes");
    ws.sh(SCRIPT);
    daemon.turn_end("s1");

    // Each is named as ignored, with the rule that hides it.
    for path in ["node_modules/pkg/index.js", "build.log", "deep/trace.log"] {
        assert_error(404, "ignored", daemon.history_reply(path));
    }
    // A path under .git/ is refused outright: it can never have a history.
    for path in [".git/HEAD", ".git/objects/ab/cd"] {
        assert_error(400, "bad_path", daemon.history_reply(path));
    }
}

#[test]
fn diff_shows_the_sed_change() {
    let ws = Workspace::new();
    prepare(&ws);
    let daemon = Daemon::start(&ws);

    let started = daemon.turn_start("s1", "sed");
    ws.sh(SCRIPT);
    daemon.turn_end("s1");

    let turn = daemon.turn("s1", started["turn"].as_u64().unwrap(), true);
    let diff = change(&turn, "many/f042.txt")["diff"]
        .as_str()
        .unwrap_or_else(|| panic!("no diff: {turn:#}"));
    assert!(
        diff.contains("-hello 42\n") && diff.contains("+bye 42\n"),
        "diff:\n{diff}"
    );
    assert!(diff.contains("@@"), "not a unified diff:\n{diff}");
    assert_eq!(change(&turn, "blob.bin")["binary"], true);
}

#[test]
fn non_utf8_name_round_trips_through_history() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "latin-1 name");
    ws.sh(r"printf 'hi\n' > $'caf\xe9.txt'");
    let turn = daemon.turn_end("s1");

    let name = api_name(OsStr::from_bytes(b"caf\xe9.txt"));
    assert_eq!(name, r"caf\xe9.txt");
    change(&turn, &name);
    let history = daemon.history(&name);
    assert_eq!(history["path"], name.as_str());
    assert_eq!(latest(&history)["origin"], "turn");
}

#[test]
fn directory_created_after_start_is_captured_whole() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "new tree");
    ws.sh("mkdir -p new/a/b && for i in $(seq 1 200); do echo $i > new/a/b/f$i.txt; echo $i > new/g$i.txt; done");
    let turn = daemon.turn_end("s1");

    let expected = set((1..=200).flat_map(|i| [format!("new/a/b/f{i}.txt"), format!("new/g{i}.txt")]));
    assert_eq!(changed_files(&turn), expected);
    for c in changes(&turn) {
        assert_eq!(c["change"], "added", "{c}");
    }
}

/// A file edited and then moved in one turn is one rename whose content is the edit, even
/// when the edit was recorded before the move (the deletion then carries the edited content).
#[test]
fn a_file_edited_then_moved_is_one_rename() {
    let ws = Workspace::new();
    ws.write("a.txt", "first\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", "edit, then move");
    ws.write("a.txt", "edited\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    while latest(&daemon.history("a.txt"))["size"] != 7 {
        assert!(Instant::now() < deadline, "the edit was never recorded");
        std::thread::yield_now();
    }
    ws.sh("mv a.txt b.txt");
    let turn = daemon.turn_end("s");
    let b = assert_change(&turn, "b.txt", "renamed", "file");
    assert_eq!(b["from"], "a.txt");
    assert_eq!(b["size"], 7);
    assert_eq!(changes(&turn).len(), 1, "{turn}");
}

#[track_caller]
fn assert_change<'a>(turn: &'a Value, path: &str, kind_of_change: &str, kind: &str) -> &'a Value {
    let c = change(turn, path);
    assert_eq!(c["change"], kind_of_change, "{c}");
    assert_eq!(c["kind"], kind, "{c}");
    c
}

#[track_caller]
fn assert_no_ignored(paths: &BTreeSet<String>) {
    for p in paths {
        let ignored =
            p.starts_with("node_modules") || p.ends_with(".log") || p == ".git" || p.starts_with(".git/");
        assert!(!ignored, "ignored path {p} recorded");
    }
}

/// `counts` agrees with the list of changes.
#[track_caller]
fn assert_counts_match(turn: &Value) {
    for kind in ["added", "modified", "deleted", "renamed"] {
        let listed = changes(turn).iter().filter(|c| c["change"] == kind).count();
        assert_eq!(turn["counts"][kind], listed as u64, "counts.{kind}");
    }
}

/// O_NOATIME is the Linux platform layer's; the portable one has none (docs/platforms.md), and
/// its build leaves this test out.
#[test]
#[cfg(not(feature = "portable"))]
fn reading_files_leaves_their_access_times_alone() {
    let ws = Workspace::new();
    ws.write("old.txt", "not read for days\n");
    ws.sh("touch -a -d '3 days ago' old.txt");
    let atime = || {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(ws.path("old.txt")).expect("stat old.txt");
        (meta.atime(), meta.atime_nsec())
    };
    let before = atime();
    let daemon = Daemon::start(&ws);
    assert_eq!(
        latest(&daemon.history("old.txt"))["kind"],
        "file",
        "the first index did not read it"
    );
    assert_eq!(atime(), before, "the first index changed the file's access time");
}

/// A tree deeper than `PATH_MAX` (300 directories of 20 bytes: over 6,000 bytes) is recorded:
/// the first index finds the deep file, inotify cannot watch there and `status` says so, a
/// turn's writes deep down are the turn's (a stat walk at the marker finds them), and undo and
/// redo put them back and forward.
#[test]
fn a_tree_deeper_than_path_max_is_recorded_and_rolled_back() {
    const DOWN: &str = "for i in $(seq 300); do cd dddddddddddddddddddd; done";
    let ws = Workspace::new();
    ws.sh("for i in $(seq 300); do mkdir dddddddddddddddddddd; cd dddddddddddddddddddd; done; echo deep > deep.txt");
    let daemon = Daemon::start(&ws);
    let status = daemon.status();
    assert_eq!(status["tracked_files"], 1, "{status:#}");
    let said = status["watcher"]["last_error"].as_str().unwrap_or_default();
    assert!(said.contains("over 4096 bytes"), "{status:#}");
    assert!(
        status["watcher"]["unwatched_dirs"].as_u64() > Some(0),
        "{status:#}"
    );

    daemon.turn_start("s1", "deep");
    ws.sh(&format!("{DOWN}; echo changed > deep.txt; echo new > new.txt"));
    let turn = daemon.turn_end("s1");
    let changed = changed_paths(&turn);
    assert_eq!(changed.len(), 2, "{turn:#}");
    assert!(changed.iter().all(|p| p.len() > 6000), "{changed:?}");

    expect(200, daemon.undo("s1", serde_json::json!({})));
    ws.sh(&format!(
        "{DOWN}; test \"$(cat deep.txt)\" = deep; test ! -e new.txt"
    ));
    expect(200, daemon.redo("s1", serde_json::json!({})));
    ws.sh(&format!(
        "{DOWN}; test \"$(cat deep.txt)\" = changed; test \"$(cat new.txt)\" = new"
    ));
}
