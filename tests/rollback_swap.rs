//! A rollback racing a directory swapped for a symlink (G7, G12): nothing of filewatchd's is
//! left in the user's tree once the request has answered, wherever the directory went, and
//! the answer says what the disk holds: a put-back step the symlink kept from its path is not
//! put back, the failed rollback stays in `failed_rollbacks`, and the next start finishes it
//! once the directory is back.

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use serde_json::json;

const FILES: usize = 10;

fn file(i: usize) -> String {
    format!("dir/f{i}.txt")
}

/// Every `.filewatchd-tmp-*` file beneath `dir`.
fn temps_beneath(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_keys()
        .filter(|p| {
            p.rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with(".filewatchd-tmp-"))
        })
        .collect()
}

const RENAMEAT2: i32 = 316;
/// The held `syncfs` that strace fails: replaced by no call.
const FAILED_CALL: i32 = -1;

/// A turn that rewrote every file of `dir/`, and a directory outside the root to move it to.
struct Swapped {
    ws: Workspace,
    daemon: Daemon,
    after: Tree,
    _away: tempfile::TempDir,
    moved: std::path::PathBuf,
}

fn turn_in_dir() -> Swapped {
    let ws = Workspace::new();
    for i in 0..FILES {
        ws.write(file(i), format!("before {i}\n"));
    }
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", "edit dir");
    for i in 0..FILES {
        ws.write(file(i), format!("after {i}\n"));
    }
    daemon.turn_end("s");
    let after = snapshot(ws.root());
    let away = tempfile::Builder::new().prefix("fwd-away-").tempdir().unwrap();
    let moved = away.path().join("dir");
    Swapped {
        ws,
        daemon,
        after,
        _away: away,
        moved,
    }
}

impl Swapped {
    fn rolled_back(&self) -> bool {
        (0..FILES).all(|i| self.ws.read(file(i)) == format!("before {i}\n").into_bytes())
    }

    /// An undo with skip, held (strace `ARGS`) until a thread waits in system call `nr`; then
    /// `dir/` moves out of the root and a symlink to it takes its place. The answer.
    fn undo_swapping(&self, args: &[&str], nr: i32, installed: bool) -> Option<(u16, serde_json::Value)> {
        let strace = Strace::attach(self.daemon.pid, args)?;
        let undo = self
            .daemon
            .post_detached("/v1/sessions/s/undo", json!({"on_conflict": "skip"}));
        // A call held after the renames: the files show the undo's content first.
        if installed {
            let shown = poll_until(Duration::from_secs(30), || self.rolled_back().then_some(()));
            assert!(shown.is_some(), "the undo never renamed its files in");
        }
        assert!(
            Strace::wait_in_syscall(self.daemon.pid, nr),
            "the undo reached system call {nr}"
        );
        std::fs::rename(self.ws.path("dir"), &self.moved).unwrap();
        std::os::unix::fs::symlink(&self.moved, self.ws.path("dir")).unwrap();
        let reply = undo.recv().unwrap().expect("the undo answered");
        strace.detach();
        Some(reply)
    }
}

/// The undo's first rename is held; meanwhile `dir/` moves out of the root and a symlink to it
/// takes its place. Its temp files went with it: they are removed before the answer, through
/// the directory the undo wrote them in. Nothing could be rolled back, and the answer says so.
#[test]
fn temp_files_of_a_directory_swapped_for_a_symlink_are_removed_before_the_answer() {
    if !cfg!(target_arch = "x86_64") {
        skip("the syscall number checked is x86_64's");
        return;
    }
    let s = turn_in_dir();
    let inject = "inject=renameat2:delay_enter=10000000:when=1";
    let Some((status, body)) = s.undo_swapping(&["-e", "trace=renameat2", "-e", inject], RENAMEAT2, false)
    else {
        return;
    };
    assert_eq!(temps_beneath(&s.moved), Vec::<String>::new(), "{body:#}");
    assert_eq!(temps_beneath(s.ws.root()), Vec::<String>::new(), "{body:#}");
    assert_eq!(status, 200, "{body:#}");
    for i in 0..FILES {
        let skipped = listed(&body, "skipped", &file(i));
        assert!(skipped["code"].is_string(), "{body:#}");
        let now = std::fs::read(s.moved.join(format!("f{i}.txt"))).unwrap();
        assert_eq!(now, format!("after {i}\n").into_bytes(), "skipped, so as it was");
    }
}

