//! A rollback changes no inode but the one it recorded: a file of the workspace replaced by a
//! hard link to a file outside it (`ln -f /outside/victim.sh m.sh`, same content) is
//! restored by a new file renamed in, and the outside file keeps its bits.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::common::*;
use serde_json::json;

fn mode_of(path: &Path) -> u32 {
    let meta = std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta.permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A file outside the workspace, on its file system (a hard link cannot cross one).
fn outside_file(ws: &Workspace, bytes: &[u8], mode: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    let parent = ws.root().parent().expect("the root has a parent");
    let dir = tempfile::Builder::new()
        .prefix("fwd-outside-")
        .tempdir_in(parent)
        .expect("outside dir");
    let victim = dir.path().join("victim.sh");
    std::fs::write(&victim, bytes).expect("write victim");
    chmod(&victim, mode);
    (dir, victim)
}

/// A turn that makes `m.sh` (0644, `body`) executable and then replaces it by a hard link to
/// an executable file outside the workspace with the same content: the daemon, the outside
/// directory (kept while it lives) and the outside file.
fn linked_turn(ws: &Workspace, body: &[u8]) -> (Daemon, tempfile::TempDir, std::path::PathBuf) {
    ws.write("m.sh", body);
    chmod(&ws.path("m.sh"), 0o644);
    let (outside, victim) = outside_file(ws, body, 0o755);
    let daemon = Daemon::start(ws);
    daemon.turn_start("s", "make it executable");
    chmod(&ws.path("m.sh"), 0o755);
    ws.sh(&format!("ln -f '{}' m.sh", victim.display()));
    daemon.turn_end("s");
    (daemon, outside, victim)
}

/// An undo never chmods a file outside through a hard link: `m.sh` made executable in the turn,
/// then replaced by a hard link to an executable file outside with the same content. The undo's
/// mode-only step chmodded the outside file 755 -> 644 through the link; now `m.sh` is a file of
/// its own at 0644 and the outside file is untouched. The redo (the reverse: 644 -> 755) leaves
/// it alone too.
#[test]
fn undo_of_a_chmod_never_changes_a_hard_linked_file_outside() {
    let ws = Workspace::new();
    let body = b"#!/bin/sh\necho hi\n";
    let (daemon, _outside, victim) = linked_turn(&ws, body);

    let undone = expect(200, daemon.undo("s", json!({})));
    assert_eq!(undone["applied"], json!(true), "{undone:#}");
    assert_eq!(
        mode_of(&victim),
        0o755,
        "the outside file's bits changed: {undone:#}"
    );
    assert_eq!(std::fs::read(&victim).expect("victim"), body);
    assert_eq!(mode_of(&ws.path("m.sh")), 0o644);
    assert_eq!(ws.read("m.sh"), body);
    let (m, v) = (
        std::fs::metadata(ws.path("m.sh")).expect("m.sh"),
        std::fs::metadata(&victim).expect("victim"),
    );
    assert_ne!(m.ino(), v.ino(), "m.sh is still the outside file");

    // The reverse, an outside file at 0600 linked in while m.sh is 0644: the redo to 0755
    // rewrites m.sh, the outside file stays 0600.
    let (_other, secret) = outside_file(&ws, body, 0o600);
    std::fs::remove_file(ws.path("m.sh")).expect("rm");
    std::fs::hard_link(&secret, ws.path("m.sh")).expect("ln");
    chmod(&secret, 0o644);
    daemon.turn_start("t", "nothing");
    daemon.turn_end("t");
    let redone = expect(200, daemon.redo("s", json!({"on_conflict": "force"})));
    assert_eq!(redone["applied"], json!(true), "{redone:#}");
    assert_eq!(
        mode_of(&secret),
        0o644,
        "the outside file's bits changed: {redone:#}"
    );
    assert_eq!(mode_of(&ws.path("m.sh")), 0o755);
    assert_eq!(ws.read("m.sh"), body);
}

/// A workspace file with a second name inside the workspace is still one inode recorded
/// twice: a mode-only step there rewrites it too (the other name keeps its bits, and is
/// restored by its own step if it changed), so nothing is changed through a name the step
/// does not own.
#[test]
fn a_mode_only_step_on_a_file_with_several_links_rewrites_it() {
    let ws = Workspace::new();
    ws.write("a.sh", "x\n");
    chmod(&ws.path("a.sh"), 0o644);
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s", "chmod");
    chmod(&ws.path("a.sh"), 0o755);
    daemon.turn_end("s");
    let (_outside, victim) = outside_file(&ws, b"unrelated\n", 0o600);
    let link = victim.with_file_name("second-name");
    std::fs::hard_link(ws.path("a.sh"), &link).expect("ln");

    expect(200, daemon.undo("s", json!({})));
    assert_eq!(mode_of(&ws.path("a.sh")), 0o644);
    assert_eq!(mode_of(&link), 0o755, "the other name's inode was changed");
    assert_eq!(
        std::fs::metadata(ws.path("a.sh")).expect("a.sh").nlink(),
        1,
        "a.sh is a file of its own now"
    );
}

/// The same on a file system without `RENAME_EXCHANGE` (install mode `rename`, refused here by
/// strace): the linked file is written anew and renamed in there too.
#[test]
fn without_exchange_the_hard_linked_file_is_still_left_alone() {
    let ws = Workspace::new();
    let body = b"#!/bin/sh\n";
    let (daemon, _outside, victim) = linked_turn(&ws, body);

    let args = ["-e", "trace=renameat2", "-e", "inject=renameat2:error=EINVAL"];
    let Some(strace) = Strace::attach(daemon.pid, &args) else {
        return skip("strace cannot attach");
    };
    let undone = expect(200, daemon.undo("s", json!({})));
    let trace = strace.trace();
    strace.detach();
    assert!(trace.contains("EINVAL (Invalid argument) (INJECTED)"), "{trace}");
    assert_eq!(undone["applied"], json!(true), "{undone:#}");
    assert_eq!(
        mode_of(&victim),
        0o755,
        "the outside file's bits changed: {undone:#}"
    );
    assert_eq!(mode_of(&ws.path("m.sh")), 0o644);
    assert_eq!(ws.read("m.sh"), body);
    assert_eq!(std::fs::metadata(ws.path("m.sh")).expect("m.sh").nlink(), 1);
}
