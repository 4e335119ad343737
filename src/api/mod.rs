//! The HTTP API (docs/api.md) on axum: routes and access checks. A handler parses the
//! request, asks history, sessions, restore or retention (queries on read-only SQLite
//! connections in blocking tasks) or sends a command to the capture worker, and renders what
//! it gets as the answer types of `wire` (built by `render`); errors carry an `ErrorCode`.

mod access;
mod blame;
mod calls;
mod content;
mod diff;
pub mod error;
mod handlers;
mod ignored;
pub mod offline;
mod pins;
mod purge;
mod render;
mod review;
mod rollback;
pub mod serve;
mod slots;
mod stop;
mod timeline;
mod ui;
mod versions;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post, put};
use rusqlite::Connection;

use crate::engine::WorkerHandle;
use crate::stats::Stats;
use crate::store::blobs::BlobDir;
use crate::store::db;
use error::ApiError;
pub use stop::StopRequest;

/// Request bodies larger than this are refused with 413.
pub const BODY_LIMIT: usize = 1024 * 1024;

pub struct AppState {
    pub root: PathBuf,
    pub state_dir: PathBuf,
    pub port: u16,
    pub token: String,
    pub db_path: PathBuf,
    pub blobs: BlobDir,
    pub worker: WorkerHandle,
    pub stats: Arc<Stats>,
    /// The review page's login codes and cookie sessions (in memory only).
    ui: ui::door::Door,
    /// `POST /v1/stop`'s word to the daemon's shutdown (`daemon`).
    pub stop: StopRequest,
    readers: Mutex<Vec<Connection>>,
    /// No daemon runs: the index is read as its daemon left it (`offline`).
    offline: bool,
}

impl AppState {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        root: PathBuf,
        state_dir: PathBuf,
        port: u16,
        token: String,
        db_path: PathBuf,
        blobs: BlobDir,
        worker: WorkerHandle,
        stats: Arc<Stats>,
    ) -> Self {
        Self {
            root,
            state_dir,
            port,
            token,
            db_path,
            blobs,
            worker,
            stats,
            ui: ui::door::Door::default(),
            stop: StopRequest::default(),
            readers: Mutex::new(Vec::new()),
            offline: false,
        }
    }

    /// The read side of a stopped daemon's API (`offline`): its index opened read-only, no
    /// worker behind it (anything sent to one is refused), no listener.
    pub fn offline(
        root: PathBuf,
        state_dir: PathBuf,
        db_path: PathBuf,
        blobs: BlobDir,
        stats: Arc<Stats>,
    ) -> Self {
        let mut state = Self::new(
            root,
            state_dir,
            0,
            String::new(),
            db_path,
            blobs,
            WorkerHandle::detached(),
            stats,
        );
        state.offline = true;
        state
    }

    /// Runs a query on a pooled read-only connection, off the async executor.
    pub async fn read<T, F>(self: &Arc<Self>, query: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &AppState) -> Result<T, ApiError> + Send + 'static,
    {
        let state = self.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = state.readers.lock().ok().and_then(|mut pool| pool.pop());
            let conn = match pooled {
                Some(conn) => conn,
                None if state.offline => db::open_offline(&state.db_path).map_err(ApiError::internal)?,
                None => db::open_reader(&state.db_path).map_err(ApiError::internal)?,
            };
            let result = in_one_snapshot(&conn, |conn| query(conn, &state));
            if let Ok(mut pool) = state.readers.lock() {
                pool.push(conn);
            }
            result
        })
        .await
        .map_err(ApiError::internal)?
    }
}

/// Runs an answer's queries in one read transaction: they all see the same state of the
/// index, and SQLite takes its locks once instead of once per statement (a turn of 30,000
/// changes asks one question per path).
fn in_one_snapshot<T>(
    conn: &Connection,
    query: impl FnOnce(&Connection) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let snapshot = conn.unchecked_transaction().map_err(ApiError::internal)?;
    let result = query(&snapshot);
    // Nothing was written: ending the transaction either way only releases the snapshot.
    drop(snapshot);
    result
}

pub fn router(state: Arc<AppState>) -> Router {
    router_within(state.clone()).layer(axum::middleware::from_fn_with_state(state, access::check_access))
}

/// Every route, without the access checks: what a request reaches once it is let in (and
/// what `offline` calls in this process, where nobody else can).
fn router_within(state: Arc<AppState>) -> Router {
    let v1 = Router::new()
        .route("/status", get(handlers::status))
        .route("/sessions", get(handlers::list_sessions))
        .route(
            "/sessions/{session}/turns",
            post(handlers::start_turn).get(handlers::list_turns),
        )
        .route("/sessions/{session}/turns/{turn}", get(handlers::get_turn))
        .route("/sessions/{session}/turns/{turn}/end", post(handlers::end_turn))
        .route("/sessions/{session}/turns/{turn}/revert", post(rollback::revert))
        .route("/sessions/{session}/turns/{turn}/review", put(review::review))
        .route("/sessions/{session}/tool-calls", post(calls::tool_call))
        .route("/sessions/{session}/fork", post(handlers::fork))
        .route("/sessions/{session}/rollback", post(rollback::rollback))
        .route("/sessions/{session}/undo", post(rollback::undo))
        .route("/sessions/{session}/redo", post(rollback::redo))
        .route("/rollback", post(rollback::rollback_in_time))
        .route("/redo", post(rollback::redo_in_time))
        .route("/pins", get(pins::list).post(pins::create))
        .route("/pins/{name}", delete(pins::remove))
        .route("/gc", post(handlers::gc))
        .route("/verify", post(handlers::verify))
        .route("/stop", post(stop::stop))
        .route("/purge", post(purge::purge))
        .route("/history", get(handlers::history))
        .route("/blame", get(blame::blame))
        .route("/timeline", get(timeline::timeline))
        .route("/content", get(content::content))
        .route("/diff", get(diff::diff))
        .route("/ui/login", post(ui::login_code));
    Router::new()
        .nest("/v1", v1)
        .route("/ui/login", get(ui::login))
        .route("/ui/", get(ui::index))
        .route("/ui/app.js", get(ui::app_js))
        .route("/ui/words.js", get(ui::words_js))
        .route("/ui/diff.js", get(ui::diff_js))
        .route("/ui/view.js", get(ui::view_js))
        .route("/ui/app.css", get(ui::app_css))
        .route("/ui/icon.svg", get(ui::icon))
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}