/// The undo's renames are done and the sync of their directory entries is held, then fails
/// (EIO): every path must be put back, but `dir/` is a symlink by then. Those put-back steps
/// are not done: the answer does not say "nothing changed", it lists them as unreachable,
/// and the rollback is a failed one; the next start, with `dir/` back, finishes putting back.
#[test]
fn put_back_steps_a_symlink_kept_from_their_paths_are_not_put_back() {
    if !cfg!(target_arch = "x86_64") {
        skip("the syscall number checked is x86_64's");
        return;
    }
    let s = turn_in_dir();
    let root = s.ws.root().display().to_string();
    let inject = "inject=syncfs:error=EIO:delay_enter=5000000:when=2";
    let args = ["-P", &root, "-e", "trace=syncfs", "-e", inject];
    let Some((status, body)) = s.undo_swapping(&args, FAILED_CALL, true) else {
        return;
    };
    assert_eq!(temps_beneath(&s.moved), Vec::<String>::new(), "{body:#}");
    assert_eq!(status, 503, "{body:#}");
    assert_eq!(body["error"]["code"], "rollback_failed", "{body:#}");
    assert_eq!(body["error"]["reverted"], false, "{body:#}");
    let paths = body["error"]["paths"].as_array().cloned().unwrap_or_default();
    for i in 0..FILES {
        let now = std::fs::read(s.moved.join(format!("f{i}.txt"))).unwrap();
        assert_eq!(now, format!("before {i}\n").into_bytes(), "still rolled back");
        let listed = paths.iter().find(|p| p["path"] == file(i).as_str());
        assert_eq!(
            listed.map(|p| &p["state"]),
            Some(&json!("unreachable")),
            "{body:#}"
        );
    }
    let failed = &s.daemon.status()["failed_rollbacks"];
    assert_eq!(failed.as_array().map(Vec::len), Some(1), "{failed:#}");

    // The directory comes back while the daemon is down; the start finishes putting back.
    let Swapped {
        ws,
        daemon,
        after,
        moved,
        ..
    } = s;
    daemon.kill9();
    std::fs::remove_file(ws.path("dir")).unwrap();
    std::fs::rename(&moved, ws.path("dir")).unwrap();
    let d = Daemon::start(&ws);
    assert_tree_eq(&after, &snapshot(ws.root()), "the start-up finished putting back");
    assert_eq!(d.status()["failed_rollbacks"], json!([]));
    // The user's swap is theirs (the files absent from `dir/`); the undo's content is not.
    for i in 0..FILES {
        let history = d.history(&file(i));
        let theirs = versions(&history)
            .iter()
            .filter(|v| v["origin"] == "outside" && v["kind"] == "file")
            .count();
        assert_eq!(theirs, 0, "{}: {history:#}", file(i));
    }
    d.turn_start("s", "nothing");
    let turn = d.turn_end("s");
    assert!(changes(&turn).is_empty(), "the record equals the disk: {turn:#}");
}

/// A forced rollback to before the session's first turn (which removes `swap`, a file its
/// second turn made and the user then replaced by a symlink) whose sync of directory entries
/// fails (EIO) once its files show their old content; meanwhile the user moves `dir/` to
/// `swap` and leaves a symlink `dir -> swap`. Neither the answer nor the next start changes
/// the user's arrangement or calls the rollback finished: it stays failed, and once the user
/// has put `dir/` back, a start finishes putting back, the symlink `swap` included.
#[test]
fn a_forced_rollback_is_put_back_only_once_the_users_directory_is_back() {
    if !cfg!(target_arch = "x86_64") {
        skip("the syscall number checked is x86_64's");
        return;
    }
    let s = turn_in_dir();
    s.daemon.turn_start("s", "make swap");
    s.ws.write("swap", "made by the turn\n");
    s.daemon.turn_end("s");
    std::fs::remove_file(s.ws.path("swap")).unwrap();
    std::os::unix::fs::symlink("nowhere", s.ws.path("swap")).unwrap();
    let seen = poll_until(Duration::from_secs(30), || {
        let (status, history) = s.daemon.history_reply("swap");
        let last = versions(&history).last().map(|v| v["kind"] == "symlink");
        (status == 200 && last == Some(true)).then_some(())
    });
    assert!(seen.is_some(), "the symlink was recorded");
    let after = snapshot(s.ws.root());
    let root = s.ws.root().display().to_string();
    let inject = "inject=syncfs:error=EIO:delay_enter=5000000:when=2";
    let args = ["-P", &root, "-e", "trace=syncfs", "-e", inject];
    let Some(strace) = Strace::attach(s.daemon.pid, &args) else {
        return;
    };
    let body = json!({"to": "before", "turn": 1, "on_conflict": "force"});
    let undo = s.daemon.post_detached("/v1/sessions/s/rollback", body);
    let shown = poll_until(Duration::from_secs(30), || s.rolled_back().then_some(()));
    assert!(shown.is_some(), "the undo never renamed its files in");
    assert!(
        Strace::wait_in_syscall(s.daemon.pid, FAILED_CALL),
        "the sync was held"
    );
    std::fs::rename(s.ws.path("dir"), s.ws.path("swap")).unwrap();
    std::os::unix::fs::symlink("swap", s.ws.path("dir")).unwrap();
    let (status, body) = undo.recv().unwrap().expect("the undo answered");
    strace.detach();
    assert_eq!(status, 503, "{body:#}");
    assert_eq!(body["error"]["reverted"], false, "{body:#}");
    let arranged = snapshot(s.ws.root());

    // A start with the user's arrangement in place changes none of it.
    let Swapped { ws, daemon, .. } = s;
    daemon.kill9();
    let d = Daemon::start(&ws);
    assert_tree_eq(
        &arranged,
        &snapshot(ws.root()),
        "the user's arrangement is theirs",
    );
    let failed = &d.status()["failed_rollbacks"];
    assert_eq!(failed.as_array().map(Vec::len), Some(1), "{failed:#}");

    // The user puts `dir/` back; the next start finishes: the symlink `swap` is back too.
    d.kill9();
    std::fs::remove_file(ws.path("dir")).unwrap();
    std::fs::rename(ws.path("swap"), ws.path("dir")).unwrap();
    let d = Daemon::start(&ws);
    assert_tree_eq(&after, &snapshot(ws.root()), "the start-up finished putting back");
    assert_eq!(d.status()["failed_rollbacks"], json!([]));
}
