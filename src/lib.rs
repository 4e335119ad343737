//! filewatchd records every change to a workspace, whoever makes it, lets coding agents mark
//! their turns, and rolls the workspace back to any turn boundary without silently destroying
//! a change it was not asked to undo. This is the map; each module's own header says how it
//! works.
//!
//! ```text
//!  inotify ──► watch (notify callback: forward only) ──► Hint ──────┐
//!  fanotify ─► watch::writers (who wrote each file, with CAP_SYS_ADMIN) ┤
//!  HTTP ──► api (access checks, handlers) ──► engine::Command ──────┼──► engine worker thread
//!   ▲             │  queries on read-only SQLite connections        │  (the one SQLite writer)
//!   │             ▼                                                 ▼
//!  hook, mcp, cli ─► client  history, sessions ◄── store ◄── capture, restore, retention
//!                                                      (called by the engine; none calls back)
//!  capture, restore ─► fs (the confined file system: RootDir, reads, path operations)
//! ```
//!
//! Layers, bottom up: no module names one above it, and no two files of one module name each
//! other (tests/conventions_layers.rs reads the code for both). `platform` → `test_knobs`,
//! `escape`, `bounded`, `paths`, `config`,
//! `model`, `queue`, `log_file`, `git` → `store` → `refusal`, `stats`, `state`, `instance`, `fs`, `sessions`,
//! `watch` → `retention` → `history` → `pins` → `restore` → `timeline` → `wire` → `capture` →
//! `engine` → `api` → `daemon`; `client` → `lifecycle` → `hook` → `mcp` → `cli`.
//!
//! The daemon:
//! - [`watch`]: one non-recursive inotify watch per tracked directory, the ignore rules
//!   ([`watch::filter`]); its callback only forwards hints, and tells a rollback waiting for
//!   it that it has read its cookie (`fs::cookie::Drain`: a large rollback's own events never
//!   overflow the kernel's queue); with `CAP_SYS_ADMIN`, fanotify's writers of each file
//!   ([`watch::writers`]: their ancestry, by file handle).
//! - [`engine`]: the single-writer loop. Hints and commands reach one thread in order; every
//!   command waits for its barrier cookie (G1), so writes are attributed by position: to the
//!   turns and tool calls open when they are recorded (`capture::owners`: whose a write is).
//!   A burst's files are read while it goes on, at idle priority, and recorded ahead of the
//!   marker.
//! - [`capture`]: hints to facts (versions): bursts, the first index and the restart's walk,
//!   rescans after lost events, the verification pass.
//! - [`restore`]: rollback, undo, redo, restore and revert: chain, plan (the dry run; a
//!   session's takes back its own writes only, merging others' later changes by lines),
//!   journal, apply, finish (all or nothing, G12), recovery at start-up.
//! - [`git`]: the workspace's repository as part of a turn: HEAD, branches and tags, the stash
//!   and the index read from `.git` (the engine records them at every marker, `store::git`),
//!   and moved back by a rollback through git's own protocol (`restore::git`).
//! - [`fs`]: the confined file system beneath capture and restore: the root held open, reads
//!   that follow no symlink, a rollback's path operations (confined by [`platform`]), durability, temp names,
//!   the daemon's cookies in the root, what FUSE does differently (`.fuse_hidden` stand-ins).
//! - [`sessions`], [`history`], [`timeline`], [`pins`], [`retention`]: turns and forks; a
//!   turn's net changes, diffs, blame and a path's versions; the timeline of turns and
//!   rollbacks; named checkpoints; garbage collection and the horizon it leaves.
//! - [`store`]: blobs (blake3, zstd), the SQLite index (migrations, SQL, the rollback
//!   journal), storage faults by cause; [`refusal`]: why a command that changes the record
//!   cannot run now, the same for every operation.
//! - [`api`]: the HTTP API (docs/api.md), the review page (`api::ui`), and the same read
//!   handlers run in the CLI on a stopped daemon's index (`api::offline`).
//! - [`daemon`]: starts everything and shuts it down on one signal, or when `POST /v1/stop`
//!   asks (how `filewatchd stop` stops it on every platform: [`lifecycle`]).
//! - [`platform`]: what differs between operating systems, behind one interface with three
//!   implementations: Linux, a portable Unix one (macOS's; a Linux build's with the feature
//!   `portable`) and Windows: confined opens, the atomic exchange, `syncfs`, `/proc`,
//!   `sock_diag`, idle priority. The code's file calls go through `platform::sys` (rustix's
//!   words: rustix on Unix, the standard library on paths on Windows) and the standard
//!   library's Unix extensions through `platform::ext`. The rest of the code names no OS
//!   (docs/platforms.md). `platform::mem`: the `memcmp` and `memcpy` the static musl build
//!   exports in place of musl's slower ones.
//! - [`bounded`]: a file from outside (the config, an ignore file) read only when it is a
//!   regular file of bounded size: never a FIFO waited on or a device read without end.
//! - [`escape`]: text from outside (names, prompts, paths, errors quoting them) as a terminal
//!   shows it, never steering it: the CLI's, the hooks' and `filewatchd mcp`'s stderr lines.
//! - [`state`], [`instance`], [`stats`], [`config`], [`paths`], [`model`]: the state directory;
//!   one daemon per tree (a private per-user lock); counters for `status`; `.filewatchd.toml`;
//!   workspace-relative byte paths; the words of docs/guarantees.md as types, with a
//!   rollback's answer (`model::answer`: made by `restore`, decoded once by `store::journal`,
//!   a row that does not read an error naming it).
//!
//! Its clients:
//! - [`wire`]: the API's requests and answers as types, read and written by `api` and by
//!   every client: the CLI, the hooks and the MCP server build no request and read no answer
//!   by key.
//! - [`client`]: the HTTP client of the CLI, the hooks and the MCP server.
//! - [`lifecycle`]: the daemon seen from outside: which workspace a directory belongs to,
//!   whether its daemon runs, starting it in the background (logging through [`log_file`]),
//!   stopping it.
//! - [`hook`]: the agents' hook adapters and their installer (docs/agents.md), autostart,
//!   and [`queue`], the turn markers a hook leaves while the daemon is not answering yet.
//! - [`mcp`]: `filewatchd mcp`, the record as Model Context Protocol tools for the agent.
//! - [`cli`]: the command line (docs/cli.md).
//! - [`test_knobs`]: the integration tests' `FILEWATCHD_TEST_*` knobs, read only by
//!   `serve --test-knobs`.

pub(crate) mod api;
pub(crate) mod bounded;
pub(crate) mod capture;
pub mod cli;
pub mod client;
pub(crate) mod config;
pub(crate) mod daemon;
pub(crate) mod engine;
pub(crate) mod escape;
pub mod fs;
pub(crate) mod git;
pub mod history;
pub(crate) mod hook;
pub(crate) mod instance;
pub(crate) mod lifecycle;
pub mod log_file;
pub(crate) mod mcp;
pub mod model;
pub mod paths;
pub(crate) mod pins;
pub(crate) mod platform;
/// The string functions the static musl build puts in place of musl's (src/main.rs).
pub use platform::mem;
pub(crate) mod queue;
pub(crate) mod refusal;
pub mod restore;
pub(crate) mod retention;
pub mod sessions;
pub mod state;
pub(crate) mod stats;
pub mod store;
pub(crate) mod test_knobs;
pub mod timeline;
pub(crate) mod watch;
pub(crate) mod wire;
