//! G3 on whole shell turns: an undo restores content, executable bits, symlink targets,
//! deleted trees and names that are not UTF-8 exactly, rewrites nothing the turn left alone,
//! and a redo gives back the turn's tree exactly; also files swapped with directories,
//! directories an undo re-created, and more files than the daemon may hold open.

use crate::common::*;
use serde_json::json;

fn prepare_bash_tree(ws: &Workspace) {
    for i in 0..400 {
        ws.write(format!("many/f{i:03}.txt"), format!("hello {i}\nsecond line\n"));
    }
    for i in 0..20 {
        ws.write(format!("olddir/sub{}/g{i}.txt", i % 3), format!("old {i}\n"));
    }
    ws.write("olddir/empty/.keep", "");
    ws.write("a.txt", "moving file\n");
    ws.write("run.sh", "#!/bin/sh\necho run\n");
    ws.write("tool.sh", "#!/bin/sh\necho tool\n");
    ws.write("blob.bin", [0u8, 1, 2, 255, 254, 0, 10]);
    ws.write("target1.txt", "one\n");
    ws.write("target2.txt", "two\n");
    ws.write("untouched/deep/keep.txt", "keep\n");
    ws.sh("chmod 755 tool.sh && ln -s target1.txt link && ln -s olddir dirlink");
    ws.sh(r"printf 'latin-1 name\n' > $'caf\xe9.txt'");
}

const BASH_TURN: &str = r#"
sed -i 's/hello/bye/' many/f0*.txt many/f1*.txt many/f2*.txt
rm -rf olddir
mv a.txt b.txt
chmod +x run.sh
chmod -x tool.sh
ln -sfn target2.txt link
rm dirlink && ln -s many dirlink
printf '\x00\x01\x02' > blob.bin
mkdir -p newdir/sub/subsub && echo new > newdir/sub/subsub/n.txt && echo top > newdir/t.txt
printf 'latin-1 name, changed\n' > $'caf\xe9.txt'
printf 'new\n' > 'back\slash.txt'
"#;

/// G3 on a real shell turn: the undo restores content, executable bits, symlink targets and
/// deleted trees exactly; paths the turn did not change are not even rewritten; redo gives
/// back the turn's tree exactly.
#[test]
fn undo_of_a_bash_turn_restores_the_tree_exactly_and_redo_gives_it_back() {
    let ws = Workspace::new();
    prepare_bash_tree(&ws);
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());

    daemon.turn_start("s1", "bash storm");
    ws.sh(BASH_TURN);
    let turn = daemon.turn_end("s1");
    assert_eq!(
        changed_files(&turn)
            .iter()
            .filter(|p| p.starts_with("many/"))
            .count(),
        300,
        "the turn's sed"
    );
    let after_turn = snapshot(ws.root());
    let before_undo = marks(ws.root());

    let answer = rollback_applied(daemon.undo("s1", json!({})));
    all_done(&answer);
    assert_eq!(answer["operation"], "undo");
    assert_eq!(answer["target"]["to"], "before");
    assert_eq!(answer["target"]["turn"], 1);
    assert_tree_eq(&boundary, &snapshot(ws.root()), "after the undo");
    for (path, kind) in [
        ("many/f042.txt", "restore"),
        ("a.txt", "create"),
        ("b.txt", "delete"),
        ("run.sh", "set_mode"),
        ("tool.sh", "set_mode"),
        ("link", "relink"),
        ("dirlink", "relink"),
        ("blob.bin", "restore"),
        ("olddir", "create"),
        ("olddir/sub1/g4.txt", "create"),
        ("newdir", "remove_dir"),
        ("newdir/sub/subsub", "remove_dir"),
        (r"caf\xe9.txt", "restore"),
        (r"back\\slash.txt", "delete"),
    ] {
        assert_eq!(action(&answer, path)["action"], kind, "{path}");
    }

    // Nothing the turn left alone was rewritten, and nothing of it is in the plan.
    let after_undo = marks(ws.root());
    let planned = action_paths(&answer);
    let mut untouched = 0;
    for i in 300..400 {
        let path = format!("many/f{i:03}.txt");
        assert!(!planned.contains(&path), "{path} planned");
        assert_eq!(after_undo[&path], before_undo[&path], "{path} rewritten");
        untouched += 1;
    }
    for path in ["target1.txt", "target2.txt", "untouched/deep/keep.txt"] {
        assert!(!planned.contains(path), "{path} planned");
        assert_eq!(after_undo[path], before_undo[path], "{path} rewritten");
    }
    assert_eq!(untouched, 100);
    assert_eq!(
        versions(&daemon.history("many/f350.txt")).len(),
        1,
        "many/f350.txt got versions"
    );

    let answer = rollback_applied(daemon.redo("s1", json!({})));
    all_done(&answer);
    assert_eq!(answer["operation"], "redo");
    assert_tree_eq(&after_turn, &snapshot(ws.root()), "after the redo");
    let after_redo = marks(ws.root());
    for i in 300..400 {
        let path = format!("many/f{i:03}.txt");
        assert_eq!(
            after_redo[&path], before_undo[&path],
            "{path} rewritten by the redo"
        );
    }
}

