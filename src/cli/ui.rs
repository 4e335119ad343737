//! `filewatchd ui`: a one-time login link to the review page in the browser, opened with
//! `xdg-open` (or `open`) when there is one; printed either way.

use std::process::{Command, ExitCode, Stdio};

use anyhow::Context;
use clap::Args;
use serde_json::json;

use super::Client;
use super::style::{Paint, paint};

#[derive(Debug, Args)]
pub struct UiCmd {
    /// Print the login link (one line, nothing else) instead of opening a browser.
    #[arg(long)]
    pub print_url: bool,
}

pub fn ui(client: &Client, cmd: UiCmd) -> anyhow::Result<ExitCode> {
    let answer = client.post("/v1/ui/login", &json!({}))?;
    let url = answer["url"]
        .as_str()
        .context("the daemon sent no login link; is it older than this filewatchd?")?;
    if cmd.print_url {
        println!("{url}");
        return Ok(ExitCode::SUCCESS);
    }
    match open_in_browser(url) {
        Some(opener) => println!("Asked {opener} to open the review page; the link works once, within 60 s:"),
        None => println!("Open this link in your browser; it works once, within 60 s:"),
    }
    println!("  {}", paint(url, Paint::Bold));
    Ok(ExitCode::SUCCESS)
}

/// Starts the desktop's opener on `url`; its name, if one was there and started.
fn open_in_browser(url: &str) -> Option<&'static str> {
    ["xdg-open", "open"].into_iter().find(|opener| {
        Command::new(opener)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .is_ok()
    })
}
