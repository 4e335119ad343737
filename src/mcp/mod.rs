//! `filewatchd mcp`: a Model Context Protocol server on stdio (the official Rust SDK, `rmcp`)
//! that gives the agent running it a read-mostly window on the record of its workspace: what
//! its turns changed (its shell's side effects included), the history and blame of a path,
//! diffs against a boundary, and the plan of an undo or rollback. It is a client of the
//! daemon's HTTP API like the CLI (`client`); it never opens the store.
//!
//! - `reach`: the daemon of the workspace, found like the CLI finds it and started like a
//!   hook starts it (`hook::autostart`), on the first tool call.
//! - `session`: which session "this session" is (an argument, what the agent says, the
//!   hooks' record of the agent process, the only candidate), never a silent guess.
//! - `tools`: the read tools; `rollback`: the previews, and `undo`, `rollback` and
//!   `restore_file`, listed only with `[mcp] allow_rollback = true`; `since`: `diff_since`.
//! - `shape`: answers sized for a context window (counts first, capped lists that say how
//!   to get the rest, diffs cut per file and in total).

mod args;
mod changes;
mod reach;
mod rollback;
mod session;
mod shape;
mod since;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt as _;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::ServerInitializeError;
use rmcp::{ServerHandler, tool_handler};

use crate::config::Config;
use crate::lifecycle;

/// Where the server looks for its workspace: `--root` and `--state-dir`, else its working
/// directory (the agent starts it in the project).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub root: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
}

/// The MCP server: its tools, and the daemon it reaches.
#[derive(Clone)]
pub struct Server {
    daemon: Arc<reach::Daemon>,
    allow_rollback: bool,
    tool_router: ToolRouter<Self>,
}

impl Server {
    pub fn new(options: Options) -> Self {
        let allow_rollback = allows_rollback(&options);
        let mut tool_router = Self::read_tools() + Self::since_tools() + Self::preview_tools();
        if allow_rollback {
            tool_router += Self::write_tools();
        }
        Self {
            daemon: Arc::new(reach::Daemon::new(options)),
            allow_rollback,
            tool_router,
        }
    }
}

/// `[mcp] allow_rollback = true` in the workspace's `.filewatchd.toml`, read once at start (a
/// config that cannot be read allows nothing: the server says why on stderr).
fn allows_rollback(options: &Options) -> bool {
    let loc = match lifecycle::locate(options.root.as_deref(), options.state_dir.as_deref(), None) {
        Ok(loc) => loc,
        Err(err) => {
            eprintln!("filewatchd mcp: {}", crate::escape::text(&format!("{err:#}")));
            return false;
        }
    };
    Config::load(&loc.root, None).map_or_else(
        |err| {
            let err = format!("{err:#}");
            let err = crate::escape::text(&err);
            eprintln!("filewatchd mcp: {err}; the rollback tools stay off");
            false
        },
        |config| config.mcp_allow_rollback,
    )
}

const INSTRUCTIONS: &str = "filewatchd records every change to this workspace, whoever makes it (your edits, your shell commands' side effects, the user), by turn. Call turn_changes to see what your current turn changed so far, turns for this session's turns, file_history/blame/diff_since for one file or the workspace, preview_undo/preview_rollback before proposing to take changes back.";

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::default();
        info.name = "filewatchd".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(INSTRUCTIONS)
    }
}

/// Runs the server on stdin and stdout until the client closes them. Diagnostics go to
/// stderr (stdout is the protocol's).
pub fn run(options: Options) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(async {
        let service = match Server::new(options).serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            // The client went away before it said anything: nothing to serve.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(ExitCode::SUCCESS),
            Err(err) => return Err(err).context("the MCP client did not initialize"),
        };
        service.waiting().await.context("the MCP session failed")?;
        Ok(ExitCode::SUCCESS)
    })
}