/// Rolling back to before turn 1 removes everything the turns created, directories too, and
/// gives back everything they deleted.
#[test]
fn rollback_to_before_turn_one_removes_everything_the_turns_created() {
    let ws = Workspace::new();
    ws.write("keep/a.txt", "a\n");
    ws.write("keep/b.txt", "b\n");
    ws.write("top.txt", "top\n");
    let daemon = Daemon::start(&ws);
    let boundary = snapshot(ws.root());

    daemon.turn_start("s1", "t1");
    ws.sh("mkdir -p x/y/z && echo 1 > x/y/z/one.txt && echo changed > keep/a.txt && mkdir emptydir");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "t2");
    ws.sh("mkdir -p x/y/w && echo 2 > x/y/w/two.txt && rm keep/b.txt && ln -s x/y linked && mv top.txt x/");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "t3");
    ws.sh("rm -rf x/y/z && mkdir -p q/r && echo 3 > q/r/three.txt && chmod +x keep/a.txt && mv keep kept");
    daemon.turn_end("s1");

    let answer = rollback_applied(daemon.rollback("s1", json!({"to": "before", "turn": 1})));
    all_done(&answer);
    assert_eq!(answer["kept"], json!([]), "{answer:#}");
    assert_tree_eq(
        &boundary,
        &snapshot(ws.root()),
        "after rolling back to before turn 1",
    );
}

/// A turn that swaps a file and a directory at one path: the file or directory there before
/// it, and the turn's script.
struct Swap {
    label: &'static str,
    before: (&'static str, &'static str),
    script: &'static str,
}

const SWAPS: [Swap; 2] = [
    Swap {
        label: "file to dir",
        before: ("swap", "a file\n"),
        script: "rm swap && mkdir swap && echo inside > swap/f.txt",
    },
    Swap {
        label: "dir to file",
        before: ("swap/f.txt", "inside\n"),
        script: "rm -rf swap && echo 'a file' > swap",
    },
];

/// A turn that replaced a file by a directory, or a directory by a file: undo gives back what
/// was there before, redo what the turn left.
#[test]
fn a_file_swapped_with_a_directory_is_undone_and_redone() {
    for Swap {
        label,
        before,
        script,
    } in SWAPS
    {
        let ws = Workspace::new();
        ws.write(before.0, before.1);
        let daemon = Daemon::start(&ws);
        let boundary = snapshot(ws.root());
        daemon.turn_start("s1", label);
        ws.sh(script);
        daemon.turn_end("s1");
        let after_turn = snapshot(ws.root());

        rollback_applied(daemon.undo("s1", json!({})));
        assert_tree_eq(
            &boundary,
            &snapshot(ws.root()),
            &format!("{label}: after the undo"),
        );
        rollback_applied(daemon.redo("s1", json!({})));
        assert_tree_eq(
            &after_turn,
            &snapshot(ws.root()),
            &format!("{label}: after the redo"),
        );
    }
}

/// After an undo re-created directories, changes inside them are captured like any other
/// (the daemon watches what it re-created), and undone in turn.
#[test]
fn changes_inside_directories_an_undo_recreated_are_captured() {
    let ws = Workspace::new();
    ws.write("olddir/sub/a.txt", "a\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.sh("rm -rf olddir");
    daemon.turn_end("s1");
    rollback_applied(daemon.undo("s1", json!({})));
    assert_eq!(ws.read("olddir/sub/a.txt"), b"a\n");
    let restored = snapshot(ws.root());

    daemon.turn_start("s1", "t2");
    ws.sh("echo b > olddir/sub/b.txt && echo changed > olddir/sub/a.txt && mkdir olddir/sub/deeper && echo c > olddir/sub/deeper/c.txt");
    let turn = daemon.turn_end("s1");
    assert_eq!(
        changed_files(&turn),
        set(["olddir/sub/a.txt", "olddir/sub/b.txt", "olddir/sub/deeper/c.txt"]),
        "{turn:#}"
    );
    rollback_applied(daemon.undo("s1", json!({})));
    assert_tree_eq(
        &restored,
        &snapshot(ws.root()),
        "after undoing the turn inside re-created dirs",
    );
}

/// A rollback of more files than the daemon may hold open at once: each file is written
/// without keeping a descriptor per file until the end.
#[test]
fn an_undo_of_more_files_than_open_descriptors_allowed_restores_them_all() {
    let ws = Workspace::new();
    for i in 0..400 {
        ws.write(format!("d{}/f{i}.txt", i % 8), format!("before {i}\n"));
    }
    let daemon = Daemon::start(&ws);
    let limited = std::process::Command::new("prlimit")
        .args(["--pid", &daemon.pid.to_string(), "--nofile=200:200"])
        .status()
        .expect("run prlimit");
    assert!(limited.success(), "prlimit failed");
    daemon.turn_start("s", "edit 400 files");
    for i in 0..400 {
        ws.write(format!("d{}/f{i}.txt", i % 8), format!("after {i}\n"));
    }
    daemon.turn_end("s");
    let answer = rollback_applied(daemon.undo("s", json!({})));
    all_done(&answer);
    for i in 0..400 {
        assert_eq!(
            ws.read(format!("d{}/f{i}.txt", i % 8)),
            format!("before {i}\n").into_bytes()
        );
    }
}
