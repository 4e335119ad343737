//! A blob directory the store creates is durable before a row names it (else a power cut can
//! leave a committed row naming a blob whose directory entry is gone): the `mkdir` of
//! `blobs/ab` is followed by an fsync of `blobs/` itself, seen in the real daemon's system
//! calls (strace attached to it).

use crate::common::*;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `strace` attached to a running process; detached (SIGINT) and reaped when dropped.
struct Strace {
    child: std::process::Child,
}

impl Strace {
    /// Attaches to every thread of `pid`, tracing directory creation and fsyncs into `out`.
    /// `Err` says why it cannot (no strace, ptrace not allowed): the test then skips.
    fn attach(pid: u32, out: &Path) -> Result<Strace, String> {
        let log = tempfile::tempfile().map_err(|e| e.to_string())?;
        let child = Command::new("strace")
            .args(["-f", "-y", "-e", "trace=fsync,fdatasync,mkdir,mkdirat", "-o"])
            .arg(out)
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.try_clone().map_err(|e| e.to_string())?)
            .spawn()
            .map_err(|e| format!("cannot run strace: {e}"))?;
        let mut strace = Strace { child };
        let read_log =
            || std::fs::read_to_string(format!("/proc/self/fd/{}", log.as_raw_fd())).unwrap_or_default();
        let until = Instant::now() + Duration::from_secs(30);
        while !read_log().contains("attached") {
            if let Ok(Some(status)) = strace.child.try_wait() {
                return Err(format!("strace cannot attach ({status}): {}", read_log()));
            }
            assert!(Instant::now() < until, "strace never attached: {}", read_log());
            std::thread::sleep(Duration::from_millis(20)); // polling a condition, not synchronising
        }
        Ok(strace)
    }

    /// Detaches and waits until strace has written everything.
    fn detach(mut self) {
        let sent = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "cannot stop strace");
        self.child.wait().expect("wait for strace");
    }
}

impl Drop for Strace {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The thread id a line of `strace -f -o` begins with.
fn tid(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or_default()
}

#[test]
fn a_new_blob_directory_is_made_durable_by_an_fsync_of_blobs() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let traced = tempfile::tempdir().expect("tempdir");
    let out = traced.path().join("trace");
    let strace = match Strace::attach(daemon.pid, &out) {
        Ok(strace) => strace,
        Err(why) => {
            skip(&why);
            return;
        }
    };
    // Incompressible and over the inline limit: stored as a file in blobs/<two hex digits>/.
    let bytes = noise(14, 300_000);
    daemon.turn_start("s1", "a large file");
    ws.write("big.bin", &bytes);
    let turn = daemon.turn_end("s1");
    assert_eq!(changed_paths(&turn), set(["big.bin"]));
    strace.detach();

    let trace = std::fs::read_to_string(&out).expect("read the trace");
    let subdir = format!("blobs/{}\"", &blake3_hex(&bytes)[..2]);
    let lines: Vec<&str> = trace.lines().collect();
    let made = lines
        .iter()
        .position(|l| l.contains("mkdir") && l.contains(&subdir))
        .unwrap_or_else(|| panic!("no mkdir of {subdir} traced:\n{trace}"));
    let blobs = std::fs::canonicalize(ws.state_dir().join("blobs")).expect("blobs dir");
    let fd_of_blobs = format!("<{}>", blobs.display());
    let synced = lines[made..]
        .iter()
        .any(|l| tid(l) == tid(lines[made]) && l.contains("fsync(") && l.contains(&fd_of_blobs));
    assert!(
        synced,
        "the mkdir of {subdir} is not followed by an fsync of {fd_of_blobs}:\n{trace}"
    );
}
