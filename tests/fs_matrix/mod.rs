//! The file-system matrix's parts: the file systems, made and mounted by the test
//! (`mounts`), and what runs on each (`scenarios`).

pub mod mounts;
pub mod scenarios;
