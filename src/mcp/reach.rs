//! The daemon the MCP server talks to: found like the CLI finds it (`FILEWATCHD_URL` and
//! `FILEWATCHD_TOKEN`, `--state-dir`, else the workspace of the working directory) and
//! started like a hook starts it when none runs (`hook::autostart::answering`: the same
//! refusals for the home directory, `/`, `autostart = false`). Reached on the first tool call,
//! not at start-up, so the agent's MCP client never waits for an index; reached again after
//! the daemon stopped.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Options;
use super::shape::Failure;
use crate::client::{Client, NoDaemon};
use crate::hook::autostart;
use crate::lifecycle;

/// How long a tool call waits for a daemon it started (or found starting) to answer.
const START_WAIT: Duration = Duration::from_secs(20);

pub struct Daemon {
    options: Options,
    reached: Mutex<Option<Arc<Reached>>>,
}

/// A daemon that answered, and its state directory (unknown when the environment names it).
pub struct Reached {
    pub client: Client,
    pub state_dir: Option<PathBuf>,
}

impl Daemon {
    pub fn new(options: Options) -> Self {
        Self {
            options,
            reached: Mutex::new(None),
        }
    }

    /// Runs `ask` with the daemon's client on a blocking thread (the client is blocking).
    pub async fn ask<T, F>(self: &Arc<Self>, ask: F) -> Result<T, Failure>
    where
        T: Send + 'static,
        F: FnOnce(&Reached) -> Result<T, Failure> + Send + 'static,
    {
        let daemon = self.clone();
        tokio::task::spawn_blocking(move || {
            let reached = daemon.reach()?;
            let result = ask(&reached);
            if let Err(Failure::NoDaemon(_)) = &result {
                daemon.forget();
            }
            result
        })
        .await
        .map_err(|e| Failure::Internal(format!("a tool call failed: {e}")))?
    }

    fn reach(&self) -> Result<Arc<Reached>, Failure> {
        if let Some(reached) = self.reached.lock().ok().and_then(|r| r.clone()) {
            return Ok(reached);
        }
        let reached = Arc::new(self.connect()?);
        if let Ok(mut slot) = self.reached.lock() {
            *slot = Some(reached.clone());
        }
        Ok(reached)
    }

    fn forget(&self) {
        if let Ok(mut slot) = self.reached.lock() {
            *slot = None;
        }
    }

    fn connect(&self) -> Result<Reached, Failure> {
        let (root, state_dir) = (self.options.root.as_deref(), self.options.state_dir.as_deref());
        let no_daemon = |e: anyhow::Error| Failure::NoDaemon(format!("{e:#}"));
        if autostart::env_points_elsewhere() {
            let client = Client::discover(root, state_dir).map_err(no_daemon)?;
            return Ok(Reached {
                client,
                state_dir: None,
            });
        }
        let loc = lifecycle::locate(root, state_dir, None).map_err(no_daemon)?;
        let (client, state_dir) =
            autostart::answering(&loc, Instant::now() + START_WAIT).map_err(Failure::NoDaemon)?;
        Ok(Reached {
            client,
            state_dir: Some(state_dir),
        })
    }
}

impl Reached {
    /// A `GET`, the answer read as its `crate::wire` type.
    pub fn get_as<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, Failure> {
        self.client.get_as(path).map_err(Failure::from_client)
    }

    /// `post`, the answer read as its `crate::wire` type.
    pub fn post_as<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Result<T, Failure> {
        self.client.post_as(path, body).map_err(Failure::from_client)
    }
}

impl Failure {
    fn from_client(err: anyhow::Error) -> Self {
        if err.downcast_ref::<NoDaemon>().is_some() {
            return Self::NoDaemon(format!("{err:#}"));
        }
        // The answer's body was past the client's limit (`client::ANSWER_LIMIT`).
        if err.downcast_ref::<crate::client::TooLarge>().is_some() {
            return Self::TooLarge(format!(
                "the daemon's answer is too large for one tool answer ({err:#}): ask for less"
            ));
        }
        match err.downcast::<crate::client::ApiFailure>() {
            Ok(mut failure) => {
                // The API's messages name CLI commands where the agent has a tool for the same.
                failure.message = failure
                    .message
                    .replace("`filewatchd history PATH` lists", "the file_history tool lists");
                Self::Api(Box::new(failure))
            }
            Err(err) => Self::Internal(format!("{err:#}")),
        }
    }
}
