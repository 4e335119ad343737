//! Waiting without sleeping to synchronise: a condition polled until a deadline, and the time
//! mark that separates the versions recorded before it from those recorded after.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::Daemon;

/// How often a polled condition is checked again.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Calls `probe` until it answers `Some`, or until `deadline` has passed (then `None`).
pub fn poll_until<T>(deadline: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + deadline;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if Instant::now() > until {
            return None;
        }
        std::thread::sleep(POLL_INTERVAL); // polling a condition, not synchronising
    }
}

impl Daemon {
    /// Waits until the process exits on its own; `None` if it still runs after `deadline`.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        poll_until(deadline, || self.child.try_wait().unwrap())
    }

    /// Polls the daemon's stderr until it contains `needle`; false after `deadline`.
    pub fn wait_for_stderr(&self, needle: &str, deadline: Duration) -> bool {
        poll_until(deadline, || self.stderr().contains(needle).then_some(())).is_some()
    }
}

/// An RFC 3339 time (milliseconds) that lies after every version recorded so far and before
/// every version recorded after this returns. Call it right after a barrier (a turn marker):
/// everything written before the marker is recorded at or before the current millisecond;
/// this waits (polling the clock, under a millisecond) until that millisecond is over, so
/// anything recorded later has a later recording time.
pub fn time_mark() -> String {
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    let mark = now_ms();
    while now_ms() <= mark {
        std::hint::spin_loop();
    }
    let at = std::time::UNIX_EPOCH + Duration::from_millis(mark as u64);
    humantime::format_rfc3339_millis(at).to_string()
}
