//! Starting and stopping the daemon: state directory and lock, store, watcher, first index
//! or reconcile, the capture worker thread, the HTTP server, and one shutdown for all.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use anyhow::Context as _;
use tokio::net::TcpListener;

use crate::api::{self, AppState};
use crate::capture::read::RootDir;
use crate::capture::{Context, Worker};
use crate::config::Config;
use crate::state::{self, DaemonInfo, StateDir};
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
}

/// The canonical workspace root and its state directory, as clients compute them too.
pub fn locate(root: Option<&Path>, state_dir: Option<&Path>) -> anyhow::Result<(PathBuf, PathBuf)> {
    let root = match root {
        Some(root) => root.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = root
        .canonicalize()
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

/// Runs the daemon in the foreground until SIGINT or SIGTERM.
pub fn serve(options: ServeOptions) -> anyhow::Result<()> {
    crate::capture::limit_malloc_arenas();
    let (root, dir) = locate(options.root.as_deref(), options.state_dir.as_deref())?;
    let config = Config::load(&root, options.config.as_deref())?;
    refuse_overlap(&root, &dir)?;
    let state_dir = StateDir::acquire(dir, &root)?;
    if unjournaled::discard_interrupted(&state_dir.db_path()).context("cannot remove an unfinished index")? {
        tracing::warn!("the first index was interrupted: indexing again from the start");
    }
    let (conn, check) = db::open_writer_checking(&state_dir.db_path())?;
    let blobs = BlobDir::open(state_dir.blob_dir()).context("cannot open the blob store")?;
    blobs.remove_leftovers().context("cannot clean the blob store")?;

    let stats = Arc::new(Stats::default());
    let (tx, inbox) = mpsc::channel();
    let hints = HintSender::new(&root, tx.clone(), stats.clone());
    let (queued, overflow) = (hints.queued(), hints.overflow());
    let watches = Watches::start(hints, stats.clone()).context("cannot start watching the workspace")?;
    let ctx = Context {
        root: Arc::new(RootDir::open(&root).context("cannot open the workspace root")?),
        blobs: Arc::new(blobs),
        rules: IgnoreRules::new(&root, &state_dir.dir, &config.ignore).context("bad ignore rules")?,
        watches,
        stats: stats.clone(),
        max_file_size: config.max_file_size,
        retention: config.retention,
        verify: config.verify,
    };
    eprintln!("filewatchd: indexing {}", root.display());
    let (worker, handle) = Worker::start(conn, check, ctx, (tx, inbox), queued, overflow)
        .context("indexing the workspace failed")?;
    let worker_thread = std::thread::Builder::new()
        .name("capture".into())
        .spawn(move || worker.run())
        .context("cannot start the capture thread")?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
        .context("cannot start the async runtime")?;
    let port = options.port.or(config.port).unwrap_or(0);
    let served = runtime.block_on(listen(&root, &state_dir, port, handle.clone(), stats));
    handle.shutdown();
    if worker_thread.join().is_err() {
        tracing::error!("the capture thread panicked");
    }
    state_dir.remove_info();
    served
}

/// One daemon per tree: refuses to start for a watched workspace, inside one, or around one.
fn refuse_overlap(root: &Path, own: &Path) -> anyhow::Result<()> {
    let Some(other) = state::state_home()
        .ok()
        .and_then(|home| state::overlapping_daemon(&home, root, own))
    else {
        return Ok(());
    };
    let (here, theirs) = (root.display(), other.root.display());
    let (who, stop) = match &other.info {
        Some(info) => (
            format!("filewatchd (pid {}, {})", info.pid, info.url),
            format!("Stop it first (kill {})", info.pid),
        ),
        None => (
            "a filewatchd that is still indexing".to_string(),
            "Stop it first".to_string(),
        ),
    };
    if other.root == root {
        anyhow::bail!("{who} already watches {here} with another state directory. {stop}");
    }
    if root.starts_with(&other.root) {
        anyhow::bail!(
            "{who} already watches {theirs}, which holds {here}: its history covers this directory, and the CLI finds it from here. {stop} to watch only this directory"
        );
    }
    anyhow::bail!(
        "{who} already watches {theirs}, inside {here}: two daemons would each record the other's turns as outside work. {stop}"
    )
}

async fn listen(
    root: &Path,
    state_dir: &StateDir,
    port: u16,
    worker: crate::capture::WorkerHandle,
    stats: Arc<Stats>,
) -> anyhow::Result<()> {
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
    let app = api::router(Arc::new(app_state));
    state_dir.write_info(&DaemonInfo {
        url: url.clone(),
        pid: std::process::id(),
        root: root.to_path_buf(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    })?;
    eprintln!(
        "filewatchd: watching {}, listening on {url} (state in {})",
        root.display(),
        state_dir.dir.display()
    );
    api::serve::serve(listener, app, shutdown_signal()).await;
    tracing::info!("shutting down");
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
}
