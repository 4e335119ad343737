//! `filewatchd purge PATH`: a path's contents deleted from the store (docs/security.md,
//! "Secrets in the store"), asked first: no version of it can be restored after.

use clap::Args;

use super::flags::{JsonFlag, ServeArgs};
use super::{confirm, escape, print, style};
use crate::client::Client;
use crate::wire::request;
use crate::wire::upkeep::Purged;

#[derive(Debug, Args)]
pub struct PurgeCmd {
    /// A path relative to the workspace root (or to the current directory inside it); a
    /// directory purges everything recorded beneath it.
    pub path: String,
    /// Purge without asking.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub json: JsonFlag,
}

pub fn purge(client: &Client, args: &ServeArgs, cmd: PurgeCmd) -> anyhow::Result<()> {
    let path = super::workspace_relative(client, args, &cmd.path)?;
    let question = format!(
        "Delete every recorded content of {} from the store? Its history stays, but none of its versions can be restored again.",
        escape::quoted(&path)
    );
    confirm::confirm(&question, cmd.yes, || {
        format!(
            "purging {} cannot be taken back: add --yes to do it",
            escape::quoted(&path)
        )
    })?;
    let answer: Purged = client.post_as("/v1/purge", &request::Purge { path })?;
    print::answer(&answer, cmd.json.json, |a| {
        println!(
            "purged {}: {} of {} removed ({})",
            escape::quoted(&a.path),
            style::counted(a.blobs_removed.max(0) as u64, "content"),
            style::counted(a.versions.max(0) as u64, "version"),
            style::size(a.bytes_freed.max(0) as u64)
        );
        if a.shared > 0 {
            println!(
                "kept {}: another path's versions hold the same bytes",
                style::counted(a.shared as u64, "content")
            );
        }
    })
}
