//! The agent-cost benchmark's own modules (`benches/cost.rs`): its options, the tree and who
//! watches it (the daemon, a bare inotify watcher, or nothing), the workloads, and the table.

pub mod bare;
pub mod opts;
pub mod print;
pub mod setup;
pub mod workloads;
