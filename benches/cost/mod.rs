//! The agent-cost benchmark's own modules (`benches/cost.rs`): its options, the three copies
//! of the tree (the daemon on one, a bare inotify watcher on another), the workloads, and the table.

pub mod bare;
pub mod opts;
pub mod print;
pub mod setup;
pub mod workloads;
