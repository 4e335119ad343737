//! G12: a store that cannot take a version (file size limit, disk full) never
//! drops it. The path stays pending and is retried; a turn marker that cannot record every
//! write made before it answers 503 `storage_error` naming the path, never 200 without it;
//! once the store takes writes again the next marker succeeds, the version in its turn. An index
//! that cannot be opened says which step failed, and the log says the system call, file and
//! error.

use crate::common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// The turn end, refused while `path` cannot be stored.
#[track_caller]
fn assert_turn_end_refused(d: &Daemon, path: &str, cause: &str) {
    let (status, body) = d.post_empty("/v1/sessions/s/turns/current/end");
    assert_eq!(status, 503, "turn end must not succeed without {path}: {body:#}");
    assert_eq!(body["error"]["code"], "storage_error", "{body:#}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(path) && message.contains(cause), "{message}");
    let storage = &d.status()["watcher"]["storage_error"];
    assert_eq!(storage["cause"], cause, "{storage:#}");
    assert!(
        storage["paths"].as_array().unwrap().contains(&json!(path)),
        "{storage:#}"
    );
}

/// After the fault is gone: the turn ends with every write, each attributed to it.
#[track_caller]
fn assert_turn_end_complete(d: &Daemon, ws: &Workspace, paths: &[&str]) -> Value {
    let turn = d.turn_end("s");
    assert_eq!(changed_paths(&turn), set(paths.iter().copied()), "{turn:#}");
    for path in paths {
        let latest = latest(&d.history(path)).clone();
        assert_eq!(latest["origin"], "turn", "{latest:#}");
        assert_eq!(latest["turn"], 1, "{latest:#}");
        assert_eq!(latest["hash"], blake3_hex(&ws.read(path)), "{latest:#}");
    }
    let status = d.status();
    assert!(status["watcher"]["storage_error"].is_null(), "{status:#}");
    assert!(
        status["watcher"]["storage_errors"].as_u64() >= Some(1),
        "{status:#}"
    );
    turn
}

#[test]
fn a_file_size_limit_on_the_daemon_leaves_the_version_pending_not_lost() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let d = Daemon::start(&ws);
    d.turn_start("s", "big output");
    if !set_file_size_limit(d.pid, "1000000") {
        skip("prlimit cannot set the daemon's file size limit");
        return;
    }
    // Incompressible and over the limit: its blob file cannot be written (EFBIG).
    ws.write("big.bin", noise(7, 3_000_000));
    ws.write("small.txt", "fits\n");
    assert_turn_end_refused(&d, "big.bin", "EFBIG");
    // Retried, still refused: nothing is answered as done while the fault lasts.
    assert_turn_end_refused(&d, "big.bin", "EFBIG");

    assert!(set_file_size_limit(d.pid, "unlimited"));
    assert_turn_end_complete(&d, &ws, &["big.bin", "small.txt"]);
    let (status, bytes) = d.get_bytes(&format!(
        "/v1/content?path=big.bin&seq={}",
        latest(&d.history("big.bin"))["seq"]
    ));
    assert_eq!(status, 200);
    assert!(bytes == ws.read("big.bin"), "the stored content is the file's");
}

#[test]
fn a_full_disk_under_the_store_leaves_writes_pending_until_space_returns() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let setup = "mount -t tmpfs -o size=8m tmpfs \"$STATE\"";
    let Some(d) = Daemon::start_in_mount_namespace(&ws, setup, &[]) else {
        return;
    };
    d.turn_start("s", "fill the disk");
    let state = d.state_dir.display().to_string();
    // Fill the store's file system (seen through the daemon's namespace) to the last block.
    d.in_namespace(&format!(
        "dd if=/dev/zero of={state}/filler bs=64k 2>/dev/null || true; sync"
    ));
    ws.write("big.bin", noise(11, 400_000));
    assert_turn_end_refused(&d, "big.bin", "ENOSPC");
    // The agent goes on: a write after the refused marker is pending with the first.
    ws.write("later.txt", "written while the disk was full\n");

    d.in_namespace(&format!("rm {state}/filler"));
    assert_turn_end_complete(&d, &ws, &["big.bin", "later.txt"]);
}

#[test]
fn an_io_error_in_the_index_rolls_the_batch_back_and_keeps_it_pending() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let mut d = Daemon::start(&ws);
    d.turn_start("s", "index fails");
    // SQLite writes its WAL with pwrite64; blob files are written with write(2).
    let Some(strace) = Strace::attach(
        d.pid,
        &["-e", "trace=pwrite64", "-e", "inject=pwrite64:error=EIO"],
    ) else {
        return;
    };
    ws.write("s.txt", "small: its content goes into the index\n");
    assert_turn_end_refused(&d, "s.txt", "SQLITE_IOERR");
    // The step that failed, not only "disk I/O error".
    let storage = &d.status()["watcher"]["storage_error"];
    let message = storage["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("while writing a file of the index (SQLite code 778)"),
        "{storage:#}"
    );
    assert!(strace.trace().contains("INJECTED"), "{}", strace.trace());
    strace.detach();
    d.assert_alive();
    assert_turn_end_complete(&d, &ws, &["s.txt"]);
}

#[test]
fn an_index_that_cannot_open_its_shared_memory_says_which_file_and_why() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let shm = ws.state_dir().join("index.sqlite-shm");
    let shm = shm.to_str().expect("a UTF-8 temp path");
    // SQLite sizes its `-shm` with ftruncate as it opens it; that call fails.
    let args = ["-f", "-o", "/dev/null", "-e", "trace=ftruncate", "-e"];
    let mut cmd = ws.wrapped_serve(
        "strace",
        &[&args[..], &["inject=ftruncate:error=EIO", "-P", shm]].concat(),
    );
    let log = tempfile::NamedTempFile::new().unwrap();
    let said = || std::fs::read_to_string(log.path()).unwrap_or_default();
    cmd.stdout(std::process::Stdio::null())
        .stderr(log.reopen().unwrap());
    let Ok(mut daemon) = cmd.spawn() else {
        return skip("strace is not installed");
    };
    let exited = poll_until(Duration::from_secs(60), || daemon.try_wait().unwrap());
    let Some(status) = exited else {
        daemon.kill().ok();
        panic!("the daemon started on an index it cannot open: {}", said());
    };
    let said = said();
    assert_eq!(status.code(), Some(1), "{said}");
    // The error, once (the integrity check's thread may still log after it).
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("filewatchd: ")).collect();
    assert_eq!(
        errors,
        [
            "filewatchd: index: disk I/O error while opening the index's shared-memory file (-shm) (SQLite code 4618)"
        ],
        "{said}"
    );
    let call = format!("ftruncate({shm}) - {}", std::io::Error::from_raw_os_error(5));
    assert!(
        said.lines().any(|l| l.contains("WARN") && l.contains(&call)),
        "{said}"
    );
}
