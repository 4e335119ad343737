//! Counters of what went wrong but did not stop the daemon (report and continue), shown by
//! `status`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[derive(Default)]
pub struct Stats {
    pub watched_dirs: AtomicUsize,
    /// Path hints received from the watcher (each names one path an event touched).
    pub hints: AtomicU64,
    pub rescans: AtomicU64,
    pub overflows: AtomicU64,
    /// Paths named by an event that were gone when read.
    pub vanished: AtomicU64,
    pub unreadable: AtomicU64,
    /// Reads abandoned because the file kept changing (retried on its next event).
    pub unstable: AtomicU64,
    pub too_large: AtomicU64,
    last_error: Mutex<Option<String>>,
    degraded: Mutex<Option<String>>,
    last_rescan: Mutex<Option<RescanReport>>,
    /// The capture thread has ended: nothing is recorded any more (the daemon is stopping).
    capture_stopped: AtomicBool,
}

/// What the latest rescan (start-up walk, lost events, ignore-file change) did and how long
/// it took: `survey_ms` walks and compares against the index, the rest reads and records.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RescanReport {
    /// The directory rescanned, `None` for the whole workspace.
    pub dir: Option<String>,
    pub walked: usize,
    pub recorded: usize,
    pub survey_ms: u64,
    pub total_ms: u64,
}

impl Stats {
    pub fn set_error(&self, message: String) {
        tracing::warn!(error = %message, "capture problem");
        if let Ok(mut slot) = self.last_error.lock() {
            *slot = Some(message);
        }
    }

    pub fn set_degraded(&self, reason: &str) {
        if let Ok(mut slot) = self.degraded.lock() {
            if slot.is_none() {
                tracing::error!(reason, "watcher degraded");
            }
            *slot = Some(reason.to_string());
        }
    }

    pub fn set_last_rescan(&self, report: RescanReport) {
        if let Ok(mut slot) = self.last_rescan.lock() {
            *slot = Some(report);
        }
    }

    pub fn set_capture_stopped(&self) {
        self.capture_stopped.store(true, Ordering::Release);
    }

    pub fn capture_stopped(&self) -> bool {
        self.capture_stopped.load(Ordering::Acquire)
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }

    pub fn degraded(&self) -> Option<String> {
        self.degraded.lock().ok().and_then(|e| e.clone())
    }

    pub fn snapshot(&self) -> serde_json::Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        serde_json::json!({
            "watched_dirs": self.watched_dirs.load(Ordering::Relaxed),
            "hints": get(&self.hints),
            "rescans": get(&self.rescans),
            "overflows": get(&self.overflows),
            "vanished": get(&self.vanished),
            "unreadable": get(&self.unreadable),
            "unstable": get(&self.unstable),
            "too_large": get(&self.too_large),
            "degraded": self.degraded(),
            "last_error": self.last_error(),
            "last_rescan": self.last_rescan.lock().ok().and_then(|r| r.clone()),
        })
    }
}
