//! The long-history benchmark's own modules: `generate` makes the session through the API,
//! `measure` times each goal against its floor or peer.

pub mod generate;
pub mod measure;

use std::path::PathBuf;

pub struct Opts {
    pub turns: usize,
    /// Files written per turn (the busy path twice among them).
    pub per_turn: usize,
    /// Files the turns rotate over.
    pub pool: usize,
    /// Files of the rollback measured against `git restore`.
    pub rollback_files: usize,
    pub runs: usize,
    pub rollback_pairs: usize,
    /// Turns whose history the gc collapses (each 200 versions).
    pub gc_turns: usize,
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub keep: bool,
}

impl Opts {
    pub fn full() -> Opts {
        Opts {
            turns: 5_000,
            per_turn: 200,
            pool: 20_000,
            rollback_files: 10_000,
            runs: 7,
            rollback_pairs: 5,
            gc_turns: 600,
            dir: PathBuf::from("/tmp"),
            bin: PathBuf::new(),
            keep: false,
        }
    }

    pub fn quick() -> Opts {
        Opts {
            turns: 500,
            pool: 5_000,
            rollback_files: 2_000,
            runs: 3,
            rollback_pairs: 3,
            gc_turns: 120,
            ..Opts::full()
        }
    }
}
