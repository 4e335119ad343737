//! Starting and stopping the daemon: state directory and lock, store, watcher, first index
//! or reconcile, the capture worker thread, the HTTP server, and one shutdown for all (on
//! `SIGINT`, `SIGTERM` or `POST /v1/stop`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::api::{self, AppState};
use crate::capture::Context;
use crate::config::Config;
use crate::engine::{Worker, barrier};
use crate::fs::cookie::cookie_instance;
use crate::fs::read::RootDir;
use crate::instance::{self, Holder, Refusal, TreeLock};
use crate::queue;
use crate::state::{self, DaemonInfo, Progress, StateDir};
use crate::stats::Stats;
use crate::store::blobs::BlobDir;
use crate::store::{db, unjournaled};
use crate::watch::filter::IgnoreRules;
use crate::watch::{HintSender, Watches};

/// What `filewatchd serve` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    pub root: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub port: Option<u16>,
    /// `serve --test-knobs`: honour the FILEWATCHD_TEST_* variables (`crate::test_knobs`).
    pub test_knobs: bool,
}

/// The canonical workspace root and its state directory, as clients compute them too.
pub fn locate(root: Option<&Path>, state_dir: Option<&Path>) -> anyhow::Result<(PathBuf, PathBuf)> {
    let root = match root {
        Some(root) => root.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = crate::platform::ext::canonical(&root)
        .with_context(|| format!("workspace root {} does not exist", root.display()))?;
    anyhow::ensure!(
        root.is_dir(),
        "workspace root {} is not a directory",
        root.display()
    );
    let dir = match state_dir {
        Some(dir) => dir.to_path_buf(),
        None => state::project_dir(&state::state_home()?, &root),
    };
    Ok((root, dir))
}

/// Runs the daemon in the foreground until SIGINT, SIGTERM or `POST /v1/stop`.
pub fn serve(options: ServeOptions) -> anyhow::Result<()> {
    crate::test_knobs::init(options.test_knobs);
    crate::capture::limit_malloc_arenas();
    crate::store::fault::survive_file_size_limit();
    let (root, dir) = locate(options.root.as_deref(), options.state_dir.as_deref())?;
    let config = Config::load(&root, options.config.as_deref())?;
    let _tree_lock = lock_tree(&root, &dir)?;
    let state_dir = StateDir::acquire(dir, &root)?;
    if unjournaled::discard_interrupted(&state_dir.db_path()).context("cannot remove an unfinished index")? {
        tracing::warn!("the first index was interrupted: indexing again from the start");
    }
    let (conn, check) = db::open_writer_checking(&state_dir.db_path())?;
    let blobs = BlobDir::open(state_dir.blob_dir()).context("cannot open the blob store")?;
    blobs.remove_leftovers().context("cannot clean the blob store")?;

    remove_stale_cookies(&root, &state_dir)?;
    let queue_dir = queue::prepare(&state_dir.dir).context("cannot create the marker queue")?;
    let stats = Arc::new(Stats::default());
    // Until the worker starts fanotify's listener, after the first index (`watch::writers`).
    stats.set_ownership(Some("the daemon is still indexing the workspace".into()));
    let (tx, inbox) = mpsc::channel();
    let hints = HintSender::new(&root, tx.clone(), stats.clone()).with_queue(queue_dir.clone());
    let (queued, overflow) = (hints.queued(), hints.overflow());
    let watches = Watches::start(hints, stats.clone()).context("cannot start watching the workspace")?;
    // Listed once its watch is armed: a marker queued later comes as an event too.
    let markers = queue::listed(&queue_dir);
    let mut ctx = Context {
        root: Arc::new(RootDir::open(&root).context("cannot open the workspace root")?),
        blobs: Arc::new(blobs),
        rules: IgnoreRules::new(&root, &state_dir.dir, &config.ignore)
            .context("bad ignore rules")?
            .keeping(config.ignored_files),
        watches,
        stats: stats.clone(),
        max_file_size: config.max_file_size,
        retention: config.retention,
        verify: config.verify,
    };
    ctx.said_refusals();
    announce(&conn, &root);
    let progress = ProgressFile::start(&state_dir, &root, stats.clone());
    let started = indexing(|| Worker::start(conn, check, ctx, (tx, inbox), queued, overflow));
    crate::test_knobs::hold_index();
    progress.finish(&state_dir);
    let (mut worker, handle) = started?;
    worker.adopt_queue(queue_dir, markers);
    let (worker_thread, capture_ended) = spawn_capture(worker, stats.clone())?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
        .context("cannot start the async runtime")?;
    let port = options.port.or(config.port).unwrap_or(0);
    let live = Live {
        worker: handle.clone(),
        stats: stats.clone(),
        capture_ended,
    };
    let served = runtime.block_on(listen(&root, &state_dir, port, live));
    let stopped = stop_capture(&handle, worker_thread, &stats);
    state_dir.remove_info();
    stopped.and(served)
}

/// Says on stderr what the start-up walk is about to do: a first index reads every file, a
/// restart only looks for what changed while the daemon was stopped. (A read before the
/// integrity check ends: an index it cannot read is announced as a first index, and the check
/// says what is wrong with it.)
fn announce(conn: &rusqlite::Connection, root: &Path) {
    let indexed = crate::store::journal::history_begins(conn)
        .ok()
        .flatten()
        .is_some();
    if indexed {
        eprintln!(
            "filewatchd: looking for what changed in {} while stopped",
            root.display()
        );
    } else {
        eprintln!("filewatchd: indexing {}", root.display());
    }
}

/// The first index or restart reconcile, on this thread: an error, or a panic (reported as
/// one, with its message), stops the start-up like any other failure.
fn indexing<R>(start: impl FnOnce() -> anyhow::Result<R>) -> anyhow::Result<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(start)) {
        Ok(result) => result.context("indexing the workspace failed"),
        Err(panic) => anyhow::bail!("indexing the workspace failed: {}", panic_message(panic.as_ref())),
    }
}

