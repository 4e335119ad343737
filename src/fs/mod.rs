//! The confined file system, beneath everything that reads or writes the workspace: the root
//! held open and every path resolved beneath it without following a symlink (`read`: what one
//! path is now, stable reads, `RootDir`), the operations a rollback makes on one path through
//! the directory that holds it (`ops`: confined by `platform::open_beneath`, temp + fsync +
//! rename, exchange where the OS has it, no clobber), the print of a file over
//! `max_file_size` (`print`: a bounded sample, never a full read), the names of a rollback's
//! temp files (`temp`), paths past `PATH_MAX` opened a piece at a time (`deep`), the agents'
//! settings files `hook install` edits (`settings`: never through a symlink, temps created
//! exclusively under random names), the daemon's cookies in the root and a rollback waiting
//! for the watcher to catch up with its writes (`cookie`), readers working ahead of a writer
//! (`feed`, `map_parallel`, `map_parallel_at_idle`), processes' ancestry (`procs`), and what
//! FUSE does differently (`fuse`: its `.fuse_hidden` stand-ins for removed files still open).
//! What differs per OS (openat2, syncfs, /proc, priorities) is `crate::platform`'s. Capture
//! and restore both use it; it uses neither.

pub(crate) mod cookie;
pub(crate) mod deep;
pub(crate) mod feed;
pub(crate) mod fuse;
pub(crate) mod mode;
pub(crate) mod ops;
pub(crate) mod print;
pub(crate) mod procs;
pub mod read;
pub(crate) mod settings;
pub(crate) mod temp;
