//! filewatchd records every change to a workspace, whoever makes it, and lets coding agents
//! mark their turns so each turn's changes can be shown (and, later, rolled back).
//!
//! # Architecture
//!
//! ```text
//!  inotify ──► watch (notify callback: forward only) ──► Msg::Hint ─┐
//!  HTTP ──► api (axum: access checks, handlers) ──► Msg::Command ───┼──► capture worker thread
//!                 │  queries on read-only SQLite connections        │    (the one SQLite writer)
//!                 ▼                                                 ▼
//!              history ◄──────────────── store (SQLite index + content-addressed blobs)
//! ```
//!
//! - [`watch`]: one non-recursive inotify watch per tracked directory (ignored directories get
//!   none), and [`watch::filter`], the ignore rules. The callback only forwards path hints.
//! - [`capture`]: the worker that owns the writer connection. Hints are facts only after a
//!   re-read (`capture::read`: confined, symlink-free, stable reads); a settled burst is
//!   recorded in one transaction (`capture::record`); the first index, the restart reconcile
//!   and rescans after lost events share one stat-walk (`capture::rescan`). Turn markers wait
//!   for their cookie (`capture::barrier`, G1) before they open or close a turn
//!   (`capture::turns`), so writes are attributed by position.
//! - [`store`]: `blobs` (blake3-addressed, zstd, small ones inline in SQLite, large ones as
//!   files), `db` (pragmas, migrations from `migrations/`), `sql` (every statement).
//! - [`history`]: a turn's net changes (renames paired) and text diffs, computed from versions.
//! - [`api`]: the HTTP API of PRODUCT.md 5.2; [`cli`]: the command line of 5.3;
//!   [`daemon`]: starts everything and shuts it down on one signal.
//! - [`state`]: the state directory (lock, token, `daemon.json`); [`config`]: `.filewatchd.toml`;
//!   [`paths`]: workspace-relative byte paths and their lossless text form; [`model`]: the
//!   words of PRODUCT.md 2 as types; [`stats`]: report-and-continue counters for `status`.

pub mod api;
pub mod capture;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod history;
pub mod hook;
pub mod model;
pub mod paths;
pub mod restore;
pub mod retention;
pub mod sessions;
pub mod state;
pub mod stats;
pub mod store;
pub mod watch;