/// `indexing.json`, rewritten while the start-up walk runs, for `status` to show.
struct ProgressFile {
    stop: mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How often `indexing.json` is rewritten.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl ProgressFile {
    fn start(state_dir: &StateDir, root: &Path, stats: Arc<Stats>) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let dir = state_dir.dir.clone();
        let mut progress = Progress {
            pid: std::process::id(),
            root: root.to_path_buf(),
            started_at_ms: crate::model::now_ms(),
            read: None,
            total: None,
            started: instance::process::own_start_time(),
        };
        let write = move || {
            loop {
                if let Some((read, total)) = stats.index_progress() {
                    (progress.read, progress.total) = (Some(read), Some(total));
                }
                if let Err(err) = state::write_progress(&dir, &progress) {
                    tracing::debug!(%err, "cannot write the indexing progress");
                }
                if !matches!(
                    stopped.recv_timeout(PROGRESS_EVERY),
                    Err(mpsc::RecvTimeoutError::Timeout)
                ) {
                    return;
                }
            }
        };
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(write)
            .ok();
        Self { stop, thread }
    }

    /// Stops rewriting it and removes it.
    fn finish(mut self, state_dir: &StateDir) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        state_dir.remove_progress();
    }
}

/// Stops the capture worker and joins its thread: an error when it had died on its own.
fn stop_capture(
    handle: &crate::engine::WorkerHandle,
    thread: std::thread::JoinHandle<()>,
    stats: &Stats,
) -> anyhow::Result<()> {
    // Set only by the thread's end: before `shutdown` is sent, it ended on its own.
    let died = stats.capture_stopped();
    handle.shutdown();
    let joined = thread.join();
    if !died && joined.is_ok() {
        return Ok(());
    }
    let why = joined.err().map_or_else(
        || "it ended on its own".to_string(),
        |p| panic_message(p.as_ref()),
    );
    anyhow::bail!(
        "the capture thread died ({why}), so nothing would be recorded: the daemon stopped. Start it again: it recovers as after a crash"
    )
}

/// What the HTTP side serves with: the worker, the counters, and word of the capture
/// thread's end.
struct Live {
    worker: crate::engine::WorkerHandle,
    stats: Arc<Stats>,
    capture_ended: oneshot::Receiver<()>,
}

/// Runs the worker on its own thread. However the thread ends (a panic included), `status`
/// stops calling the daemon healthy and the HTTP side is told to stop:
/// no daemon serves on whose capture is dead.
fn spawn_capture(
    worker: Worker,
    stats: Arc<Stats>,
) -> anyhow::Result<(std::thread::JoinHandle<()>, oneshot::Receiver<()>)> {
    let (ended, capture_ended) = oneshot::channel();
    let exit = CaptureExit {
        stats,
        ended: Some(ended),
    };
    let thread = std::thread::Builder::new()
        .name("capture".into())
        .spawn(move || {
            let _exit = exit;
            worker.run();
        })
        .context("cannot start the capture thread")?;
    Ok((thread, capture_ended))
}

/// Dropped when the capture thread ends, by unwinding too.
struct CaptureExit {
    stats: Arc<Stats>,
    ended: Option<oneshot::Sender<()>>,
}

