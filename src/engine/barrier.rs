//! The barrier (G1), Watchman's cookie: to answer a turn marker, create a uniquely named file
//! in the root and wait for its own event. inotify queues one instance's events in order, so
//! when the cookie's event arrives every write that completed before the marker has already
//! been hinted, and is recorded before the marker is executed.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::path::Path;
use std::time::{Duration, Instant};

use super::Command;
use crate::fs::cookie::{cookie_instance_of, next_cookie_name};
use crate::paths::RelPath;

/// A cookie whose event does not come back in this time (lost events, a stalled queue) is
/// replaced by a full rescan, which is just as exact, only slower.
pub const COOKIE_TIMEOUT: Duration = Duration::from_secs(3);

struct Waiting {
    since: Instant,
    command: Command,
}

#[derive(Default)]
pub struct Barrier {
    waiting: HashMap<RelPath, Waiting>,
}

impl Barrier {
    /// Plants a cookie for `command`. If the root cannot take one, the command comes back and
    /// the caller must rescan before executing it.
    pub fn begin(&mut self, root: &Path, command: Command) -> Result<(), Command> {
        let Some(cookie) = self.plant(root) else {
            return Err(command);
        };
        let since = Instant::now();
        self.waiting.insert(cookie, Waiting { since, command });
        Ok(())
    }

    /// Creates a new cookie in the root; its event comes back as a hint for it.
    pub fn plant(&mut self, root: &Path) -> Option<RelPath> {
        let cookie = next_cookie_name();
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(cookie.to_abs(root));
        match created {
            Ok(_) => Some(cookie),
            Err(err) => {
                tracing::warn!(error = %err, "cannot create a barrier cookie in the root; rescanning instead");
                None
            }
        }
    }

    /// The cookie's event arrived: its command may run once the pending hints are recorded.
    pub fn arrived(&mut self, root: &Path, cookie: &RelPath) -> Option<Command> {
        let waiting = self.waiting.remove(cookie)?;
        let _ = std::fs::remove_file(cookie.to_abs(root));
        Some(waiting.command)
    }

    /// After a full rescan every waiting command is satisfied.
    pub fn take_all(&mut self, root: &Path) -> Vec<Command> {
        let mut all: Vec<(RelPath, Waiting)> = self.waiting.drain().collect();
        all.sort_by_key(|(_, w)| w.since);
        all.into_iter()
            .map(|(cookie, waiting)| {
                let _ = std::fs::remove_file(cookie.to_abs(root));
                waiting.command
            })
            .collect()
    }

    /// Every waiting command, oldest first, with its cookie, which the caller removes.
    pub fn drain(&mut self) -> Vec<(RelPath, Command)> {
        let mut all: Vec<(RelPath, Waiting)> = self.waiting.drain().collect();
        all.sort_by_key(|(_, w)| w.since);
        all.into_iter().map(|(cookie, w)| (cookie, w.command)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    pub fn overdue(&self, now: Instant) -> bool {
        self.waiting
            .values()
            .any(|w| now.duration_since(w.since) >= COOKIE_TIMEOUT)
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.waiting.values().map(|w| w.since + COOKIE_TIMEOUT).min()
    }
}

/// Removes the cookies a killed daemon of this state directory left in the root: empty files
/// whose name carries one of `instances` (the ones it recorded before planting any). Any
/// other file, whatever its name, is the user's. Returns the instances whose cookies are
/// still there (they could not be removed), to be remembered for the next start.
pub fn remove_stale_cookies(root: &Path, instances: &[String]) -> Vec<String> {
    let Ok(listing) = std::fs::read_dir(root) else {
        return instances.to_vec();
    };
    let mut left = Vec::new();
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(instance) = cookie_instance_of(name.as_encoded_bytes()) else {
            continue;
        };
        let Some(known) = instances.iter().find(|i| i.as_bytes() == instance) else {
            continue;
        };
        let empty_file = entry.metadata().is_ok_and(|m| m.is_file() && m.len() == 0);
        if empty_file && std::fs::remove_file(entry.path()).is_err() && !left.contains(known) {
            left.push(known.clone());
        }
    }
    left
}
