//! Section 7: what is tracked. Ignore files and config globs, re-read while running.

mod common;

use common::*;

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
