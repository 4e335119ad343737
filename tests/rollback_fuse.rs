//! G12, G13: undo, redo and conflicts on a file system that refuses
//! `renameat2(RENAME_EXCHANGE)`: on LazyFS (FUSE), through the real daemon, and on any disk
//! with the call refused by strace, where a failed rollback's put-back completes without it.
//! Where LazyFS cannot be built or mounted the test says why and skips; under CI=true a skip
//! is a failure.

use std::path::Path;

use crate::common::*;
use serde_json::{Value, json};

fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

#[track_caller]
fn assert_ok(reply: (u16, Value)) -> Value {
    let (status, body) = reply;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["applied"], true, "{body:#}");
    body
}

#[track_caller]
fn assert_mode(d: &Daemon, kind: Option<&str>, mode: &str) {
    let fs = &d.status()["filesystem"];
    if let Some(kind) = kind {
        assert_eq!(fs["type"], kind, "{fs:#}");
    }
    assert_eq!(fs["install_mode"], mode, "{fs:#}");
    assert_eq!(fs["probed"], true, "{fs:#}");
}

/// A daemon watching `ws/` on a new LazyFS mount, where `name` holds `content` first; `None`
/// (said) where LazyFS cannot run. The mount and the home go when the last of them drops.
fn on_lazyfs(name: &str, content: &str) -> Option<(LazyFs, Workspace, std::path::PathBuf, Daemon)> {
    let lazy = match LazyFs::mount() {
        Ok(lazy) => lazy,
        Err(why) => {
            skip(&format!("LazyFS cannot run here: {why}"));
            return None;
        }
    };
    let ws = Workspace::new();
    let root = lazy.mnt.join("ws");
    std::fs::create_dir_all(&root).expect("mkdir on the mount");
    std::fs::write(root.join(name), content).expect("write the first file");
    let d = Daemon::start_in_home_at(&ws, &root);
    Some((lazy, ws, root, d))
}

#[test]
fn on_lazyfs_record_undo_redo_and_a_conflict_work() {
    let Some((_lazy, _ws, root, d)) = on_lazyfs("f1", "one\n") else {
        return;
    };
    let path = |name: &str| root.join(name);
    d.turn_start("s", "t1");
    std::fs::write(path("f1"), "one\nchanged\n").expect("write f1");
    std::fs::write(path("f4"), "new\n").expect("write f4");
    let turn = d.turn_end("s");
    assert_eq!(changes(&turn).len(), 2, "recorded on FUSE: {turn:#}");

    assert_ok(d.undo("s", json!({})));
    assert_eq!(read(&path("f1")).as_deref(), Some(&b"one\n"[..]));
    assert_eq!(read(&path("f4")), None, "the created file is gone");
    assert_mode(&d, Some("fuse"), "rename");

    assert_ok(d.redo("s", json!({})));
    assert_eq!(read(&path("f1")).as_deref(), Some(&b"one\nchanged\n"[..]));
    assert_eq!(read(&path("f4")).as_deref(), Some(&b"new\n"[..]));

    // Someone else changes f1 after the turn: the undo (abort) refuses and changes nothing.
    std::fs::write(path("f1"), "theirs\n").expect("write f1");
    let (status, body) = d.undo("s", json!({}));
    assert_eq!(status, 409, "{body:#}");
    assert_eq!(body["error"]["code"], "conflicts", "{body:#}");
    assert_eq!(read(&path("f1")).as_deref(), Some(&b"theirs\n"[..]));
    assert_eq!(read(&path("f4")).as_deref(), Some(&b"new\n"[..]));
    let temps: Vec<String> = snapshot(&root)
        .into_keys()
        .filter(|p| p.contains(".filewatchd-tmp-"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
    d.stop();
}

/// Turn 1 edits a, b and c, deletes d and creates e: its undo replaces three files, creates
/// one and removes one.
fn turn_to_undo(ws: &Workspace) -> (Daemon, Tree, Tree) {
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        ws.write(name, format!("{name} before\n"));
    }
    let before = snapshot(ws.root());
    let d = Daemon::start(ws);
    d.turn_start("s", "the turn");
    for name in ["a.txt", "b.txt", "c.txt"] {
        ws.write(name, format!("{name} after\n"));
    }
    ws.remove("d.txt");
    ws.write("e.txt", "new\n");
    d.turn_end("s");
    (d, before, snapshot(ws.root()))
}

#[test]
fn with_exchange_refused_undo_and_redo_work_by_rename() {
    let ws = Workspace::new();
    let (d, before, after) = turn_to_undo(&ws);
    // The file system has the call until now: the mode is exchange.
    assert_ok(d.undo("s", json!({})));
    assert_ok(d.redo("s", json!({})));
    assert_mode(&d, None, "exchange");
    let args = [
        "-e",
        "trace=renameat2,renameat,linkat",
        "-e",
        "inject=renameat2:error=EINVAL",
    ];
    let Some(strace) = Strace::attach(d.pid, &args) else {
        return skip("strace cannot attach");
    };
    assert_ok(d.undo("s", json!({})));
    assert_tree_eq(&before, &snapshot(ws.root()), "undone without RENAME_EXCHANGE");
    assert_mode(&d, None, "rename");
    assert_ok(d.redo("s", json!({})));
    assert_tree_eq(&after, &snapshot(ws.root()), "redone without it");
    let trace = strace.trace();
    strace.detach();
    // The first refusal was the probe: no other exchange or no-replace rename was tried.
    assert_eq!(trace.matches("renameat2(").count(), 1, "{trace}");
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "the record equals the disk: {turn:#}");
}

