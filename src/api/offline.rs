//! The API's read side without its daemon: the very handlers of `router`, run in this process
//! on a read-only open of a stopped daemon's index (`db::open_offline`: nothing is written or
//! created in its state directory), so `log`, `show`, `history`, `blame` and `sessions` print what they
//! print while it runs. Nothing can change that index meanwhile, so no barrier is passed;
//! what would record or write is refused by the client before it gets here.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::body::Body;
use hyper::service::Service as _;
use hyper_util::service::TowerToHyperService;

use super::{AppState, router_within};
use crate::state;
use crate::stats::Stats;
use crate::store::blobs::BlobDir;

/// The most of an answer read (file contents included): as much as the HTTP client takes.
const ANSWER_LIMIT: usize = 1 << 40;

/// A stopped daemon's API, answered in this process.
pub struct Offline {
    runtime: tokio::runtime::Runtime,
    router: Router,
}

impl Offline {
    /// The API of the workspace `root` as its index in `state_dir` holds it.
    pub fn open(root: PathBuf, state_dir: PathBuf) -> anyhow::Result<Self> {
        let db_path = state_dir.join("index.sqlite");
        // Nothing another user can write is believed.
        for path in [&state_dir, &db_path] {
            let meta =
                std::fs::symlink_metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
            state::check_owner(path, crate::platform::ext::owner_of(&meta))?;
        }
        anyhow::ensure!(db_path.is_file(), "{} is not a file", db_path.display());
        // An index this build cannot read (another release's schema) is said once, here.
        crate::store::db::open_offline(&db_path)?;
        let blobs = BlobDir::at(state_dir.join("blobs"));
        let state = AppState::offline(root, state_dir, db_path, blobs, Arc::new(Stats::default()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the runtime that reads the index")?;
        Ok(Self {
            runtime,
            router: router_within(Arc::new(state)),
        })
    }

    /// `GET path`: the status and body the daemon's API would answer.
    pub fn get(&self, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
        let request = axum::http::Request::get(path)
            .body(Body::empty())
            .with_context(|| format!("{path:?} is not a request"))?;
        let service = TowerToHyperService::new(self.router.clone());
        self.runtime.block_on(async move {
            let response = match service.call(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let status = response.status().as_u16();
            let body = axum::body::to_bytes(response.into_body(), ANSWER_LIMIT)
                .await
                .context("cannot read an answer of the index")?;
            Ok((status, body.to_vec()))
        })
    }
}
