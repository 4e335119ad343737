//! `completions` and `man`: the shell completion scripts and the man pages, generated at run
//! time from the clap definitions, so every command and flag there is in them too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use super::args::{Cli, CompletionsCmd, ManCmd};

const BIN: &str = "filewatchd";

pub fn completions(cmd: CompletionsCmd) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(cmd.shell, &mut Cli::command(), BIN, &mut script);
    std::io::stdout().write_all(&script)?;
    Ok(ExitCode::SUCCESS)
}

pub fn man(cmd: ManCmd) -> anyhow::Result<ExitCode> {
    let pages = man_pages()?;
    let Some(dir) = cmd.dir else {
        // The first page is the top command's.
        let (_, top) = pages.first().context("no man page was generated")?;
        std::io::stdout().write_all(top)?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, page) in &pages {
        write_page(&dir, name, page)?;
    }
    println!(
        "wrote {} into {}",
        super::style::count(pages.len() as u64, "man page", "man pages"),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// One page per command that `--help` shows, the top command's first: (file name, roff).
fn man_pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut top = Cli::command().disable_help_subcommand(true);
    // Building names each subcommand "filewatchd-log", "filewatchd-turn-start", ...: the
    // pages' titles and file names.
    top.build();
    let mut pages = Vec::new();
    let mut pending = vec![top];
    while let Some(cmd) = pending.pop() {
        pending.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let man = clap_mangen::Man::new(cmd);
        let mut page = Vec::new();
        man.render(&mut page).context("cannot render a man page")?;
        pages.push((man.get_filename(), page));
    }
    Ok(pages)
}

/// Writes the page under a temporary name and renames it: a reader never sees half a page.
fn write_page(dir: &Path, name: &str, page: &[u8]) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    let temp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&temp, page).with_context(|| format!("cannot write {}", temp.display()))?;
    std::fs::rename(&temp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
