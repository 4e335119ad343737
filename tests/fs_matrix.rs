//! G13 on every Linux file system a user has: on journaled ext4, xfs and btrfs
//! (loop images made by the test), a tmpfs, an overlayfs mounted as containers mount it, and
//! LazyFS (FUSE, where `RENAME_EXCHANGE` is refused), each scenario of
//! `fs_matrix/scenarios.rs` runs through the real daemon: record with the barrier, undo, redo,
//! a time rollback, conflicts (abort, skip, force), a `kill -9` during an undo and the
//! recovery at restart, and the state dir on another file system than the workspace.
//!
//! Mounting needs root (CI runs as root). A file system that cannot be mounted here is skipped
//! with the reason; under `CI=true` nothing may skip. Every mount is undone when its test ends,
//! passed or failed. A scenario that fails does not stop the others on its file system; all
//! failures are listed together.

/// The file systems, made and mounted by the test.
mod mounts;
/// What runs on each.
mod scenarios;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use crate::common::skip;
use mounts::{Kind, Mounted};
use scenarios::SCENARIOS;

/// Mounts `kind` and runs every scenario on it.
fn matrix_on(kind: Kind) {
    let fs = match Mounted::mount(kind) {
        Ok(fs) => fs,
        Err(why) => return skip(&format!("{kind:?} cannot be mounted here: {why}")),
    };
    let mut failed = Vec::new();
    for (name, scenario, state) in SCENARIOS {
        let started = Instant::now();
        let passed = catch_unwind(AssertUnwindSafe(|| scenario(&fs, state))).is_ok();
        let took = started.elapsed().as_millis();
        eprintln!(
            "{kind:?}: {name}: {} ({took} ms)",
            if passed { "ok" } else { "FAILED" }
        );
        if !passed {
            failed.push(name);
        }
    }
    assert!(
        failed.is_empty(),
        "on {kind:?}, failed (messages above): {failed:?}"
    );
}

#[test]
fn journaled_ext4() {
    matrix_on(Kind::Ext4);
}

#[test]
fn xfs() {
    matrix_on(Kind::Xfs);
}

#[test]
fn btrfs() {
    matrix_on(Kind::Btrfs);
}

#[test]
fn tmpfs() {
    matrix_on(Kind::Tmpfs);
}

#[test]
fn overlayfs() {
    matrix_on(Kind::Overlay);
}

#[test]
fn lazyfs_fuse() {
    matrix_on(Kind::LazyFs);
}
