//! Which process a pid names now: its owner, its program and its start time. A pid read from
//! a file is signalled only once it is proved to be the very daemon that wrote it (this
//! user's, a filewatchd, started when it said), through a pidfd taken before the checks (where the OS has one), so
//! a pid that exits and is reused meanwhile is never hit.

use crate::platform;

/// When `pid` started (`platform::process_start_time`): with the pid, it names one process
/// for as long as the machine runs. `None` where the OS does not say.
pub fn start_time(pid: u32) -> Option<u64> {
    platform::process_start_time(pid)
}

/// Whether the process `pid` that started at `started` (when known) is gone or going: no such
/// process, another one under its pid, a zombie, or one the kernel is tearing down (`kill -9`
/// returns before that is done, and until it is, the dying process still holds its locks).
/// Where the OS cannot tell the last three, a pid that exists is not gone.
pub fn is_gone_or_going(pid: u32, started: Option<u64>) -> bool {
    platform::process_gone_or_going(pid, started)
}

/// Whether `pid` has exited and its threads let go of its files (`platform::process_exited`);
/// `None` where the OS cannot tell a zombie from a running process.
pub fn has_exited(pid: u32) -> Option<bool> {
    platform::process_exited(pid)
}

/// Whether a pid can be proved to be this user's daemon here, so that `terminate` may signal
/// it: not without `/proc` (docs/platforms.md).
pub const CAN_PROVE: bool = platform::PROVES_PROCESSES;

/// This process's start time.
pub fn own_start_time() -> Option<u64> {
    start_time(std::process::id())
}

/// What `terminate` did.
#[cfg_attr(windows, allow(dead_code))]
#[derive(Debug, PartialEq, Eq)]
pub enum Signalled {
    Sent,
    /// It had exited already.
    Gone,
}

/// Sends `SIGTERM` to `pid` once it is proved to be this user's filewatchd that started at
/// `started`; else says why not and sends nothing.
#[cfg(unix)]
pub fn terminate(pid: u32, started: Option<u64>) -> Result<Signalled, String> {
    use platform::PinnedProcess;
    use rustix::process::{Pid, Signal};
    let Some(target) = Pid::from_raw(pid as i32) else {
        return Err(format!("{pid} is not a process id"));
    };
    let pinned = match PinnedProcess::open(target) {
        Ok(pinned) => pinned,
        Err(crate::platform::sys::io::Errno::SRCH) => return Ok(Signalled::Gone),
        // No pidfd (a kernel older than 5.3, or another OS): checked, then signalled by pid.
        Err(_) => None,
    };
    prove_ours(pid, started)?;
    let sent = match &pinned {
        Some(pinned) => pinned.signal(Signal::TERM),
        None => rustix::process::kill_process(target, Signal::TERM),
    };
    match sent {
        Ok(()) => Ok(Signalled::Sent),
        Err(crate::platform::sys::io::Errno::SRCH) => Ok(Signalled::Gone),
        Err(err) => Err(format!("cannot signal pid {pid}: {err}")),
    }
}

/// Windows has no signals: a daemon is stopped through its API.
#[cfg(windows)]
pub fn terminate(pid: u32, _started: Option<u64>) -> Result<Signalled, String> {
    Err(format!(
        "Windows has no signals to send pid {pid}: stop it through its API"
    ))
}

/// `pid` runs as this user, its program is a filewatchd, and it started at `started`.
#[cfg(unix)]
fn prove_ours(pid: u32, started: Option<u64>) -> Result<(), String> {
    let me = crate::state::euid();
    match platform::process_uids(pid) {
        Some((real, effective)) if real == me && effective == me => {}
        Some((real, _)) => return Err(format!("pid {pid} runs as uid {real}, not as you (uid {me})")),
        None => return Err(format!("cannot read who runs pid {pid}")),
    }
    let exe = platform::process_program(pid).unwrap_or_default();
    let named = exe
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("filewatchd"));
    if !named {
        return Err(format!("pid {pid} is not a filewatchd ({})", exe.display()));
    }
    let Some(started) = started else {
        return Err(format!(
            "the daemon did not record when pid {pid} started (a filewatchd older than this one?), so it cannot be told from another process given its pid"
        ));
    };
    if start_time(pid) != Some(started) {
        return Err(format!(
            "pid {pid} is not the process that recorded it (it started at another time): that daemon has exited"
        ));
    }
    Ok(())
}

// Both tests read `/proc` (start times, owners, programs), which only the Linux layer has.
#[cfg(all(test, target_os = "linux", not(feature = "portable")))]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_process_that_is_not_a_filewatchd_or_started_at_another_time_is_not_signalled() {
        let mut sleep = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sleep");
        let pid = sleep.id();
        let started = start_time(pid);
        assert!(started.is_some());
        let refused = terminate(pid, started).expect_err("a sleep is not a filewatchd");
        assert!(refused.contains("is not a filewatchd"), "{refused}");
        assert!(
            sleep.try_wait().expect("wait").is_none(),
            "the sleep was signalled"
        );
        sleep.kill().expect("kill");
        sleep.wait().expect("reap");
        // Gone, or (its pid reused meanwhile) refused: never sent.
        assert_ne!(terminate(pid, started), Ok(Signalled::Sent));
    }

    #[test]
    fn a_filewatchd_is_told_from_another_start_of_its_pid() {
        // This test binary is `target/debug/deps/filewatchd-<hash>`: a filewatchd by its name.
        let me = std::process::id();
        let started = own_start_time();
        assert_eq!(prove_ours(me, started), Ok(()));
        let other = prove_ours(me, started.map(|t| t + 1)).expect_err("another start time");
        assert!(other.contains("started at another time"), "{other}");
        assert!(
            prove_ours(me, None).is_err(),
            "a pid with no start time recorded was believed"
        );
    }
}
