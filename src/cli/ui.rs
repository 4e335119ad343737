//! `filewatchd ui`: a one-time login link to the review page, opened in the browser with
//! `xdg-open` (or `open`) when there is one. The link's code never goes on a command line or
//! into an environment, which every local user can read (`/proc/PID/cmdline`) for as long as
//! the opener runs: it goes into a page only this user can read (0600, in the private
//! directory `instance::dir`) that sends the browser on to the link, and the opener is given
//! that page's path.

use crate::platform::ext::OpenExt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, SystemTime};

use clap::Args;
use serde_json::json;

use super::Client;
use super::style::{Paint, paint};
use crate::instance::dir;
use crate::wire::session::LoginCode;

/// How long a login page is kept: its code works for 60 s, once.
const PAGE_LIFE: Duration = Duration::from_secs(300);

#[derive(Debug, Args)]
pub struct UiCmd {
    /// Print the login link (one line, nothing else) instead of opening a browser.
    #[arg(long)]
    pub print_url: bool,
}

pub fn ui(client: &Client, cmd: UiCmd) -> anyhow::Result<ExitCode> {
    let answer: LoginCode = client.post_as("/v1/ui/login", &json!({}))?;
    let url = loopback_link(&answer.url)?;
    if cmd.print_url {
        println!("{url}");
        return Ok(ExitCode::SUCCESS);
    }
    let page = match login_page(url) {
        Ok(page) => page,
        Err(why) => {
            println!("Not opening a browser ({why}). Open this link in yours; it works once, within 60 s:");
            println!("  {}", paint(url, Paint::Bold));
            return Ok(ExitCode::SUCCESS);
        }
    };
    let shown = format!("file://{}", page.display());
    match open_in_browser(&page) {
        Some(opener) => println!(
            "Asked {opener} to open the review page through a page only you can read; it works once, within 60 s:"
        ),
        None => println!("Open this page in your browser; it works once, within 60 s:"),
    }
    println!("  {}", paint(&shown, Paint::Bold));
    Ok(ExitCode::SUCCESS)
}

/// The daemon's login link, once it is what a daemon answers: `http://` to a loopback
/// address, in printable ASCII. Anything else is neither printed nor followed.
fn loopback_link(url: &str) -> anyhow::Result<&str> {
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next());
    let loopback = authority
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .is_some_and(|a| a.ip().is_loopback());
    let printable = url.bytes().all(|b| b.is_ascii_graphic());
    if loopback && printable {
        return Ok(url);
    }
    anyhow::bail!(
        "the daemon answered a login link that is not an http link to this machine ({}): not opened",
        crate::escape::quoted(url)
    )
}

/// Writes the page that sends the browser on to `url` (0600, in `ui/` of the private
/// directory, under a name of its own), and removes the pages earlier runs left.
fn login_page(url: &str) -> Result<PathBuf, String> {
    let dir = dir::private_subdir("ui")?;
    remove_old_pages(&dir);
    let name = format!("login-{}-{}.html", std::process::id(), crate::model::now_ms());
    let path = dir.join(name);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .permission_bits(0o600)
            .no_follow()
            .open(&path)?;
        file.write_all(page_html(url).as_bytes())
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// A page that goes on to `url` at once (a meta refresh: no script), with a link besides.
fn page_html(url: &str) -> String {
    let url = escape_html(url);
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<meta http-equiv=\"refresh\" content=\"0; url={url}\">\n<title>filewatchd</title></head>\n<body><p><a href=\"{url}\">Open the filewatchd review page</a></p></body></html>\n"
    )
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Login pages older than `PAGE_LIFE`: their codes are spent or expired.
fn remove_old_pages(dir: &Path) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in listing.flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok());
        let old = age.is_some_and(|age| age > PAGE_LIFE);
        if old && entry.file_name().to_string_lossy().starts_with("login-") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Starts the desktop's opener on `page`; its name, if one was there and started.
fn open_in_browser(page: &Path) -> Option<&'static str> {
    ["xdg-open", "open"].into_iter().find(|opener| {
        Command::new(opener)
            .arg(page)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_http_link_is_printed_or_followed() {
        assert!(loopback_link("http://127.0.0.1:4100/ui/login?code=ab").is_ok());
        assert!(loopback_link("http://[::1]:4100/ui/login?code=ab").is_ok());
        for bad in [
            "https://evil.example/ui",
            "http://10.0.0.1:80/ui",
            "http://127.0.0.1:1/\u{1b}]0;title\u{7}",
            "http://127.0.0.1:1/a b",
            "javascript:alert(1)",
        ] {
            assert!(loopback_link(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_page_goes_on_to_the_link_and_escapes_it() {
        let page = page_html("http://127.0.0.1:1/ui/login?code=ab&x=\"<");
        assert!(page.contains("content=\"0; url=http://127.0.0.1:1/ui/login?code=ab&amp;x=&quot;&lt;\""));
        assert!(!page.contains("<script"));
    }
}
