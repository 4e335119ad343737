//! `start`, `stop` and `restart`: the workspace's daemon in the background
//! (`crate::lifecycle`), and `status` while that daemon is still indexing.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::json;

use super::args::StartCmd;
use super::flags::ServeArgs;
use super::style::{Paint, paint};
use super::{confirm, escape};
use crate::lifecycle::spawn::{self, Launch, StartLock, Waited};
use crate::lifecycle::stop::{self, Stopped};
use crate::lifecycle::{self, Located, Running};
use crate::state::Progress;

/// How long `start` waits for the daemon to take the workspace before it gives up.
const START_DEADLINE: Duration = Duration::from_secs(30);
/// How long `start` waits for a daemon that is indexing to answer before it returns anyway.
const INDEX_PATIENCE: Duration = Duration::from_secs(3);

pub fn start(args: &ServeArgs, cmd: StartCmd) -> anyhow::Result<ExitCode> {
    let loc = locate(args)?;
    confirm::risky_root(&loc.root, cmd.yes)?;
    start_located(&loc, &launch(args, cmd))?;
    Ok(ExitCode::SUCCESS)
}

pub fn stop(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    stop_located(&locate(args)?)?;
    Ok(ExitCode::SUCCESS)
}

pub fn restart(args: &ServeArgs, cmd: StartCmd) -> anyhow::Result<ExitCode> {
    let loc = locate(args)?;
    confirm::risky_root(&loc.root, cmd.yes)?;
    stop_located(&loc)?;
    start_located(&loc, &launch(args, cmd))?;
    Ok(ExitCode::SUCCESS)
}

fn locate(args: &ServeArgs) -> anyhow::Result<Located> {
    let loc = lifecycle::locate(args.root.as_deref(), args.state_dir.as_deref(), None)?;
    if let Some(foreign) = &loc.passed_over {
        eprintln!("filewatchd: {}", escape::text(&foreign.notice()));
    }
    Ok(loc)
}

fn launch(args: &ServeArgs, cmd: StartCmd) -> Launch {
    Launch {
        config: cmd.config.or_else(|| args.config.clone()),
        port: cmd.port.or(args.port),
    }
}

fn stop_located(loc: &Located) -> anyhow::Result<()> {
    let root = loc.root.to_string_lossy();
    let root = escape::quoted(&root);
    match stop::stop(loc)? {
        Stopped::NotRunning => println!("not running: no filewatchd for {root}"),
        Stopped::Exited(pid) => println!("stopped: pid {pid}, {root}"),
    }
    Ok(())
}

/// Starts the daemon of `loc` unless one runs; prints one line either way.
fn start_located(loc: &Located, launch: &Launch) -> anyhow::Result<()> {
    if let Some(line) = already_running(loc)? {
        println!("{}", escape::text(&line));
        return Ok(());
    }
    let _lock = StartLock::take(loc, Instant::now() + START_DEADLINE)?;
    // Another start may have won the lock first.
    if let Some(line) = already_running(loc)? {
        println!("{}", escape::text(&line));
        return Ok(());
    }
    let mut spawned = spawn::spawn(loc, launch)?;
    let pid = spawned.pid();
    let patience = Instant::now() + INDEX_PATIENCE;
    let ready = |running: &Running| match running {
        Running::Answering(_) => true,
        Running::Indexing { .. } => Instant::now() >= patience,
        _ => false,
    };
    let log = spawned.log.display().to_string();
    match spawned.wait(loc, Instant::now() + START_DEADLINE, ready) {
        Waited::Ready(running) => {
            let line = started_line("started", pid, &running, &loc.root);
            println!("{}", escape::text(&line));
        }
        Waited::Pending => bail!(
            "the daemon (pid {pid}) has not taken the workspace after {} s; its log: {log}",
            START_DEADLINE.as_secs()
        ),
        Waited::Exited { status, log_tail } => {
            let tail: Vec<String> = log_tail.iter().map(|l| format!("  {l}")).collect();
            bail!(
                "the daemon did not start ({status}); the end of its log ({log}):\n{}",
                tail.join("\n")
            )
        }
    }
    Ok(())
}

/// The line saying which daemon runs, `None` when none does.
fn already_running(loc: &Located) -> anyhow::Result<Option<String>> {
    let root = loc.root.display();
    match lifecycle::probe(loc) {
        Running::Stopped => Ok(None),
        Running::Silent(info) if lifecycle::is_gone_or_going(&info) => bail!(
            "the filewatchd for {root} (pid {}) was stopped but has not let go of the workspace yet (the kernel is still ending it): try again in a moment",
            info.pid
        ),
        Running::Silent(info) => bail!(
            "the filewatchd for {root} (pid {}) holds the workspace but does not answer at {}: `filewatchd restart` replaces it",
            info.pid,
            info.url
        ),
        Running::Elsewhere(other) => bail!(
            "another filewatchd (pid {}) already watches {root}, with its state in {}: talk to it with `--state-dir {}`",
            other.pid,
            other.state_dir.display(),
            other.state_dir.display()
        ),
        running => {
            let pid = running.pid().unwrap_or_default();
            Ok(Some(started_line("already running", pid, &running, &loc.root)))
        }
    }
}

/// "started: pid 42, http://127.0.0.1:4567, watching /root", or "..., indexing /root (...)".
fn started_line(what: &str, pid: u32, running: &Running, root: &Path) -> String {
    let root = root.display();
    match running {
        Running::Answering(info) => format!("{what}: pid {pid}, {}, watching {root}", info.url),
        _ => format!(
            "{what}: pid {pid}, indexing {root} (`filewatchd status` shows the progress; it answers once done)"
        ),
    }
}

/// `status` while the daemon runs its start-up walk: its progress (`None` when it does not).
pub fn status_while_indexing(args: &ServeArgs, json: bool) -> anyhow::Result<Option<ExitCode>> {
    let elsewhere = ["FILEWATCHD_URL", "FILEWATCHD_TOKEN"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
    if elsewhere {
        return Ok(None);
    }
    let Ok(loc) = locate(args) else {
        return Ok(None);
    };
    let Running::Indexing { pid, progress } = lifecycle::probe(&loc) else {
        return Ok(None);
    };
    if json {
        let answer = json!({
            "root": loc.root,
            "state_dir": loc.state_dir,
            "pid": pid,
            "indexing": progress.as_ref().map(|p| json!({
                "started_at": crate::model::format_time(p.started_at_ms),
                "read": p.read,
                "total": p.total,
            })),
        });
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print_indexing(&loc, pid, progress.as_ref());
    }
    Ok(Some(ExitCode::SUCCESS))
}

fn print_indexing(loc: &Located, pid: Option<u32>, progress: Option<&Progress>) {
    let pid = pid.map_or_else(|| "pid unknown yet".to_string(), |pid| format!("pid {pid}"));
    println!("root:          {}", escape::text(&loc.root.to_string_lossy()));
    println!(
        "state:         {}",
        escape::text(&loc.state_dir.to_string_lossy())
    );
    println!("daemon:        {pid}, {}", paint("indexing", Paint::Warning));
    let Some(progress) = progress else {
        println!("progress:      starting up");
        return;
    };
    let seconds = (crate::model::now_ms() - progress.started_at_ms).max(0) / 1000;
    let done = match (progress.read, progress.total) {
        (Some(read), Some(total)) => format!("{read} of {total} files read"),
        _ => "listing the files".to_string(),
    };
    println!("progress:      {done}, {seconds} s so far");
    println!(
        "               (it answers once done: turn markers sent meanwhile by hooks are queued, not lost)"
    );
}
