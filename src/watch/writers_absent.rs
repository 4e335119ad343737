//! Ownership by process where there is no fanotify (every OS but Linux, and a Linux build
//! with the feature `portable`): the kernel does not name a file's writers here, so there is
//! no listener. `Writers::for_daemon` says why in `status` and `doctor`, and the tool-call
//! windows decide whose a write is (`crate::capture::owners`).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// A file by its handle on the watched file system (never made here: there is no listener).
pub type FileId = Vec<u8>;

/// The ancestry of one writer: its pid, then its parents, nearest first.
pub type Chain = Vec<u32>;

/// Why there is no listener, as `status` says it.
const ABSENT: &str = "ownership by process needs fanotify, which this platform does not have";

/// No listener can exist here: the type has no value.
pub enum Writers {}

impl Writers {
    /// `None`, with the reason recorded for `status`.
    pub fn for_daemon(_root: &Path, stats: &crate::stats::Stats) -> Option<Writers> {
        tracing::debug!(why = ABSENT, "ownership by tool-call windows");
        stats.set_ownership(Some(ABSENT.to_string()));
        None
    }

    pub fn take(&self) -> HashMap<FileId, Vec<Chain>> {
        match *self {}
    }

    pub fn caught_up(&self, _patience: Duration) -> bool {
        match *self {}
    }
}

/// No handles without fanotify: nothing to match a writer's file against.
pub fn handle_of(_path: &Path) -> Option<FileId> {
    None
}
