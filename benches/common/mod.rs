//! Helpers of the scenario benchmark (`benches/scenarios.rs`): one module per workload, which
//! measures it, and the tools they share; the driver in `benches/scenarios/` calls them and
//! builds the rows. This folder has no `main.rs`, so cargo does not take it for a bench target
//! of its own.

#![allow(dead_code)]

pub mod agent_undo;
pub mod burst;
pub mod checkout;
pub mod codex;
pub mod daemon;
pub mod degraded;
pub mod edits;
pub mod floor;
pub mod gentree;
pub mod report;
pub mod restart;
pub mod rollback;
pub mod shadow;
pub mod stall;
pub mod stats;
pub mod storm;
pub mod sysinfo;
pub mod verify;
pub mod verify_pass;
