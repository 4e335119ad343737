//! The replay tier's parts: git as the reference (`git`), the workspace's tree in git's terms
//! (`tree`), a turn's listing in git's terms (`listing`), and one replay's phases (`run`).

pub mod git;
pub mod listing;
pub mod run;
pub mod tree;
