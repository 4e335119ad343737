//! The scenario benchmark's driver (`benches/scenarios.rs` is its entry point): the command
//! line, one tree's run from generation to the daemon's stop, the rows each workload adds to
//! its table, and the Markdown printed at the end. The measurements themselves live in
//! `benches/common/`, one module per workload; the modules here call them in order and turn
//! what they return into rows.
//!
//! - `opts`: the options (`--quick`, `--only`, `--skip`, ...) and `USAGE`.
//! - `setup`: the daemon binary to run, the tools the bench needs, the page cache.
//! - `tree`: the trees (t20k, t100k) and one tree's run, workload after workload.
//! - `run`: what one tree's run shares between its workloads (`Run`), and cells of its rows.
//! - `turns`: W1 (turns of 5 edits), W1d (half the dirs unwatched), t100k against t20k.
//! - `sed`: W2 (`sed -i` over 2,000 files), and sed again with the daemon stopped.
//! - `undo`: W5 (the rollback of a 1,000-file turn) and agent-undo's rows.
//! - `bulk`: W3 (bursts), W4 (checkout), W7 (read storm), W8 (stall) and idle.
//! - `index`: W6 (first index, RSS, storage, restart) and the verification pass.
//! - `print`: the run's header and one table per tree.

pub mod bulk;
pub mod index;
pub mod opts;
pub mod print;
pub mod run;
pub mod sed;
pub mod setup;
pub mod tree;
pub mod turns;
pub mod undo;
