//! `GET /v1/status`: the daemon, its workspace and store, capture's counters and faults, the
//! verification pass, and rollbacks a crash or a failure left behind (docs/api.md).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::RollbackKind;
use crate::restore::outcome::{Outcome, PathLine};
use crate::store::fault::FaultCause;
use crate::store::journal::{RollbackRow, Status as RollbackStatus};

#[derive(Debug, Serialize, Deserialize)]
pub struct Status {
    pub root: PathBuf,
    pub version: String,
    pub pid: u32,
    pub state_dir: PathBuf,
    /// Tracked paths present now, by kind: files here, directories and symlinks below
    /// (docs/cli.md, "The figures").
    pub tracked_files: i64,
    #[serde(default)]
    pub tracked_dirs: i64,
    #[serde(default)]
    pub tracked_symlinks: i64,
    /// The content store: every stored blob's bytes, compressed.
    pub store_bytes: i64,
    /// The index: the SQLite database with its write-ahead log.
    #[serde(default)]
    pub index_bytes: u64,
    pub latest_seq: i64,
    pub open_turns: Vec<OpenTurn>,
    pub watcher: Watcher,
    pub workspace_lost: Option<WorkspaceLost>,
    pub verify: VerifyStatus,
    pub recovery: Option<Recovery>,
    pub failed_rollbacks: Vec<FailedRollback>,
    /// `None` when the root cannot be examined (it is gone).
    pub filesystem: Option<Filesystem>,
    /// How writes are given their owner (docs/tracking.md, "Whose a write is").
    #[serde(default)]
    pub ownership: Ownership,
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

#[derive(Debug, Serialize, Deserialize)]
pub struct OpenTurn {
    pub session: String,
    pub turn: i64,
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

/// What the last start-up recovery did, when a crash interrupted a rollback (G6).
#[derive(Debug, Serialize, Deserialize)]
pub struct Recovery {
    pub rollback_id: i64,
    pub operation: RollbackKind,
    /// Always `finished`.
    pub outcome: String,
    pub note: Option<String>,
    /// The paths it left alone.
    pub left: Option<Vec<PathLine>>,
}

impl Recovery {
    pub fn of(row: &RollbackRow) -> Self {
        let outcome = Outcome::stored(row);
        Self {
            rollback_id: row.id,
            operation: row.kind,
            outcome: "finished".into(),
            note: outcome.as_ref().and_then(|o| o.recovery.clone()),
            left: outcome.map(|o| o.skipped),
        }
    }
}

/// A rollback that failed and is not fully put back yet (G12).
#[derive(Debug, Serialize, Deserialize)]
pub struct FailedRollback {
    pub rollback_id: i64,
    pub operation: RollbackKind,
    pub status: RollbackStatus,
    pub note: String,
}

impl FailedRollback {
    pub fn of(row: &RollbackRow) -> Self {
        Self {
            rollback_id: row.id,
            operation: row.kind,
            status: row.status,
            note: "it failed and could not put back every path it had changed; the next start of the daemon finishes putting them back".into(),
        }
    }
}

/// The file system holding the root, and how a rollback installs files there.
#[derive(Debug, Serialize, Deserialize)]
pub struct Filesystem {
    #[serde(rename = "type")]
    pub kind: String,
    /// `exchange` or `rename` (`fs::mode::InstallMode`).
    pub install_mode: String,
    /// False: no rollback has installed a file there yet, and `install_mode` is the one its
    /// type is known to get.
    pub probed: bool,
}
