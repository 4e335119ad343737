//! Counters of what went wrong but did not stop the daemon (report and continue), shown by
//! `status`, and the reports of them it answers with (the API's status names them).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::paths::RelPath;
use crate::store::fault::{FaultCause, StorageFault};
use serde::{Deserialize, Serialize};

#[derive(Default)]
pub struct Stats {
    pub watched_dirs: AtomicUsize,
    /// Directories the inotify watch limit left unwatched (verified at every marker).
    pub unwatched_dirs: AtomicUsize,
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
    /// Hinted files not opened: their stat proved them unchanged since recorded.
    pub unchanged_by_stat: AtomicU64,
    /// Hinted files read and hashed but not stored again: the latest version holds their
    /// content (a rollback's own writes, a byte-for-byte rewrite).
    pub unchanged_by_hash: AtomicU64,
    /// Hinted files read while the burst that wrote them still went on (`engine::early`),
    /// rather than when it was recorded.
    pub read_early: AtomicU64,
    /// Store failures (disk full, file size limit, I/O error): each one left a path pending.
    pub storage_errors: AtomicU64,
    storage: Mutex<Option<StorageStatus>>,
    last_error: Mutex<Option<String>>,
    degraded: Mutex<Option<String>>,
    last_rescan: Mutex<Option<RescanReport>>,
    last_verify: Mutex<Option<VerifyReport>>,
    /// The capture thread has ended: nothing is recorded any more (the daemon is stopping).
    capture_stopped: AtomicBool,
    /// Set once, when the workspace root is lost: capture has stopped for good.
    lost: AtomicBool,
    workspace_lost: Mutex<Option<WorkspaceLost>>,
    verify: Mutex<VerifyStatus>,
    ownership: Mutex<Ownership>,
    /// The start-up walk's reading of files, while it runs (`state::Progress`).
    index_progress: Mutex<Option<indicatif::ProgressBar>>,
}

/// What to do about a storage fault, by its cause.
fn remedy(cause: crate::store::fault::FaultCause) -> &'static str {
    use crate::store::fault::FaultCause;
    match cause {
        FaultCause::FileTooLarge => {
            "raise the daemon's file size limit (ulimit -f, prlimit --fsize) or restart it without one; capture resumes by itself"
        }
        c if c.is_read_only() => {
            "make the state directory's file system writable again; capture resumes by itself"
        }
        c if c.is_io() => {
            "check the state directory's disk (an I/O error); capture resumes by itself once writes succeed"
        }
        _ => "free space in the state directory's file system; capture resumes by itself",
    }
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
            cause: fault.cause,
            message: fault.message.clone(),
            pending: paths.len(),
            paths: paths.iter().take(PENDING_SHOWN).map(RelPath::to_text).collect(),
            remedy: remedy(fault.cause).to_string(),
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

    /// Clears `degraded` if it says `reason` (the fault is gone).
    pub fn clear_degraded(&self, reason: &str) {
        if let Ok(mut slot) = self.degraded.lock()
            && slot.as_deref() == Some(reason)
        {
            tracing::info!("watcher no longer degraded");
            *slot = None;
        }
    }

    pub fn set_workspace_lost(&self, lost: WorkspaceLost) {
        if let Ok(mut slot) = self.workspace_lost.lock() {
            *slot = Some(lost);
        }
        self.lost.store(true, Ordering::Release);
    }

    /// A load, cheap enough for every hint.
    pub fn is_workspace_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    pub fn workspace_lost(&self) -> Option<WorkspaceLost> {
        self.workspace_lost.lock().ok().and_then(|l| l.clone())
    }

    pub fn set_last_verify(&self, report: VerifyReport) {
        if let Ok(mut slot) = self.last_verify.lock() {
            *slot = Some(report);
        }
    }

    /// The bar the start-up walk counts the files it reads on.
    pub fn set_index_progress(&self, bar: Option<indicatif::ProgressBar>) {
        if let Ok(mut slot) = self.index_progress.lock() {
            *slot = bar;
        }
    }

    /// Files read so far and to read, while the start-up walk reads them.
    pub fn index_progress(&self) -> Option<(u64, u64)> {
        let slot = self.index_progress.lock().ok()?;
        let bar = slot.as_ref()?;
        Some((bar.position(), bar.length().unwrap_or(0)))
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

    pub fn snapshot(&self) -> Watcher {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Watcher {
            watched_dirs: self.watched_dirs.load(Ordering::Relaxed),
            unwatched_dirs: self.unwatched_dirs.load(Ordering::Relaxed),
            last_unwatched_verify: self.last_verify.lock().ok().and_then(|r| r.clone()),
            hints: get(&self.hints),
            rescans: get(&self.rescans),
            overflows: get(&self.overflows),
            vanished: get(&self.vanished),
            unreadable: get(&self.unreadable),
            unstable: get(&self.unstable),
            unchanged_by_stat: get(&self.unchanged_by_stat),
            unchanged_by_hash: get(&self.unchanged_by_hash),
            read_early: get(&self.read_early),
            too_large: get(&self.too_large),
            storage_errors: get(&self.storage_errors),
            storage_error: self.storage(),
            degraded: self.degraded(),
            last_error: self.last_error(),
            last_rescan: self.last_rescan.lock().ok().and_then(|r| r.clone()),
        }
    }
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

    /// Whether fanotify names the writers (`crate::watch::writers`), and why not.
    pub fn set_ownership(&self, why_not_process: Option<String>) {
        let by = match why_not_process {
            None => "process",
            Some(_) => "tool_calls",
        };
        if let Ok(mut ownership) = self.ownership.lock() {
            *ownership = Ownership {
                by: by.to_string(),
                why_not_process,
            };
        }
    }

    pub fn ownership(&self) -> Ownership {
        self.ownership.lock().map(|o| o.clone()).unwrap_or_default()
    }
}

