//! G12: a rollback is all or nothing under real faults, injected
//! into the running daemon with strace. An error before the first rename changes nothing; one
//! after some renames puts every changed path back; one that even putting back meets leaves
//! the journal pending, says which path is where, and the next start-up finishes putting
//! back. "done" is what the disk says. A write racing the final rename survives. Temp files
//! never leak, and a user's file that looks like one is never removed.

use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};

/// A workspace whose turn 1 edited three files, deleted one and created one: its undo
/// rewrites three files (swaps), creates one and deletes one.
fn turn_to_undo(ws: &Workspace) -> (Daemon, Tree) {
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        ws.write(name, format!("{name} before\n"));
    }
    let d = Daemon::start(ws);
    d.turn_start("s", "the bad turn");
    for name in ["a.txt", "b.txt", "c.txt"] {
        ws.write(name, format!("{name} after\n"));
    }
    ws.remove("d.txt");
    ws.write("e.txt", "new\n");
    d.turn_end("s");
    let after = snapshot(ws.root());
    (d, after)
}

/// No `.filewatchd-tmp-*` file anywhere in the workspace.
#[track_caller]
fn assert_no_temps(ws: &Workspace) {
    let temps: Vec<String> = snapshot(ws.root())
        .into_keys()
        .filter(|p| {
            p.rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with(".filewatchd-tmp-"))
        })
        .collect();
    assert!(temps.is_empty(), "temp files left in the workspace: {temps:?}");
}

#[track_caller]
fn assert_failed(reply: (u16, Value), cause: &str, reverted: bool) -> Value {
    let (status, body) = reply;
    assert_eq!(status, 503, "a failed rollback is not a success: {body:#}");
    let error = &body["error"];
    assert_eq!(error["code"], "rollback_failed", "{body:#}");
    assert_eq!(error["cause"], cause, "{body:#}");
    assert_eq!(error["reverted"], reverted, "{body:#}");
    assert!(error["path"].as_str().is_some_and(|p| !p.is_empty()), "{body:#}");
    body
}

#[test]
fn a_write_error_on_one_temp_file_changes_nothing() {
    let ws = Workspace::new();
    ws.write("big.bin", noise(3, 2_000_000));
    let (d, _) = turn_to_undo(&ws);
    d.turn_start("s", "rewrite the big file");
    ws.write("big.bin", "small now\n");
    d.turn_end("s");
    let after = snapshot(ws.root());
    // The undo's temp file for big.bin cannot be written in full (EFBIG); the others can.
    if !set_file_size_limit(d.pid, "1000000") {
        skip("prlimit cannot set the daemon's file size limit");
        return;
    }
    assert_failed(d.undo("s", json!({})), "EFBIG", true);
    assert!(set_file_size_limit(d.pid, "unlimited"));
    assert_tree_eq(&after, &snapshot(ws.root()), "the failed undo changed nothing");
    assert_no_temps(&ws);
    // Nothing happened, so the undo is still there to do.
    rollback_applied(d.undo("s", json!({})));
    assert!(ws.read("big.bin") == noise(3, 2_000_000));
}

#[test]
fn a_temp_files_sync_error_changes_nothing() {
    let ws = Workspace::new();
    let (d, after) = turn_to_undo(&ws);
    let root = ws.root().display().to_string();
    // The one syncfs(2) that makes every temp file durable before the first rename fails:
    // none of them may be installed (no file replaced by content not known to be on disk).
    let Some(strace) = syncfs_fails(d.pid, &root, "1") else {
        return;
    };
    let body = assert_failed(d.undo("s", json!({})), "EIO", true);
    assert!(strace.trace().contains("INJECTED"), "{}", strace.trace());
    strace.detach();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("nothing changed"), "{body:#}");
    assert_tree_eq(&after, &snapshot(ws.root()), "the failed undo changed nothing");
    assert_no_temps(&ws);
    // Nothing happened, so the undo is still there to do, and is done in full.
    rollback_applied(d.undo("s", json!({})));
    assert_eq!(ws.read("a.txt"), b"a.txt before\n");
    assert_eq!(ws.read("d.txt"), b"d.txt before\n");
    assert!(!ws.path("e.txt").exists());
}

