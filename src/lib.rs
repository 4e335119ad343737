//! filewatchd records every change to a workspace, whoever makes it, lets coding agents mark
//! their turns, and rolls the workspace back to any turn boundary without silently destroying
//! a change it was not asked to undo.
//!
//! # Architecture
//!
//! ```text
//!  inotify ──► watch (notify callback: forward only) ──► Hint ──────┐
//!  HTTP ──► api (access checks, handlers) ──► engine::Command ──────┼──► engine worker thread
//!   ▲             │  queries on read-only SQLite connections        │  (the one SQLite writer)
//!   │             ▼                                                 ▼
//!  hook, mcp, cli ─► client  history, sessions ◄── store ◄── capture, restore, retention
//!                                                      (called by the engine; none calls back)
//!  capture, restore ─► fs (the confined file system: RootDir, reads, path operations)
//! ```
//!
//! Layers, bottom up (no module imports one above it; no circle): `test_knobs`, `paths`,
//! `config`, `model` (the words, `Hash`), `queue`, `log_file` → `store` → `stats`, `state`,
//! `instance`, `fs`, `sessions`, `watch` → `retention` → `history` → `pins` → `restore` →
//! `timeline`, `capture` → `engine` (the single-writer loop: it calls capture with hints,
//! restore with a narrow `restore::Workspace` and applies the effects it returns, and
//! retention) → `api` → `daemon`; `client` (over `state`, reading answers back in the words
//! of `api` and `restore`) → `lifecycle` → `hook` → `mcp` → `cli` (which also starts the
//! `daemon`).
//!
//! - [`watch`]: one non-recursive inotify watch per tracked directory (ignored directories get
//!   none; those the watch limit refuses are listed as unwatched), and [`watch::filter`], the
//!   ignore rules. The callback only forwards its own `watch::Hint`s (paths, lost events, the
//!   root itself) into a channel of the receiver's message type.
//! - [`fs`]: the confined file system beneath both capture and restore: the root held open
//!   (`fs::read::RootDir`) and what a path is now (`fs::read`: confined, symlink-free, stable
//!   reads; a file it cannot read is described by its `stat` as `unreadable`), a rollback's
//!   operations on one path (`fs::ops`: openat2-confined, temp + sync + rename, exchange, no
//!   clobber), its writes made durable at once (`fs::sync`: one `syncfs` of the workspace's
//!   file system for all the temp files, one for all the renames), the names of its temp
//!   files (`fs::temp`), readers working ahead of a writer (`fs::feed`, `map_parallel`,
//!   `map_parallel_at_idle` with `fs::priority`).
//! - [`engine`]: the single-writer loop. Hints and commands (`engine::Msg`) reach one
//!   thread in order; it owns the writer connection and decides when each piece of work
//!   runs. Every command (turn markers, rollbacks, forks, gc, verify) waits for its cookie
//!   (`engine::barrier`, G1), so writes are attributed by position; hints wait in
//!   `engine::batch` until their burst settles, or 2 s into a stream that does not (a command is
//!   mostly done before its files are read; its timing decided on an injected clock, its
//!   cases data files in `src/engine/batch_cases/`); then the directories the
//!   watch limit left unwatched are verified (G2). A store that cannot take a version is a
//!   storage fault: the path stays pending and is retried with back-off, and commands that
//!   need it are refused (`engine::checks`, `store::fault`). After lost events
//!   (`engine::lost`) the hints queued before the loss are dropped: the full rescan that
//!   follows has seen what they name. A lost root stops capture for good: commands that would
//!   write are refused, reads go on. A panic on the worker thread (or in the first index,
//!   which runs before it starts) ends the daemon through its one shutdown path (`daemon`).
//! - [`capture`]: hints to facts. A path is a fact only after a re-read; a settled burst is
//!   recorded in one transaction (`capture::record`), its paths' latest versions read first so
//!   the readers skip what the index proves (`fs::read::observe_expecting`: a stat that proves
//!   a file unchanged spares the open, content the latest version holds is hashed but not
//!   stored again); a burst nobody waits for is read by helpers at idle priority beside the
//!   worker, so the agent's command keeps the CPU; the first index, the restart reconcile
//!   and rescans after lost events share one parallel walk (`capture::rescan`,
//!   `capture::walk`; no stat when the index is empty, else compared with the stat cache
//!   alone, each entry holding a 16-byte print of its stat: a million paths in 48 MB), whose
//!   paths readers observe ahead of the writer in large transactions; a clean exit settles
//!   the racy stat-cache entries so the next start re-reads nothing unchanged. At start-up
//!   the walk runs beside the index's integrity check (`store::db::IntegrityCheck`); nothing
//!   is written before it passes. When an ignore rule hides a path or brings one into view,
//!   `capture::tracked` records it (versions of kind `untracked`), and every rollback leaves
//!   a path alone at a moment it was untracked. `capture::unwatched` verifies the directories the watch limit left
//!   unwatched by a stat walk of those only; `capture::lost_root` tells whether the root's
//!   path still names the directory held open. The verification pass (`capture::verify`: the
//!   rescan's survey of the whole workspace) finds what no event reported (writes through a
//!   shared mapping): on demand, and in the background when the workspace is quiet, walking
//!   at idle priority and yielding to any command; what it finds is attributed by the time it
//!   changed (`store::found`).
//! - [`restore`]: rollback, undo, redo and time rollback on a `restore::Workspace` (root,
//!   blobs, size limit: no watcher), returning its effects on the watches: `chain` finds the
//!   target, `plan` lists actions and conflicts (the dry run; every path checked in parallel, re-read
//!   and hashed unless the stat cache proves it unchanged),
//!   `redo` plans a redo (only the paths the rollback it names changed), `revert` plans the
//!   revert of one file of a turn or one hunk of it (its content stored as a new blob, a
//!   rollback of the session restricted to that path, so `redo` takes it back), `journaled` writes the
//!   plan durably (the plan's queries in one transaction), `apply` changes the files (each
//!   verified against its target after; `apply::durable` syncs them, `apply::install` moves them
//!   into place on several threads), `finish`
//!   commits it, or puts back what a failed one changed (all or nothing, G12), `found` stores
//!   what a forced rollback overwrites, `recover` finishes an interrupted rollback or put-back
//!   at start-up, `past` reads the journal's rollbacks back with their stored `Outcome` (a session's
//!   listing only their briefs, which SQLite derives from each answer as it is written). A
//!   forced rollback records what the disk holds that the record lacks, then plans those
//!   paths again (only those).
//! - [`sessions`]: a session with its fork ancestors (`Lineage`): inherited turns and whose
//!   changes are a session's own work; `sessions::turns`: naming, finding, opening, closing
//!   and forking turns; `sessions::pick`: which session a typed name means (the full name, `last`,
//!   a unique prefix), for the CLI and the MCP server; `sessions::review`: reviewed marks of a turn or one of its files
//!   (written by the engine, SQL in `store::reviews`). [`history`]: a turn's net changes (a write made while
//!   turns of several sessions were open is in each of them, marked `ambiguous`) and diffs, a
//!   path's versions, the workspace at a time (`seq_at_time`), and what a path held at a
//!   point (`history::content`), and `history::blame`: each line of a text version attributed
//!   to the version that introduced it (Myers diffs along the path's versions, a recreated file
//!   starting over); `history::counts`: each ended turn's counts, computed from its net changes
//!   and stored by the engine when the turn ends (`engine::upkeep` fills the missing ones a few
//!   turns at a time), read by the turns listing and the timeline (a row a late version or a
//!   collection made stale is gone: that turn is computed on read).
//! - [`timeline`]: the turns, undos, redos, rollbacks, time rollbacks and restores of a
//!   session (or of all) in time order, a page at a time, chosen from the rows alone; only the
//!   page's entries get their net changes and stored answers; `timeline::undone` marks the
//!   turns an undo or rollback took out of effect; `timeline::outside` puts the writes made
//!   outside any turn (or found by a scan) between the turns, probing each gap between turn
//!   boundaries. [`watch::filter`]'s `explain` names the rule
//!   hiding an ignored path (asked of the engine, which holds the rules).
//! - [`retention`]: garbage collection by keep_days / keep_turns / max_store_bytes, and the
//!   horizon it leaves (`retention::expired`: a state it has collapsed); it keeps every
//!   version a pin needs; `retention::collection` runs a collection a step at a time, each its
//!   own short transaction (collapse by ranges of path ids, then blobs by ranges of hashes, each
//!   range bounded by the rows it covers), the engine recording hints between steps and
//!   answering a command waiting for its cookie before the next step (`engine::upkeep`). [`pins`]: named checkpoints (the end of a turn, a time, now) as the
//!   sequence number each stands for, made and removed by the engine behind the barrier; a
//!   rollback to one (`restore::Operation::Pin`) is checked as a time rollback.
//! - [`store`]: `blobs` (blake3-addressed, zstd, small ones inline in SQLite, large ones as
//!   files), `db` (pragmas, migrations from `migrations/`), `sql`, `journal`, `gc` (the SQL),
//!   `pins` (their SQL), `turn_counts` (the stored counts of ended turns), `briefs` (what a
//!   session's listing shows of each rollback), `size` (the store's size: a counter the blob
//!   rows' triggers keep, checked at start-up beside the integrity check), `fault` (storage
//!   faults by cause).
//! - [`api`]: the HTTP API of PRODUCT.md 5.2, served by its own hyper loop (`api::serve`:
//!   connection cap, header and body timeouts), each answer read in one snapshot, history,
//!   content and open turns behind the barrier. It parses, asks history, sessions, restore and
//!   retention (never the store's SQL), and renders their results as its own answer types
//!   (`api::answer`: a rollback's stored `Outcome` is not the wire form), with the error codes
//!   of `api::error::ErrorCode`. `api::ui` is the review page: its one-time login codes and
//!   in-memory cookie sessions (`api::ui::door`), the cookie and CSRF checks `api::access`
//!   applies to its `/v1` requests, and its assets compiled in. [`client`]: its HTTP client, for [`cli`] (the
//!   command line of 5.3) and [`hook`] (the agents' hook
//!   adapters and their installer, 5.4, 9; `hook::agents`, the sessions each agent process
//!   reported) and [`mcp`] (`filewatchd mcp`: the record as Model Context Protocol tools on
//!   stdio, for the agent; it starts the daemon as a hook does, finds "this session" by the
//!   agent's word, the hooks' record of its process or the only candidate, and never opens
//!   the store); [`daemon`]: starts everything and
//!   shuts it down on one signal, or with a non-zero exit when the capture thread dies (no
//!   daemon serves on whose capture is dead).
//! - [`state`]: the state directory (lock, the root it watches, token, `daemon.json`, and
//!   `indexing.json`, the start-up walk's progress, which the daemon rewrites until it listens);
//!   [`instance`]: one daemon per tree, machine-wide (a lock named by the root's device and
//!   inode, whatever the state directory); [`config`]: `.filewatchd.toml`;
//!   [`paths`]: workspace-relative byte paths and their lossless text form; [`model`]: the
//!   words of PRODUCT.md 2 as types; [`stats`]: report-and-continue counters for `status`.
//!   [`test_knobs`]: the integration tests' `FILEWATCHD_TEST_*` knobs, read once at start-up
//!   and only by `serve --test-knobs`.
//! - [`lifecycle`]: the daemon seen from outside: which workspace a directory belongs to, whether
//!   its daemon runs (tested without taking any lock a starting daemon needs), starting one in
//!   the background (detached, logging to `daemon.log` through [`log_file`], which rotates it),
//!   stopping it, the roots never indexed without asking (`/`, the home directory), and every
//!   workspace with a state directory. `cli` (`start`, `stop`, `restart`, `projects`,
//!   `forget`) and `hook` (autostart) use it. [`queue`]: the turn markers a hook leaves while
//!   the daemon is not answering yet; the watcher watches the queue with the same inotify
//!   instance as the workspace, so the engine applies each marker at its place among the hints
//!   (`engine::queued`), those queued before it started right after its first index.

pub mod api;
pub mod capture;
pub mod cli;
pub mod client;
pub mod config;
pub mod daemon;
pub mod engine;
pub mod fs;
pub mod history;
pub mod hook;
pub mod instance;
pub mod lifecycle;
pub mod log_file;
pub mod mcp;
pub mod model;
pub mod paths;
pub mod pins;
pub mod queue;
pub mod restore;
pub mod retention;
pub mod sessions;
pub mod state;
pub mod stats;
pub mod store;
pub mod test_knobs;
pub mod timeline;
pub mod watch;