#[test]
fn a_failed_rollbacks_put_back_completes_without_exchange() {
    let ws = Workspace::new();
    let (d, _, after) = turn_to_undo(&ws);
    // Every exchange refused; the second plain rename (b.txt's) fails with EIO.
    let args = [
        "-e",
        "trace=renameat2,renameat",
        "-e",
        "inject=renameat2:error=EINVAL",
        "-e",
        "inject=renameat:error=EIO:when=2",
    ];
    let Some(strace) = Strace::attach(d.pid, &args) else {
        return skip("strace cannot attach");
    };
    let (status, body) = d.undo("s", json!({}));
    let trace = strace.trace();
    strace.detach();
    assert_eq!(status, 503, "{body:#}");
    assert_eq!(body["error"]["code"], "rollback_failed", "{body:#}");
    assert_eq!(body["error"]["cause"], "EIO", "{body:#}");
    assert_eq!(body["error"]["reverted"], true, "every path put back: {body:#}");
    assert_tree_eq(&after, &snapshot(ws.root()), "put back as before the rollback");
    assert_eq!(d.status()["failed_rollbacks"], json!([]));
    // The put-back (after the failed rename) never called the refused call.
    let failed_at = trace.find("EIO").unwrap_or(trace.len());
    assert!(!trace[failed_at..].contains("renameat2("), "{trace}");
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "the record equals the disk: {turn:#}");
}

/// Sends SIGCONT to a stopped process when dropped (before what it holds up is dropped).
struct Resume(u32);

impl Drop for Resume {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

/// A daemon whose tree is on a FUSE mount whose server hangs (its process stopped: every
/// stat there waits) holds up no start of another tree: a start looks at another tree's
/// files only when that tree lies inside its own.
#[test]
fn a_hung_mount_under_another_daemon_holds_up_no_other_start() {
    let lazy = match LazyFs::mount() {
        Ok(lazy) => lazy,
        Err(why) => return skip(&format!("LazyFS cannot run here: {why}")),
    };
    let ws = Workspace::new();
    let root = lazy.mnt.join("ws");
    std::fs::create_dir_all(&root).expect("mkdir on the mount");
    let on_fuse = Daemon::start_in_home_at(&ws, &root);
    let stopped = std::process::Command::new("kill")
        .args(["-STOP", &lazy.pid.to_string()])
        .status();
    assert!(stopped.is_ok_and(|s| s.success()), "stop the FUSE server");
    let _resume = Resume(lazy.pid);
    let elsewhere = Workspace::new();
    let d = Daemon::start_in_home_at(&elsewhere, elsewhere.root());
    d.turn_start("s", "t");
    elsewhere.write("a.txt", "a\n");
    assert_eq!(changes(&d.turn_end("s")).len(), 1);
    drop(d);
    drop(_resume);
    drop(on_fuse);
}

/// A file renamed over (or removed) while it is open becomes libfuse's `.fuse_hidden…` until
/// it is closed: a walk lists it, but it is never recorded, and so never comes back with an
/// undo; asked for, its history says why it is not tracked.
#[test]
fn a_fuse_stand_in_for_an_open_file_is_never_recorded() {
    let Some((_lazy, _ws, root, d)) = on_lazyfs("a.txt", "old\n") else {
        return;
    };
    let path = |name: &str| root.join(name);
    d.turn_start("s", "replace a.txt while a reader holds it open");
    let reader = std::fs::File::open(path("a.txt")).expect("open a.txt");
    std::fs::write(path("a.tmp"), "new\n").expect("write a.tmp");
    std::fs::rename(path("a.tmp"), path("a.txt")).expect("rename over a.txt");
    let hidden: Vec<String> = snapshot(&root)
        .into_keys()
        .filter(|p| p.starts_with(".fuse_hidden"))
        .collect();
    assert_eq!(
        hidden.len(),
        1,
        "libfuse kept the open file as a stand-in: {hidden:?}"
    );

    // A walk lists the stand-in; only a.txt is recorded.
    let found = expect(200, d.post_empty("/v1/verify"));
    let turn = d.turn_end("s");
    assert_eq!(changed_paths(&turn), set(["a.txt"]), "{turn:#} {found:#}");
    let (status, body) = d.history_reply(&hidden[0]);
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("ignored")),
        "{body:#}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("stand-in for a removed file still open"),
        "{body:#}"
    );

    // The undo puts a.txt back and brings back no stand-in, open or closed.
    assert_ok(d.undo("s", json!({})));
    assert_eq!(read(&path("a.txt")).as_deref(), Some(&b"old\n"[..]));
    drop(reader);
    let gone = poll_until(std::time::Duration::from_secs(10), || {
        (!std::fs::read_dir(&root)
            .expect("list the workspace")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(".fuse_hidden")))
        .then_some(())
    });
    assert!(
        gone.is_some(),
        "the stand-in outlived its reader: {:?}",
        snapshot(&root)
    );
    assert_eq!(snapshot(&root).into_keys().collect::<Vec<_>>(), ["a.txt"]);
    d.stop();
}
