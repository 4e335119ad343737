//! `filewatchd doctor`: checks of everything filewatchd needs around it, each with a one-line
//! verdict (ok, warning, problem) and the command that fixes it. It needs no daemon: finding
//! none is one of its verdicts. Exit 0 when nothing is a problem (warnings allowed), 1 when
//! something is.
//!
//! - `state`: the daemon of this workspace, the state directory's permissions, the store's
//!   integrity (`quick_check` on a read-only connection), free disk space.
//! - `inotify`: the kernel's inotify limits against the tree's directory count.
//! - `hooks`: each agent's installed hooks run an existing filewatchd of this version (and
//!   Codex has recorded its trust in them).

mod hooks;
#[cfg(target_os = "linux")]
mod inotify;
mod state;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::wire::status::Status;
use serde::Serialize;

use super::escape;
use super::flags::ServeArgs;
use super::style::{Paint, counted, paint};

#[derive(Debug, clap::Args)]
pub struct DoctorCmd {
    /// Print every check with its verdict and fix as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Warning,
    Problem,
}

/// One check: its name, verdict, what it found, and the command that fixes it.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub check: String,
    pub verdict: Verdict,
    pub message: String,
    pub fix: Option<String>,
}

impl Check {
    fn new(check: impl Into<String>, verdict: Verdict, message: impl Into<String>) -> Self {
        Self {
            check: check.into(),
            verdict,
            message: message.into(),
            fix: None,
        }
    }

    pub fn ok(check: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(check, Verdict::Ok, message)
    }

    pub fn warning(check: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(check, Verdict::Warning, message)
    }

    pub fn problem(check: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(check, Verdict::Problem, message)
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// What the checks know of the workspace: its root, its state directory, and the daemon's
/// status when one answers.
pub struct Context {
    pub root: PathBuf,
    pub state_dir: PathBuf,
    pub status: Option<Status>,
}

#[derive(Serialize)]
struct Report {
    healthy: bool,
    problems: usize,
    warnings: usize,
    checks: Vec<Check>,
}

pub fn doctor(args: &ServeArgs, cmd: DoctorCmd) -> anyhow::Result<ExitCode> {
    let (daemon, ctx) = state::daemon(args);
    let mut checks = daemon;
    checks.push(state::state_dir(&ctx));
    checks.push(state::store(&ctx));
    checks.push(state::disk(&ctx));
    checks.push(platform());
    // The inotify limits are the Linux watcher's; FSEvents (macOS) has none to check.
    #[cfg(target_os = "linux")]
    checks.extend(inotify::checks(&ctx));
    checks.extend(hooks::checks(&ctx));
    checks.extend(owners(&ctx));
    let count = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count();
    let report = Report {
        healthy: count(Verdict::Problem) == 0,
        problems: count(Verdict::Problem),
        warnings: count(Verdict::Warning),
        checks,
    };
    if cmd.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print(&report);
    }
    Ok(if report.healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Which platform layer this build has, and what it leaves out (docs/platforms.md).
fn platform() -> Check {
    Check::ok("platform", crate::platform::SUMMARY)
}

/// Whose a write is: by process (fanotify) where the daemon has `CAP_SYS_ADMIN`, else by
/// the agents' tool-call windows alone (docs/tracking.md).
fn owners(ctx: &Context) -> Option<Check> {
    let ownership = &ctx.status.as_ref()?.ownership;
    let check = match &ownership.why_not_process {
        None => Check::ok("owners", "by process (fanotify names each writer) and the agents' tool-call windows"),
        // Where the platform has no fanotify, no capability would help: no fix to offer.
        Some(why) if !crate::platform::FANOTIFY => {
            Check::ok("owners", format!("by the agents' tool-call windows ({why})"))
        }
        Some(why) => Check::ok("owners", format!("by the agents' tool-call windows ({why})")).fix(
            "to tell apart writes made inside two agents' tool calls at the same moment, give the daemon CAP_SYS_ADMIN (docs/tracking.md, \"By process\")",
        ),
    };
    Some(check)
}

fn print(report: &Report) {
    for check in &report.checks {
        let (word, colour) = match check.verdict {
            Verdict::Ok => ("ok", Paint::Added),
            Verdict::Warning => ("warning", Paint::Warning),
            Verdict::Problem => ("problem", Paint::Deleted),
        };
        println!(
            "{} {}: {}",
            paint(&format!("{word:<8}"), colour),
            check.check,
            escape::text(&check.message)
        );
        if let Some(fix) = &check.fix {
            println!("         {} {}", paint("fix:", Paint::Bold), escape::text(fix));
        }
    }
    let (problems, warnings) = (report.problems as u64, report.warnings as u64);
    match (problems, warnings) {
        (0, 0) => println!("healthy: {} passed", counted(report.checks.len() as u64, "check")),
        (0, _) => println!("healthy, with {}", counted(warnings, "warning")),
        _ => println!(
            "{} and {}: see the fixes above",
            counted(problems, "problem"),
            counted(warnings, "warning")
        ),
    }
}