#[test]
fn a_directory_entries_sync_error_is_a_failed_rollback_finished_at_the_next_start() {
    let ws = Workspace::new();
    let (d, after) = turn_to_undo(&ws);
    let root = ws.root().display().to_string();
    // The temp files are synced (the first syncfs of the root's file system); every later
    // one fails: the renames are not durable, and neither is putting them back.
    let Some(strace) = syncfs_fails(d.pid, &root, "2+") else {
        return;
    };
    assert_failed(d.undo("s", json!({})), "EIO", false);
    assert!(strace.trace().contains("INJECTED"), "{}", strace.trace());
    strace.detach();
    assert_no_temps(&ws);
    d.kill9();
    let d = Daemon::start(&ws);
    assert_tree_eq(&after, &snapshot(ws.root()), "nothing of the failed undo is left");
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "the record equals the disk: {turn:#}");
}

#[test]
fn an_error_after_some_renames_puts_every_changed_path_back() {
    let ws = Workspace::new();
    let (d, after) = turn_to_undo(&ws);
    // The first two renames (of four: three swaps and a create) go through, the third fails.
    let inject = "inject=renameat2:error=ENOSPC:when=3";
    let Some(strace) = Strace::attach(d.pid, &["-e", "trace=renameat2", "-e", inject]) else {
        return;
    };
    assert_failed(d.undo("s", json!({})), "ENOSPC", true);
    strace.detach();
    let log = cli_state_text(&ws, &["log"]);
    assert!(
        log.contains("failed: everything it changed was put back"),
        "{log}"
    );
    assert_tree_eq(
        &after,
        &snapshot(ws.root()),
        "every path the failed undo changed is back",
    );
    assert_no_temps(&ws);
    // The record equals the disk: the next turn lists nothing, and the undo can be done.
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "{turn:#}");
}

#[test]
fn when_putting_back_fails_too_the_next_start_finishes_it() {
    let ws = Workspace::new();
    let (d, after) = turn_to_undo(&ws);
    // From the third rename on, every rename fails: the undo's and its putting back's.
    let inject = "inject=renameat2:error=EROFS:when=3+";
    let Some(strace) = Strace::attach(d.pid, &["-e", "trace=renameat2", "-e", inject]) else {
        return;
    };
    let body = assert_failed(d.undo("s", json!({})), "EROFS", false);
    strace.detach();
    let paths = body["error"]["paths"].as_array().unwrap();
    let state_of = |path: &str| {
        paths
            .iter()
            .find(|p| p["path"] == path)
            .map(|p| p["state"].clone())
    };
    assert_eq!(paths.len(), 5, "every path of the plan is named: {body:#}");
    // Renames 1-2 (a, b) went through and cannot be put back; c and d never changed; e was
    // deleted (no rename) and cannot be re-created.
    for (path, state) in [
        ("a.txt", "rolled_back"),
        ("b.txt", "rolled_back"),
        ("c.txt", "as_before"),
        ("d.txt", "as_before"),
        ("e.txt", "rolled_back"),
    ] {
        assert_eq!(state_of(path), Some(json!(state)), "{path}: {body:#}");
    }
    assert_no_temps(&ws);
    let failed = &d.status()["failed_rollbacks"];
    assert_eq!(
        failed.as_array().map(Vec::len),
        Some(1),
        "status says so: {failed:#}"
    );
    let text = cli_state_text(&ws, &["status"]);
    assert!(
        text.contains("next start of the daemon finishes putting them back"),
        "{text}"
    );

    d.kill9();
    let d = Daemon::start(&ws);
    assert_tree_eq(&after, &snapshot(ws.root()), "the start-up finished putting back");
    assert_eq!(d.status()["failed_rollbacks"], json!([]));
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "the record equals the disk: {turn:#}");
}

#[test]
fn a_rename_that_did_not_happen_is_not_done() {
    let ws = Workspace::new();
    let (d, after) = turn_to_undo(&ws);
    // The file system answers success without renaming (a lying or failing device).
    let inject = "inject=renameat2:retval=0:when=1";
    let Some(strace) = Strace::attach(d.pid, &["-e", "trace=renameat2", "-e", inject]) else {
        return;
    };
    assert_failed(d.undo("s", json!({})), "not_at_target", true);
    strace.detach();
    assert_tree_eq(&after, &snapshot(ws.root()), "nothing changed");
    assert_no_temps(&ws);
}

/// Polls until a thread of `pid` is stopped at the entry of renameat2 (syscall 316 on
/// x86_64), where strace's `delay_enter` holds it.
fn wait_in_rename(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
        for task in tasks.flatten() {
            let syscall = std::fs::read_to_string(task.path().join("syscall")).unwrap_or_default();
            if syscall.starts_with("316 ") {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(5)); // polling a condition, not synchronising
    }
    false
}