impl Drop for CaptureExit {
    fn drop(&mut self) {
        self.stats.set_capture_stopped();
        if let Some(ended) = self.ended.take() {
            let _ = ended.send(());
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned());
    match text {
        Some(text) => format!("it panicked: {text}"),
        None => "it panicked".to_string(),
    }
}

/// One daemon per tree, machine-wide for this user: takes the tree's lock (`instance`), then
/// refuses to start inside or around a tree another daemon of this user's watches, naming it.
/// A lock that cannot be used at all (the private directory another user's, a symlink planted
/// as the lock) is reported and the start goes on: the state directory's own lock still keeps
/// out a second daemon of the same state.
fn lock_tree(root: &Path, state_dir: &Path) -> anyhow::Result<Option<TreeLock>> {
    let lock = match TreeLock::acquire(root, state_dir) {
        Ok(lock) => Some(lock),
        Err(Refusal::Held(holder)) => anyhow::bail!(refusal(root, holder.as_ref())),
        Err(Refusal::Unusable(why)) => {
            tracing::warn!(%why, "cannot take the machine-wide lock of the workspace: a daemon with another state directory would not be seen");
            None
        }
    };
    if let Some(other) = instance::overlapping(root) {
        anyhow::bail!(refusal(root, Some(&other)));
    }
    Ok(lock)
}

/// Why this daemon does not start: `other` watches `root`, a tree holding it or one inside it.
fn refusal(root: &Path, other: Option<&Holder>) -> String {
    let here = root.display();
    let Some(other) = other else {
        return format!("another filewatchd already watches {here} (it is still starting). Stop it first");
    };
    let who = match &other.url {
        Some(url) => format!("filewatchd (pid {}, {url})", other.pid),
        None => "a filewatchd that is still indexing".to_string(),
    };
    let (theirs, pid) = (other.root.display(), other.pid);
    let detail = match &other.url {
        Some(_) => format!("state in {}", other.state_dir.display()),
        None => format!("pid {pid}, state in {}", other.state_dir.display()),
    };
    // The note is this user's own (`instance`), and `stop` proves the pid before it signals.
    let stop = format!(
        "Stop it first with `filewatchd stop --state-dir {}`",
        other.state_dir.display()
    );
    if other.root == root {
        return format!("{who} already watches {here} ({detail}). {stop}");
    }
    if root.starts_with(&other.root) {
        return format!(
            "{who} already watches {theirs} ({detail}), which holds {here}: its history covers this directory, and the CLI finds it from here. {stop} to watch only this directory"
        );
    }
    format!(
        "{who} already watches {theirs} ({detail}), inside {here}: two daemons would each record the other's turns as outside work. {stop}"
    )
}

/// Removes the cookies earlier daemons of this state directory left, and records this one's
/// cookie instance before it plants any.
fn remove_stale_cookies(root: &Path, state_dir: &StateDir) -> anyhow::Result<()> {
    let mut instances = barrier::remove_stale_cookies(root, &state_dir.cookie_instances());
    if !instances.is_empty() {
        tracing::warn!(
            ?instances,
            "cannot remove cookies an earlier daemon left in the root"
        );
    }
    instances.push(cookie_instance().to_string());
    state_dir
        .write_cookie_instances(&instances)
        .context("cannot record the barrier's cookie instance")
}

async fn listen(root: &Path, state_dir: &StateDir, port: u16, live: Live) -> anyhow::Result<()> {
    let Live {
        worker,
        stats,
        capture_ended,
    } = live;
    let token = state_dir.write_token()?;
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let port = listener.local_addr()?.port();
    let url = format!("http://127.0.0.1:{port}");
    let blobs = BlobDir::open(state_dir.blob_dir())?;
    let app_state = AppState::new(
        root.to_path_buf(),
        state_dir.dir.clone(),
        port,
        token,
        state_dir.db_path(),
        blobs,
        worker,
        stats,
    );
    let app_state = Arc::new(app_state);
    let app = api::router(app_state.clone());
    state_dir.write_info(&DaemonInfo {
        url: url.clone(),
        pid: std::process::id(),
        root: root.to_path_buf(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started: instance::process::own_start_time(),
    })?;
    eprintln!(
        "filewatchd: watching {}, listening on {url} (state in {})",
        root.display(),
        state_dir.dir.display()
    );
    // A signal and `POST /v1/stop` (`api::StopRequest`) end the daemon alike.
    let stop = async {
        tokio::select! {
            () = shutdown_signal() => {}
            () = app_state.stop.asked() => {}
            _ = capture_ended => {}
        }
    };
    api::serve::serve(listener, app, stop).await;
    tracing::info!("shutting down");
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    // Windows has no SIGTERM: a daemon is stopped through its API (or Ctrl-C).
    #[cfg(windows)]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
}
