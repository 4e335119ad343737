//! The `filewatchd` binary: parse arguments, set up logging, run, map the result to an exit
//! code (0 done, 1 error, 2 usage, 3 refused because of conflicts).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use filewatchd::cli::{self, Cli, Command, failure, style};
use filewatchd::log_file::LogFile;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{FilterExt, filter_fn};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::prelude::*;

/// The static musl build's allocator (Cargo.toml, docs/benchmarks.md "Issue 52"): musl's
/// malloc serialises the reader threads; glibc builds keep glibc's. mimalloc also takes the
/// place of musl's `malloc` itself (its feature `override`), so SQLite's and zstd's
/// allocations, which never reach a `#[global_allocator]`, are mimalloc's too.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc commits the memory of its arenas as it uses it, and gives freed pages back after
/// 3 ms instead of 10. With its Linux defaults (commit each arena whole) the static build's
/// first index of 100,000 files peaked at 177-179 MB of RSS; committed on demand, at 83-97 MB
/// once SQLite's allocations were mimalloc's too; with both options at 65 MB (glibc: 59).
/// Giving pages back at once (0 ms) saves a little more memory but costs an end marker after
/// a `git commit` 10 % (its 2 MB index buffers are faulted in again each time): 3 ms costs 4 %
/// (docs/benchmarks.md, "Issue 52: C's malloc as well").
/// Set from `.init_array`, before anything allocates and mimalloc reserves its first arena.
#[cfg(target_env = "musl")]
#[used]
#[unsafe(link_section = ".init_array")]
static TUNE_ALLOCATOR: extern "C" fn() = tune_allocator;

#[cfg(target_env = "musl")]
extern "C" fn tune_allocator() {
    // Two of mimalloc's `mi_option_e` (v3's `mimalloc.h`; libmimalloc-sys 0.1.49, pinned by
    // Cargo.lock).
    const ARENA_EAGER_COMMIT: std::ffi::c_int = 4;
    const PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    // SAFETY: mimalloc's own setter, given its options and values it documents (0: commit on
    // demand; a delay in ms); it takes no lock and allocates nothing.
    unsafe {
        mi_option_set(ARENA_EAGER_COMMIT, 0);
        mi_option_set(PURGE_DELAY, 3);
    }
}

/// The static musl build's `memcmp` and `bcmp` (both architectures) and `memcpy` and
/// `memmove` (x86_64), in place of musl's: src/platform/mem.rs says why. The static link
/// takes a symbol from libc.a only when nothing before it defines it.
#[cfg(target_env = "musl")]
mod libc_string {
    use filewatchd::mem;
    use std::ffi::{c_int, c_void};

    /// # Safety
    /// As C's `memcmp`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
        // SAFETY: the caller's contract is the function's.
        unsafe { mem::compare(a.cast(), b.cast(), n) }
    }

    /// # Safety
    /// As C's `bcmp`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
        // SAFETY: the caller's contract is the function's.
        c_int::from(unsafe { mem::differ(a.cast(), b.cast(), n) })
    }

    /// # Safety
    /// As C's `memcpy`.
    #[cfg(target_arch = "x86_64")]
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
        // SAFETY: the caller's contract is the function's (memmove's is weaker).
        unsafe { mem::copy(dst.cast(), src.cast(), n) };
        dst
    }

    /// # Safety
    /// As C's `memmove`.
    #[cfg(target_arch = "x86_64")]
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
        // SAFETY: the caller's contract is the function's.
        unsafe { mem::copy(dst.cast(), src.cast(), n) };
        dst
    }
}

/// `filewatchd hook <something>` other than `hook install|uninstall`.
fn is_agent_hook() -> bool {
    let args: Vec<String> = std::env::args().skip(1).take(2).collect();
    args.first().is_some_and(|a| a == "hook")
        && !args.get(1).is_some_and(|a| a == "install" || a == "uninstall")
}

/// Every command that prints ends like any Unix tool when its stdout closes. The daemon and an
/// agent hook print nothing on stdout and keep Rust's default (SIGPIPE ignored): a hook exits 0
/// whatever its pipes do, and the daemon outlives whoever started it.
fn prints_to_stdout(command: Option<&Command>) -> bool {
    match command {
        None | Some(Command::Serve(_)) => false,
        Some(Command::Hook(hook)) => hook.manage.is_some(),
        Some(_) => true,
    }
}

/// `serve --log-file FILE`: stdout and stderr go to FILE (the daemon `start` runs).
fn log_file(command: Option<&Command>) -> Option<&std::path::Path> {
    match command {
        Some(Command::Serve(serve)) => serve.log_file.as_deref(),
        _ => None,
    }
}

/// A command piped into `head` ends like any Unix tool when the pipe closes, not with a panic
/// ("failed printing to stdout").
fn die_quietly_on_closed_stdout() {
    // SAFETY: sets the disposition of one signal at start-up, before any thread is spawned.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The command line parsed, and whether it asked for `--json`.
fn parse() -> Result<(Cli, bool), clap::Error> {
    let matches = Cli::command().try_get_matches()?;
    let cli = Cli::from_arg_matches(&matches).map_err(|err| err.format(&mut Cli::command()))?;
    Ok((cli, failure::json_requested(&matches)))
}

fn main() -> ExitCode {
    // `filewatchd` alone prints its usage, as git does, rather than starting a daemon in
    // whatever directory it was typed in (`filewatchd start` starts one; `serve`, or any flag,
    // runs one in the foreground).
    if std::env::args_os().len() == 1 {
        let _ = Cli::command().print_help();
        return ExitCode::from(2);
    }
    let (cli, json) = match parse() {
        Ok(parsed) => parsed,
        Err(err) if is_agent_hook() && err.use_stderr() => {
            // An agent runs `filewatchd hook <agent>`: a usage error must not block it (exit 2
            // is a "block" to Claude Code, Gemini CLI and Codex). One warning, exit 0.
            eprintln!("filewatchd hook: {}", err.kind());
            return ExitCode::SUCCESS;
        }
        Err(err) => return failure::report_usage(err),
    };
    if prints_to_stdout(cli.command.as_ref()) {
        die_quietly_on_closed_stdout();
    }
    style::init_color(cli.color);
    let default_level = match cli.verbose {
        0 => "filewatchd=info",
        1 => "filewatchd=debug",
        _ => "filewatchd=trace",
    };
    let log_file = match log_file(cli.command.as_ref()).map(LogFile::install).transpose() {
        Ok(log_file) => log_file,
        Err(err) => {
            eprintln!("filewatchd: cannot open the log file: {err}");
            return ExitCode::FAILURE;
        }
    };
    let writer = BoxMakeWriter::new(move || {
        if let Some(log_file) = &log_file {
            log_file.rotate_if_full();
        }
        std::io::stderr()
    });
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        // `--color`; `auto` colours a terminal only: a log redirected to a file stays plain.
        .with_ansi(style::stderr_color(cli.color))
        // No `RUST_LOG` can ask for what would print the token (`client::loggable`).
        .with_filter(filter.and(filter_fn(filewatchd::client::loggable)));
    tracing_subscriber::registry().with(log).init();
    match cli::run(cli) {
        Ok(code) => code,
        Err(err) => failure::report(&err, json),
    }
}