/// A turn that rewrote `a.txt`, and its undo with the rename held (strace `delay_enter`) while
/// `write` rewrites the file; the undo's answer and what is left.
fn undo_racing(write: &str) -> Option<(Workspace, Daemon, u16, Value)> {
    if !cfg!(target_arch = "x86_64") {
        skip("the syscall number checked is x86_64's");
        return None;
    }
    let ws = Workspace::new();
    ws.write("a.txt", "before\n");
    let d = Daemon::start(&ws);
    d.turn_start("s", "edit");
    ws.write("a.txt", "the turn's\n");
    d.turn_end("s");
    let inject = "inject=renameat2:delay_enter=5000000:when=1";
    let strace = Strace::attach(d.pid, &["-e", "trace=renameat2", "-e", inject])?;
    let undo = d.post_detached("/v1/sessions/s/undo", json!({}));
    assert!(wait_in_rename(d.pid), "the undo reached its rename");
    ws.sh(write);
    let (status, body) = undo.recv().unwrap().expect("the undo answered");
    strace.detach();
    Some((ws, d, status, body))
}

#[track_caller]
fn assert_their_bytes_survive(ws: &Workspace, d: &Daemon, status: u16, body: &Value, bytes: &[u8]) {
    assert_eq!(
        status, 409,
        "a conflict found while applying refuses an abort: {body:#}"
    );
    assert_eq!(body["error"]["code"], "conflicts", "{body:#}");
    assert_eq!(ws.read("a.txt"), bytes, "their bytes are at their path");
    assert_no_temps(ws);
    // And they are recorded at the next marker, as someone else's.
    d.turn_start("s", "next");
    let latest = latest(&d.history("a.txt")).clone();
    assert_eq!(latest["hash"], blake3_hex(bytes), "{latest:#}");
    assert_eq!(latest["origin"], "outside", "{latest:#}");
}

#[test]
fn a_write_racing_the_final_rename_survives() {
    let Some((ws, d, status, body)) = undo_racing("printf \"someone else's bytes\\n\" > a.txt") else {
        return;
    };
    assert_their_bytes_survive(&ws, &d, status, &body, b"someone else's bytes\n");
}

#[test]
fn a_same_size_write_in_place_that_restores_the_mtime_survives_too() {
    // What `rsync --inplace --times` does: same size, the old mtime put back.
    let script = "mt=$(stat -c %.9Y a.txt); printf 'EXTERNAL!!\\n' | dd of=a.txt conv=notrunc status=none; touch -d @$mt a.txt";
    let Some((ws, d, status, body)) = undo_racing(script) else {
        return;
    };
    assert_their_bytes_survive(&ws, &d, status, &body, b"EXTERNAL!!\n");
}

#[test]
fn a_users_file_named_like_a_temp_file_is_never_removed() {
    let ws = Workspace::new();
    ws.write("a.txt", "before\n");
    // The names the first rollback's temp files once had.
    ws.write(".filewatchd-tmp-1-0", "mine\n");
    ws.write(".filewatchd-tmp-1-0r", "mine too\n");
    let d = Daemon::start(&ws);
    d.turn_start("s", "edit");
    ws.write("a.txt", "after\n");
    d.turn_end("s");
    rollback_applied(d.undo("s", json!({})));
    assert_eq!(ws.read("a.txt"), b"before\n");
    assert_eq!(ws.read(".filewatchd-tmp-1-0"), b"mine\n");
    assert_eq!(ws.read(".filewatchd-tmp-1-0r"), b"mine too\n");
    assert_eq!(latest(&d.history(".filewatchd-tmp-1-0"))["kind"], "file");
}

/// The workspace's temp files.
fn temps_in(ws: &Workspace) -> Vec<String> {
    snapshot(ws.root())
        .into_keys()
        .filter(|p| p.starts_with(".filewatchd-tmp-"))
        .collect()
}

