//! `filewatchd hook ...`: run one agent hook event, or install / uninstall the hooks.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::args::{HookCmd, HookManage, InstallArgs, ServeArgs};
use crate::hook::install::{self, Report, Scope, Target};
use crate::hook::run;

pub fn hook(args: &ServeArgs, cmd: HookCmd) -> anyhow::Result<ExitCode> {
    match (cmd.manage, cmd.agent) {
        (Some(HookManage::Install(install)), _) => manage(args, install, true),
        (Some(HookManage::Uninstall(install)), _) => manage(args, install, false),
        (None, Some(agent)) => Ok(run::run(agent, &cmd.rest, args.state_dir.as_deref())),
        (None, None) => {
            anyhow::bail!(
                "name the agent: filewatchd hook <claude-code|gemini-cli|codex|opencode|pi>, or hook install <agent>"
            )
        }
    }
}

fn manage(args: &ServeArgs, cmd: InstallArgs, installing: bool) -> anyhow::Result<ExitCode> {
    let root = match &args.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set")?;
    let program = std::env::current_exe().context("cannot find the filewatchd binary")?;
    let target = Target {
        agent: cmd.agent,
        scope: if cmd.user { Scope::User } else { Scope::Project },
        root,
        home,
        program,
        notify: cmd.notify,
    };
    let report = if installing {
        install::install(&target, cmd.dry_run)?
    } else {
        install::uninstall(&target, cmd.dry_run)?
    };
    print_report(&report, installing, cmd.dry_run);
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &Report, installing: bool, dry_run: bool) {
    let path = report.path.display();
    if !report.changed() {
        println!(
            "{path}: {}",
            if installing {
                "already installed, nothing changed"
            } else {
                "nothing to remove"
            }
        );
        return;
    }
    let verb = match (installing, dry_run) {
        (true, true) => "would install into",
        (true, false) => "installed into",
        (false, true) => "would remove from",
        (false, false) => "removed from",
    };
    println!("{verb} {path}");
    if !report.note.is_empty() {
        println!("  {}", report.note);
    }
    if dry_run {
        let before = String::from_utf8_lossy(report.before.as_deref().unwrap_or_default()).into_owned();
        let after = String::from_utf8_lossy(report.after.as_deref().unwrap_or_default()).into_owned();
        let diff = similar::TextDiff::from_lines(&before, &after);
        let text = diff.unified_diff().header("before", "after").to_string();
        let color = std::io::stdout().is_terminal();
        for line in text.lines() {
            match (color, line.as_bytes().first()) {
                (true, Some(b'+')) => println!("\x1b[32m{line}\x1b[0m"),
                (true, Some(b'-')) => println!("\x1b[31m{line}\x1b[0m"),
                _ => println!("{line}"),
            }
        }
    }
}
