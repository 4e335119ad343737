//! `GET /v1/status`: the daemon, its workspace and store, capture's counters and faults, the
//! verification pass, and rollbacks a crash or a failure left behind (docs/api.md).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::stats::{Ownership, RescanReport, StorageStatus, VerifyStatus, Watcher, WorkspaceLost};

use crate::model::RollbackKind;
use crate::model::answer::PathLine;
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

#[derive(Debug, Serialize, Deserialize)]
pub struct OpenTurn {
    pub session: String,
    pub turn: i64,
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
        let outcome = row.outcome.as_ref();
        Self {
            rollback_id: row.id,
            operation: row.kind,
            outcome: "finished".into(),
            note: outcome.as_ref().and_then(|o| o.recovery.clone()),
            left: outcome.map(|o| o.skipped.clone()),
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

/// `POST /v1/stop`'s answer (202): the daemon with this pid is shutting down as on `SIGTERM`,
/// and answers nothing once it has finished what it was doing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stopping {
    pub pid: u32,
}