#[test]
fn temp_files_that_cannot_be_removed_are_never_recorded_and_go_at_the_next_start() {
    let ws = Workspace::new();
    let (d, after) = turn_to_undo(&ws);
    // A file system gone read-only for renames and unlinks: temp files stay behind.
    let args = [
        "-e",
        "trace=renameat2,unlink,unlinkat",
        "-e",
        "inject=renameat2:error=EROFS:when=3+",
        "-e",
        "inject=unlink,unlinkat:error=EROFS",
    ];
    let Some(strace) = Strace::attach(d.pid, &args) else {
        return;
    };
    let error = assert_failed(d.undo("s", json!({})), "EROFS", false);
    strace.detach();
    assert!(!temps_in(&ws).is_empty(), "the fault kept some temp files");
    let note = error["error"]["temps_left"].as_str().unwrap_or_default();
    assert!(note.contains(".filewatchd-tmp-"), "the answer says so: {error:#}");
    d.turn_start("s", "after the failure");
    ws.write("f.txt", "the agent goes on\n");
    let turn = d.turn_end("s");
    assert_eq!(
        changed_paths(&turn),
        set(["f.txt"]),
        "temps are not versions: {turn:#}"
    );

    d.kill9();
    let d = Daemon::start(&ws);
    assert!(temps_in(&ws).is_empty(), "{:?}", temps_in(&ws));
    let mut expected = after;
    expected.extend(snapshot(ws.root()).into_iter().filter(|(p, _)| p == "f.txt"));
    assert_tree_eq(
        &expected,
        &snapshot(ws.root()),
        "the start-up finished putting back",
    );
    drop(d);
}

/// The undo is done, but the temp files its exchanges left could not be unlinked: the 200
/// answer (and the CLI) says what the disk holds besides the undone paths.
#[test]
fn an_applied_undo_says_which_temp_files_it_could_not_remove() {
    let ws = Workspace::new();
    ws.write("a.txt", "before\n");
    let d = Daemon::start(&ws);
    d.turn_start("s", "rewrites a file: its undo unlinks nothing but temp files");
    ws.write("a.txt", "after\n");
    d.turn_end("s");
    let root = ws.root().display().to_string();
    let args = [
        "-P",
        &root,
        "-e",
        "trace=unlink,unlinkat",
        "-e",
        "inject=unlink,unlinkat:error=EROFS",
    ];
    let Some(strace) = Strace::attach(d.pid, &args) else {
        return;
    };
    let out = cli_state(&ws, &["undo"]);
    strace.detach();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = temps_in(&ws);
    assert!(!left.is_empty(), "the fault kept temp files: {stdout}");
    assert!(
        stdout.contains("temp files left: temp files named .filewatchd-tmp-"),
        "{stdout}"
    );
    let tag = left[0]
        .trim_start_matches(".filewatchd-tmp-")
        .rsplit_once('-')
        .map(|(t, _)| t);
    assert!(
        stdout.contains(&format!("{}-*", tag.unwrap_or("?"))),
        "{left:?} {stdout}"
    );
    assert_eq!(ws.read("a.txt"), b"before\n");
    d.kill9();
    let _d = Daemon::start(&ws);
    assert!(temps_in(&ws).is_empty(), "{:?}", temps_in(&ws));
}

#[test]
fn a_root_moved_away_mid_rollback_is_put_back_and_refused() {
    if !cfg!(target_arch = "x86_64") {
        skip("the syscall number checked is x86_64's");
        return;
    }
    let ws = Workspace::new();
    let (d, after) = turn_to_undo(&ws);
    // The second rename is held for 3 s: the root moves away meanwhile.
    let inject = "inject=renameat2:delay_enter=3000000:when=2";
    let Some(strace) = Strace::attach(d.pid, &["-e", "trace=renameat2", "-e", inject]) else {
        return;
    };
    let undo = d.post_detached("/v1/sessions/s/undo", json!({"on_conflict": "force"}));
    assert!(wait_in_rename(d.pid), "the undo reached its second rename");
    let moved = ws.root().with_extension("moved");
    std::fs::rename(ws.root(), &moved).unwrap();
    std::fs::create_dir(ws.root()).unwrap();
    let (status, body) = undo.recv().unwrap().expect("the undo answered");
    strace.detach();
    let moved_now = snapshot(&moved);
    std::fs::remove_dir_all(&moved).unwrap();
    assert_eq!(status, 503, "{body:#}");
    assert_eq!(body["error"]["code"], "workspace_lost", "{body:#}");
    assert_tree_eq(&after, &moved_now, "the moved tree is as it was before the undo");
    assert!(
        snapshot(ws.root()).is_empty(),
        "nothing is written in the new root"
    );
}

