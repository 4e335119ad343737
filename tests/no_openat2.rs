//! A kernel without `openat2` (Linux before 5.6; qemu-user running the aarch64 release binary,
//! as dist/test.sh does): every `openat2` of the running daemon fails with `ENOSYS` (strace
//! injects it), and the daemon confines paths by the portable layer's walk instead, one
//! `openat` with `O_NOFOLLOW` per component (docs/platforms.md, G7). A turn is still recorded,
//! undone and redone, and a symlink the turn put in a directory's place is still never written
//! through.

use crate::common::*;
use serde_json::json;

#[test]
fn without_openat2_the_walk_confines_paths_and_a_session_works() {
    let ws = Workspace::new();
    ws.write("d/a.txt", "a\n");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("a.txt"), "outside\n").expect("outside a.txt");
    let daemon = Daemon::start(&ws);
    let inject = ["-e", "trace=openat2", "-e", "inject=openat2:error=ENOSYS"];
    let Some(strace) = Strace::attach(daemon.pid, &inject) else {
        return;
    };

    daemon.turn_start("s", "edit");
    ws.write("d/a.txt", "changed\n");
    ws.write("d/b.txt", "new\n");
    let turn = daemon.turn_end("s");
    assert_eq!(changes(&turn).len(), 2, "{turn:#}");
    expect(200, daemon.undo("s", json!({})));
    assert_eq!(ws.read("d/a.txt"), b"a\n");
    assert!(!ws.path("d/b.txt").exists(), "the turn's file is gone");
    expect(200, daemon.redo("s", json!({})));
    assert_eq!(ws.read("d/a.txt"), b"changed\n");
    assert_eq!(ws.read("d/b.txt"), b"new\n");

    // The next turn puts a symlink to a directory outside the root where `d/` was.
    daemon.turn_start("s", "swap d for a symlink");
    std::fs::remove_dir_all(ws.path("d")).expect("rm d");
    std::os::unix::fs::symlink(outside.path(), ws.path("d")).expect("symlink d");
    daemon.turn_end("s");
    let plan = expect(200, daemon.undo("s", json!({"dry_run": true})));
    for path in ["d/a.txt", "d/b.txt"] {
        assert_eq!(
            listed(&plan, "conflicts", path)["code"],
            "symlink_in_the_way",
            "{plan:#}"
        );
    }
    let (status, answer) = daemon.undo("s", json!({"on_conflict": "skip"}));
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(
        std::fs::read(outside.path().join("a.txt")).expect("outside a.txt"),
        b"outside\n",
        "nothing written through the symlink"
    );
    assert!(
        !outside.path().join("b.txt").exists(),
        "nothing made through the symlink"
    );

    let trace = strace.trace();
    strace.detach();
    assert!(
        trace.contains("ENOSYS") && trace.contains("INJECTED"),
        "openat2 was refused: {trace}"
    );
    assert!(
        daemon.stderr().contains("this kernel has no openat2"),
        "said once in the log: {}",
        daemon.stderr()
    );
}
