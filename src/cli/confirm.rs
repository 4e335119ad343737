//! Asking before doing what is hard to take back: on a terminal the user is asked; without
//! one the command refuses, unless `--yes` was given.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::bail;

use crate::lifecycle::guard;

/// Goes on when `yes`, or when the user answers `y` to `question` on a terminal; otherwise an
/// error: `refusal` without a terminal, "nothing done" when the answer is no.
pub fn confirm(question: &str, yes: bool, refusal: impl FnOnce() -> String) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        bail!(refusal());
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => bail!("nothing done"),
    }
}

/// Starting a daemon on `root`: asked first when it is `/`, the home directory or holds it.
pub fn risky_root(root: &Path, yes: bool) -> anyhow::Result<()> {
    let Some(risk) = guard::risk(root) else {
        return Ok(());
    };
    let root = root.display();
    let question = format!(
        "{root}: {risk}. Indexing it records every file beneath it (caches, downloads, every other project). Start filewatchd on it anyway?"
    );
    confirm(&question, yes, || {
        format!(
            "refusing to start filewatchd on {root}: {risk}, and indexing it is almost always a mistake. Start it for a project (`--root DIR`), or pass --yes to start it here anyway"
        )
    })
}