/// Capture's counters since the start, and what is wrong with it now.
#[derive(Debug, Serialize, Deserialize)]
pub struct Watcher {
    pub watched_dirs: usize,
    /// Directories the inotify watch limit left unwatched, walked at every marker instead.
    pub unwatched_dirs: usize,
    pub last_unwatched_verify: Option<VerifyReport>,
    pub hints: u64,
    pub rescans: u64,
    pub overflows: u64,
    pub vanished: u64,
    pub unreadable: u64,
    pub unstable: u64,
    pub unchanged_by_stat: u64,
    pub unchanged_by_hash: u64,
    /// Hinted files read while the burst that wrote them still went on.
    pub read_early: u64,
    pub too_large: u64,
    pub storage_errors: u64,
    pub storage_error: Option<StorageStatus>,
    pub degraded: Option<String>,
    pub last_error: Option<String>,
    pub last_rescan: Option<RescanReport>,
}

/// The workspace root no longer names the directory the daemon holds open (moved away,
/// removed, replaced): capture has stopped, nothing is written, reads still work.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkspaceLost {
    pub root: String,
    /// What became of it: "was moved to /x/ws.moved", "was removed", ...
    pub what: String,
    pub since: String,
    pub remedy: String,
}

impl WorkspaceLost {
    /// One sentence for an error answer and the log.
    pub fn message(&self) -> String {
        format!(
            "workspace lost: the workspace root {} {}; capture has stopped and nothing is written. {}",
            self.root, self.what, self.remedy
        )
    }
}

/// The latest stat walk of the directories the watch limit left unwatched (`capture::unwatched`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VerifyReport {
    /// The directories walked (each with what lies beneath it).
    pub dirs: usize,
    pub walked: usize,
    pub recorded: usize,
    pub ms: u64,
}

/// What the latest rescan (start-up walk, lost events, ignore-file change) did and how long
/// it took: `survey_ms` walks and compares against the index, the rest reads and records.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RescanReport {
    /// The directory rescanned, `None` for the whole workspace.
    pub dir: Option<String>,
    pub walked: usize,
    pub recorded: usize,
    pub survey_ms: u64,
    pub total_ms: u64,
}

/// The storage fault in force: what failed and which paths wait to be recorded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StorageStatus {
    pub cause: FaultCause,
    pub message: String,
    pub pending: usize,
    /// The first few pending paths.
    pub paths: Vec<String>,
    pub remedy: String,
}

/// The verification pass (G2: what no event reported, such as writes through a shared
/// mapping): its schedule and what its runs found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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

/// How the daemon tells whose a write is.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ownership {
    /// `process` (fanotify names each writer, the tool-call windows beside it) or
    /// `tool_calls` (the agents' tool-call windows alone).
    pub by: String,
    /// Why not by process, when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not_process: Option<String>,
}
