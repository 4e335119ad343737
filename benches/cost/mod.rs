//! The agent-cost benchmark's own modules (`benches/cost.rs`): its options, the two copies of
//! the tree with the daemon on one, the workloads, and the table.

pub mod opts;
pub mod print;
pub mod setup;
pub mod workloads;
