//! Counters of what went wrong but did not stop the daemon (report and continue), shown by
//! `status`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

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
    verify: Mutex<VerifyStatus>,
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

/// The verification pass (G2: what no event reported, such as writes through a shared
/// mapping): its schedule and what its runs found, for `status`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct VerifyStatus {
    /// The background pass's interval and quiet time; `None` when it is off.
    pub interval_ms: Option<u64>,
    pub quiet_ms: u64,
    /// When the latest pass finished (RFC 3339), how long it took and what it found.
    pub last_run: Option<String>,
    pub last_duration_ms: u64,
    pub last_walked: usize,
    pub last_changed: usize,
    /// Passes run (on demand and in the background), and versions they recorded in all.
    pub runs: u64,
    pub changed_total: u64,
    /// Background passes abandoned to serve a command (run again once quiet).
    pub yielded: u64,
}

/// One finished pass.
#[derive(Clone, Copy, Debug)]
pub struct VerifyRun {
    pub finished_ms: i64,
    pub duration_ms: u64,
    pub walked: usize,
    pub changed: usize,
}

impl Stats {
    fn update_verify(&self, change: impl FnOnce(&mut VerifyStatus)) {
        if let Ok(mut slot) = self.verify.lock() {
            change(&mut slot);
        }
    }

    pub fn set_verify_schedule(&self, interval_ms: Option<u64>, quiet_ms: u64) {
        self.update_verify(|v| {
            v.interval_ms = interval_ms;
            v.quiet_ms = quiet_ms;
        });
    }

    pub fn verify_ran(&self, run: VerifyRun) {
        self.update_verify(|v| {
            v.last_run = Some(crate::model::format_time(run.finished_ms));
            v.last_duration_ms = run.duration_ms;
            v.last_walked = run.walked;
            v.last_changed = run.changed;
            v.runs += 1;
            v.changed_total += run.changed as u64;
        });
    }

    pub fn verify_yielded(&self) {
        self.update_verify(|v| v.yielded += 1);
    }

    pub fn verify(&self) -> VerifyStatus {
        self.verify.lock().map(|v| v.clone()).unwrap_or_default()
    }
}
