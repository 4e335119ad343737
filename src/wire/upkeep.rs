//! The answers of the store's upkeep: `POST /v1/gc` (a collection, or what one would remove),
//! `POST /v1/purge` (a path's contents deleted) and `POST /v1/verify` (what a verification pass
//! found). The report of a collection and a
//! found version are defined where they are made (retention, the store) and named here.

use serde::{Deserialize, Serialize};

pub use crate::retention::GcReport;
pub use crate::store::purge::Purged;
pub use crate::store::verified::FoundVersion;

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
