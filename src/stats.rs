//! Counters of what went wrong but did not stop the daemon (report and continue), shown by
//! `status`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::paths::RelPath;
use crate::store::fault::StorageFault;

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
    /// Store failures (disk full, file size limit, I/O error): each one left a path pending.
    pub storage_errors: AtomicU64,
    storage: Mutex<Option<StorageStatus>>,
    last_error: Mutex<Option<String>>,
    degraded: Mutex<Option<String>>,
    last_rescan: Mutex<Option<RescanReport>>,
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

/// The storage fault in force: what failed and which paths wait to be recorded.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StorageStatus {
    pub cause: String,
    pub message: String,
    pub pending: usize,
    /// The first few pending paths.
    pub paths: Vec<String>,
    pub remedy: &'static str,
}

/// How many pending paths `status` names.
const PENDING_SHOWN: usize = 20;

impl Stats {
    /// Counts one store failure.
    pub fn storage_failed(&self, fault: &StorageFault) {
        self.storage_errors.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(cause = %fault.cause, error = %fault.message, "storage error");
    }

    /// The storage fault in force now (`None`: every write is recorded).
    pub fn set_storage(&self, fault: Option<(&StorageFault, &[RelPath])>) {
        let status = fault.map(|(fault, paths)| StorageStatus {
            cause: fault.cause.clone(),
            message: fault.message.clone(),
            pending: paths.len(),
            paths: paths.iter().take(PENDING_SHOWN).map(RelPath::to_text).collect(),
            remedy: "free space in (or fix) the state directory's file system; capture resumes by itself",
        });
        if let Ok(mut slot) = self.storage.lock() {
            if slot.is_some() && status.is_none() {
                tracing::info!("storage recovered: every pending write is recorded");
            }
            *slot = status;
        }
    }

    pub fn storage(&self) -> Option<StorageStatus> {
        self.storage.lock().ok().and_then(|s| s.clone())
    }

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
            "storage_errors": get(&self.storage_errors),
            "storage_error": self.storage(),
            "degraded": self.degraded(),
            "last_error": self.last_error(),
            "last_rescan": self.last_rescan.lock().ok().and_then(|r| r.clone()),
        })
    }
}
