//! The history of a workspace whose daemon is not running: `log`, `show`, `history`,
//! `blame` and `sessions` read its index in this process (`api::offline`) and print what they print while it
//! runs, after one line on stderr saying so.

use crate::api::offline::Offline;
use crate::client::{Client, Local};
use crate::hook::autostart;
use crate::lifecycle::{self, Running};

use super::escape;
use super::flags::ServeArgs;

/// The daemon of the workspace when one runs (or the environment names one); else its index
/// as its daemon left it, when there is one.
pub fn client_for_reading(args: &ServeArgs) -> anyhow::Result<Client> {
    let (root, state_dir) = (args.root.as_deref(), args.state_dir.as_deref());
    if autostart::env_points_elsewhere() {
        return Client::discover(root, state_dir);
    }
    let Ok(loc) = lifecycle::locate(root, state_dir, None) else {
        return Client::discover(root, state_dir);
    };
    let stopped = matches!(lifecycle::probe_quietly(&loc), Running::Stopped);
    if !stopped || !loc.state_dir.join("index.sqlite").is_file() {
        return Client::discover(root, state_dir);
    }
    let offline = Offline::open(loc.root.clone(), loc.state_dir.clone())?;
    eprintln!(
        "filewatchd: no daemon is running for {}: this is its record as of its stop (`filewatchd start` records again)",
        escape::text(&loc.root.to_string_lossy())
    );
    Ok(Client::local(Box::new(Index(offline))))
}

/// The stopped daemon's index as the client's transport.
struct Index(Offline);

impl Local for Index {
    fn get(&self, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
        self.0.get(path)
    }
}
