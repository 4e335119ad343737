//! How a rollback's writes are made durable, so that no file is installed before its content
//! is on disk: the temp files on the workspace's own file system by one `syncfs` before the
//! first rename, the renames by a second; a file on another file system mounted inside the
//! workspace, which that `syncfs` does not cover, and its directory, by an `fsync` of their
//! own. (The sync failing: `rollback_faults.rs`.)

use crate::common::*;
use serde_json::json;

#[test]
fn a_file_on_another_mount_inside_the_workspace_is_fsynced_on_its_own() {
    let ws = Workspace::new();
    ws.write("top.txt", "top before\n");
    let setup = "mkdir -p \"$ROOT/mnt\" && mount -t tmpfs tmpfs \"$ROOT/mnt\" \
                 && echo 'mounted before' > \"$ROOT/mnt/m.txt\"";
    let Some(d) = Daemon::start_in_mount_namespace(&ws, setup, &[]) else {
        return;
    };
    let root = ws.root().display().to_string();
    d.turn_start("s", "edit a file on each file system");
    ws.write("top.txt", "top after\n");
    d.in_namespace(&format!("echo 'mounted after' > {root}/mnt/m.txt"));
    let turn = d.turn_end("s");
    assert_eq!(changes(&turn).len(), 2, "{turn:#}");
    let Some(strace) = Strace::attach(d.pid, &["-e", "trace=fsync,fdatasync,syncfs"]) else {
        return;
    };
    rollback_applied(d.undo("s", json!({})));
    let trace = strace.trace();
    strace.detach();
    let fsynced = |what: &str| {
        trace
            .lines()
            .filter(|l| l.contains("fsync(") && l.contains(what))
            .count()
    };
    assert_eq!(
        fsynced(".filewatchd-tmp-"),
        1,
        "one temp file is fsynced: {trace}"
    );
    assert_eq!(
        fsynced("/mnt/.filewatchd-tmp-"),
        1,
        "the one on the tmpfs: {trace}"
    );
    assert_eq!(fsynced("/mnt>"), 1, "and its directory: {trace}");
    let syncfs = trace
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains("syncfs("))
        .count();
    assert_eq!(
        syncfs, 2,
        "the root's file system, before and after the renames: {trace}"
    );
    assert_eq!(ws.read("top.txt"), b"top before\n");
    d.in_namespace(&format!("grep -qx 'mounted before' {root}/mnt/m.txt"));
}
