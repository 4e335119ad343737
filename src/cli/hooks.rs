//! `filewatchd hook ...`: run one agent hook event, or install / uninstall the hooks.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use super::args::{HookCmd, HookManage, InstallArgs};
use super::flags::ServeArgs;
use crate::hook::install::{self, AgentDirs, Backups, Invocation, Report, Scope, Target};
use crate::hook::{Agent, run};
use crate::state;

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
    let target = Target {
        agent: cmd.agent,
        scope: if cmd.user { Scope::User } else { Scope::Project },
        backups: backups(args, &root)?,
        root,
        dirs: AgentDirs::from_env()?,
        program: std::env::current_exe().context("cannot find the filewatchd binary")?,
        notify: cmd.notify,
    };
    if cmd.mcp {
        return manage_mcp(&target, installing, cmd.dry_run);
    }
    let reports = if installing {
        install::install(&target, cmd.dry_run)?
    } else {
        install::uninstall(&target, cmd.dry_run)?
    };
    for (i, report) in reports.iter().enumerate() {
        // After the target's own file, install lists the older files it moved hooks out of.
        print_report(report, installing && i == 0, cmd.dry_run, "hooks");
    }
    if installing {
        print_invocation(&target);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--mcp`: the MCP server's entry in each file the agent reads it from.
fn manage_mcp(target: &Target, installing: bool, dry_run: bool) -> anyhow::Result<ExitCode> {
    let reports = if installing {
        install::mcp::install(target, dry_run)?
    } else {
        install::mcp::uninstall(target, dry_run)?
    };
    for report in &reports {
        print_report(report, installing, dry_run, "MCP server");
    }
    if installing {
        for note in install::mcp::notes(target.agent) {
            println!("  {note}");
        }
        if target.scope == Scope::Project {
            print_path_check(target, "the agent cannot start the MCP server");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `hook-backups/` in the workspace's state directory and in the state home.
fn backups(args: &ServeArgs, root: &Path) -> anyhow::Result<Backups> {
    let home = state::state_home()?;
    let project = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => {
            let canonical = root
                .canonicalize()
                .with_context(|| format!("cannot resolve {}", root.display()))?;
            state::project_dir(&home, &canonical)
        }
    };
    Ok(Backups {
        project: project.join("hook-backups"),
        user: home.join("hook-backups"),
    })
}

fn print_report(report: &Report, installing: bool, dry_run: bool, what: &str) {
    let path = report.path.display();
    if !report.changed() {
        if !report.notes.is_empty() {
            println!("{path}: nothing changed: {}", report.notes.join("; "));
            return;
        }
        match (installing, report.before.is_some()) {
            (true, _) => println!("{path}: already installed, nothing changed"),
            (false, true) => {
                println!("{path}: no filewatchd {what} in it, nothing to remove (the file is unchanged)")
            }
            (false, false) => println!("{path}: not installed, nothing to remove"),
        }
        return;
    }
    let verb = match (installing, dry_run) {
        (true, true) => "would install into",
        (true, false) => "installed into",
        (false, true) => "would remove from",
        (false, false) => "removed from",
    };
    println!("{verb} {path}");
    for note in &report.notes {
        println!("  {note}");
    }
    if dry_run {
        print_diff(report);
    }
}

fn print_diff(report: &Report) {
    let before = String::from_utf8_lossy(report.before.as_deref().unwrap_or_default()).into_owned();
    let after = String::from_utf8_lossy(report.after.as_deref().unwrap_or_default()).into_owned();
    let diff = similar::TextDiff::from_lines(&before, &after);
    let text = diff.unified_diff().header("before", "after").to_string();
    print!("{}", super::print::diff_lines(&text));
}

/// Which binary the hooks run, and why: a file a team commits names `filewatchd` on `PATH`.
fn print_invocation(target: &Target) {
    if target.agent == Agent::ClaudeCode && target.scope == Scope::Project {
        println!(
            "  .claude/settings.local.json is Claude Code's settings for this machine only: do not commit it (add it to .gitignore if git does not ignore it yet)"
        );
    }
    let Invocation::Portable = target.invocation() else {
        println!("  the hooks run {}", target.program.display());
        return;
    };
    println!(
        "  this file may be committed: the hooks run `filewatchd` from PATH, on any machine that has it"
    );
    print_path_check(target, "the hooks will not run");
}

/// Warns when the `filewatchd` a project file names is not on `PATH` (what then fails is
/// `fails`), notes when it is another binary than this one.
fn print_path_check(target: &Target, fails: &str) {
    let here = target.program.canonicalize().ok();
    match install::on_path() {
        None => println!(
            "  warning: no `filewatchd` on PATH: put {} on PATH, or {fails} (`--user` names this binary by its full path instead)",
            target.program.display()
        ),
        Some(found) if found.canonicalize().ok() != here => println!(
            "  note: `filewatchd` on PATH is {}, not this binary ({})",
            found.display(),
            target.program.display()
        ),
        Some(_) => {}
    }
}
