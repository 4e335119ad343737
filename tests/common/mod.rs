//! Test harness: a workspace in a temp dir, the real daemon binary, and its HTTP API.
//!
//! Tests talk only to the binary (`CARGO_BIN_EXE_filewatchd`) over real HTTP. They never
//! sleep to synchronise: a turn marker is the barrier, and anything else is polled with a
//! deadline.
//!
//! Every `tests/NAME.rs` is a module of the one test binary (`tests/runner.rs`), and this
//! directory is its `common`. A test says `use crate::common::*;` and gets the vocabulary of
//! every module, re-exported here:
//!
//! - `workspace`: the root, state and home temp dirs and the files in the root.
//! - `daemon`: `filewatchd serve` started, waited for, stopped and killed.
//! - `http`: requests to the daemon (ureq, or raw bytes over TCP) and their status checks.
//! - `api`: the endpoints in the tests' words (`turn_start`, `undo`, `history`, ...).
//! - `answers`: reading the answers: a turn's changes, a history's versions, a rollback's
//!   actions and lists, and the `on_conflict` modes with what each does.
//! - `tree`: snapshots and stat marks of a directory tree, and `assert_tree_eq`.
//! - `cli`: the binary run to completion as a CLI, with a deadline.
//! - `wait`: polling a condition with a deadline, and the time mark between versions.
//! - `faults`: strace fault injection, resource limits, mount and user namespaces.
//! - `lazyfs`: a LazyFS (FUSE) mount that drops every write not fsynced on command: a power cut.
//! - `skip`: a test that cannot run here says why and returns; under `CI=true` it fails.
//! - `install`: `hook install|uninstall` tests (used as `common::install`).
//! - `mcp`: `filewatchd mcp` driven by a real MCP client (the Python SDK, tests/mcp/driver.py).
//! - `users`: a second local user for one test (`useradd`, removed after), commands run as
//!   it, and the tree locks it plants and holds.
//! - `lifecycle`: daemons in the background (`start`, a hook's autostart), found by their
//!   state under `FILEWATCHD_HOME`, hook runs with the hooks' deadline, and `Reaper`, which
//!   kills them all when a test ends.
//! - `machine`: the few tests that change the machine for everyone run alone
//!   (`machine::exclusive()`); every `Workspace` holds a shared guard.
//!
//! And, for the real-CLI tests only (`tests/agents_*.rs`): `agent_cli` (running an agent's
//! pinned CLI) and `model` (the scripted model server it talks to).

pub mod agent_cli;
mod answers;
mod api;
mod cli;
mod daemon;
mod faults;
mod http;
pub mod install;
mod lazyfs;
mod lifecycle;
pub mod machine;
mod mcp;
pub mod model;
mod skip;
mod tree;
mod users;
mod wait;
mod workspace;

use std::time::Duration;

pub use {
    answers::*, cli::*, daemon::*, faults::*, http::*, lazyfs::*, lifecycle::*, mcp::*, skip::*, tree::*,
    users::*, wait::*, workspace::*,
};

pub const BIN: &str = env!("CARGO_BIN_EXE_filewatchd");
/// How long a daemon may take to answer after it was started (or strace to attach).
const START_DEADLINE: Duration = Duration::from_secs(30);
/// How long one HTTP request or CLI run may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(120);
