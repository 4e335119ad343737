//! The answers of the store's upkeep: `POST /v1/gc` (a collection, or what one would remove)
//! and `POST /v1/verify` (what a verification pass found).

use serde::{Deserialize, Serialize};

use crate::model::Origin;

/// What a collection removed (or, on a dry run, would remove).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GcReport {
    pub dry_run: bool,
    /// Boundaries before this sequence number are (or would be) expired.
    pub cutoff_seq: i64,
    pub versions_removed: i64,
    pub blobs_removed: i64,
    pub bytes_freed: i64,
    pub turns_expired: i64,
    pub store_bytes_before: i64,
    pub store_bytes_after: i64,
}

/// What one verification pass found: `changed` versions recorded, the first ones of them in
/// `versions` (`truncated` when there were more).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
    pub walked: usize,
    pub changed: usize,
    pub versions: Vec<FoundVersion>,
    pub truncated: bool,
    pub duration_ms: u64,
}

/// One version a pass recorded, with the turn it was attributed to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FoundVersion {
    pub path: String,
    pub origin: Origin,
    pub session: Option<String>,
    pub turn: Option<i64>,
}
