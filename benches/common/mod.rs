//! Helpers of the scenario benchmark (`benches/scenarios.rs`). This folder has no `main.rs`, so
//! cargo does not take it for a bench target of its own.

#![allow(dead_code)]

pub mod daemon;
pub mod gentree;
pub mod rollback;
pub mod shadow;
pub mod stats;
pub mod sysinfo;