#[test]
fn a_rollback_the_index_cannot_record_yet_is_recorded_as_its_own_later() {
    let ws = Workspace::new();
    let (d, _) = turn_to_undo(&ws);
    // The undo's plan is journaled (the first WAL fsync), then the index fails (EIO).
    let wal = d.state_dir.join("index.sqlite-wal").display().to_string();
    let args = [
        "-P",
        &wal,
        "-e",
        "trace=fsync,fdatasync",
        "-e",
        "inject=fsync,fdatasync:error=EIO:when=2+",
    ];
    let Some(strace) = Strace::attach(d.pid, &args) else {
        return;
    };
    let (status, body) = d.undo("s", json!({}));
    strace.detach();
    assert_eq!(status, 503, "{body:#}");
    assert_eq!(body["error"]["code"], "storage_error", "{body:#}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("applied on disk"),
        "the answer says what happened: {message}"
    );
    assert_eq!(ws.read("a.txt"), b"a.txt before\n");
    assert!(!ws.path("e.txt").exists());
    // Once the index takes writes again, the rollback is recorded as the rollback it was:
    // its writes are its own (no conflict for its redo), never someone else's.
    let latest = latest(&d.history("a.txt")).clone();
    assert_eq!(latest["origin"], "rollback", "{latest:#}");
    rollback_applied(d.redo("s", json!({})));
    assert_eq!(ws.read("a.txt"), b"a.txt after\n");
    d.turn_start("s", "next");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "nothing is left to record: {turn:#}");
}

#[test]
fn temp_files_a_moved_directory_took_along_are_removed() {
    if !cfg!(target_arch = "x86_64") {
        skip("the syscall number checked is x86_64's");
        return;
    }
    let ws = Workspace::new();
    for name in ["a.txt", "sub/x.txt", "sub/y.txt"] {
        ws.write(name, format!("{name} before\n"));
    }
    let d = Daemon::start(&ws);
    d.turn_start("s", "edit");
    for name in ["a.txt", "sub/x.txt", "sub/y.txt"] {
        ws.write(name, format!("{name} after\n"));
    }
    d.turn_end("s");
    // Held at its second rename, the undo has sub/'s temp files written; sub/ moves away.
    let inject = "inject=renameat2:delay_enter=3000000:when=2";
    let Some(strace) = Strace::attach(d.pid, &["-e", "trace=renameat2", "-e", inject]) else {
        return;
    };
    let undo = d.post_detached("/v1/sessions/s/undo", json!({"on_conflict": "force"}));
    assert!(wait_in_rename(d.pid), "the undo reached its second rename");
    std::fs::rename(ws.path("sub"), ws.path("moved")).unwrap();
    let (_, body) = undo.recv().unwrap().expect("the undo answered");
    strace.detach();
    assert!(
        !listed_paths(&body, "skipped").is_empty() || body["error"].is_object(),
        "{body:#}"
    );
    assert_no_temps(&ws);
}

/// strace on the daemon failing its `syncfs` calls on the root's file system with EIO, the
/// `when`-th on (strace's `when=` syntax); `None` where strace cannot attach.
fn syncfs_fails(pid: u32, root: &str, when: &str) -> Option<Strace> {
    let inject = format!("inject=syncfs:error=EIO:when={when}");
    Strace::attach(pid, &["-P", root, "-e", "trace=syncfs", "-e", &inject])
}

/// A rollback large enough to install on several threads, with a rename failing on each of
/// them (strace counts each thread's calls on its own): the rollback fails, and whatever
/// putting back meets too, the tree is as before it once the daemon has started again.
#[test]
fn rename_errors_in_a_parallel_install_put_every_path_back() {
    let ws = Workspace::new();
    let names: Vec<String> = (0..1200).map(|i| format!("d{}/f{i}.txt", i % 12)).collect();
    for name in &names {
        ws.write(name, format!("{name} before\n"));
    }
    let d = Daemon::start(&ws);
    d.turn_start("s", "rewrite 1,200 files");
    for name in &names {
        ws.write(name, format!("{name} after\n"));
    }
    d.turn_end("s");
    let after = snapshot(ws.root());
    let inject = "inject=renameat2:error=EIO:when=20";
    let Some(strace) = Strace::attach(d.pid, &["-e", "trace=renameat2", "-e", inject]) else {
        return;
    };
    let (status, body) = d.undo("s", json!({}));
    assert!(strace.trace().contains("INJECTED"), "{}", strace.trace());
    strace.detach();
    assert_eq!(status, 503, "a failed rollback is not a success: {body:#}");
    assert_eq!(body["error"]["cause"], "EIO", "{body:#}");
    d.kill9();
    let d = Daemon::start(&ws);
    assert_tree_eq(
        &after,
        &snapshot(ws.root()),
        "every path the failed undo changed is back",
    );
    assert_no_temps(&ws);
    assert_eq!(d.status()["failed_rollbacks"], json!([]));
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "the record equals the disk: {turn:#}");
}
