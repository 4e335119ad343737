//! The doctor's check of each agent's installed hooks: every filewatchd they run exists, is
//! executable and is this version; Codex's hooks are trusted where Codex needs that.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::ValueEnum;

use super::{Check, Context};
use crate::hook::Agent;
use crate::hook::install::{self, AgentDirs, Backups, Invocation, Scope, Target};

/// How long `PROGRAM --version` may take.
const VERSION_WITHIN: Duration = Duration::from_secs(5);

pub fn checks(ctx: &Context) -> Vec<Check> {
    let dirs = match AgentDirs::from_env() {
        Ok(dirs) => dirs,
        Err(err) => {
            return vec![Check::warning(
                "hooks",
                format!("cannot find your agents' settings: {err:#}"),
            )];
        }
    };
    let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("filewatchd"));
    let mut checks = Vec::new();
    for target in targets(ctx, &dirs, &program) {
        checks.extend(check_target(&target));
    }
    if checks.is_empty() {
        checks.push(Check::ok(
            "hooks",
            "no agent hooks installed, here or in your home (turns come from `filewatchd exec`, `turn start|end` or the API)",
        ));
    }
    checks
}

/// Every file install can write: each agent in the workspace and in the home, and Codex's
/// `notify`.
fn targets(ctx: &Context, dirs: &AgentDirs, program: &Path) -> Vec<Target> {
    let target = |agent, scope, notify| Target {
        agent,
        scope,
        root: ctx.root.clone(),
        dirs: dirs.clone(),
        program: program.to_path_buf(),
        notify,
        backups: Backups {
            project: PathBuf::new(),
            user: PathBuf::new(),
        },
    };
    let mut all = Vec::new();
    for &agent in Agent::value_variants() {
        all.push(target(agent, Scope::Project, false));
        all.push(target(agent, Scope::User, false));
    }
    all.push(target(Agent::Codex, Scope::User, true));
    all
}

/// `hooks.<agent>.<project|user|notify>`.
fn name(target: &Target) -> String {
    let scope = match (target.notify, target.scope) {
        (true, _) => "notify",
        (_, Scope::Project) => "project",
        (_, Scope::User) => "user",
    };
    format!("hooks.{}.{scope}", target.agent.name())
}

/// The install command that points the target's hooks at this binary.
fn reinstall(target: &Target) -> String {
    let mut command = format!("filewatchd hook install {}", target.agent.name());
    if target.notify {
        command.push_str(" --notify");
    } else if target.scope == Scope::User {
        command.push_str(" --user");
    }
    command
}

fn check_target(target: &Target) -> Vec<Check> {
    let file = target.path();
    let runs = match install::installed(target) {
        Ok(Some(runs)) => runs,
        Ok(None) => return Vec::new(),
        Err(err) => {
            return vec![Check::warning(name(target), format!("{err:#}")).fix(reinstall(target))];
        }
    };
    let mut checks: Vec<Check> = runs.iter().map(|runs| check_runs(target, &file, runs)).collect();
    checks.extend(check_events(target, &file));
    if target.agent == Agent::Codex && !target.notify {
        checks.extend(codex_trust(target, &file));
    }
    checks
}

/// Hooks an earlier release installed lack the tool-call events: the agent's writes then
/// count by the turn-wide rule (docs/tracking.md, "Whose a write is").
fn check_events(target: &Target, file: &Path) -> Option<Check> {
    let missing = install::missing_events(target).ok()?;
    if missing.is_empty() {
        return None;
    }
    let message = format!(
        "{} lacks filewatchd's {} hooks: its tool calls are not reported, so a person's edit made during its turns counts as the agent's",
        file.display(),
        missing.join(", ")
    );
    Some(
        Check::warning(format!("{}.events", name(target)), message).fix(format!(
            "{}, then restart the agent's running sessions",
            reinstall(target)
        )),
    )
}

fn check_runs(target: &Target, file: &Path, runs: &Invocation) -> Check {
    let check = name(target);
    let (program, shown) = match runs {
        Invocation::Absolute(program) => (Some(program.clone()), program.display().to_string()),
        Invocation::Portable => (install::on_path(), "`filewatchd` from PATH".to_string()),
    };
    let Some(program) = program else {
        return Check::problem(
            check,
            format!("{} runs {shown}, and PATH has none", file.display()),
        )
        .fix("put filewatchd on PATH (cargo install --locked --path . puts it in ~/.cargo/bin)");
    };
    if !program.is_file() {
        return Check::problem(
            check,
            format!("{} runs {shown}, which does not exist", file.display()),
        )
        .fix(reinstall(target));
    }
    check_version(target, file, runs, &program)
}

/// The program exists: it must be this version of filewatchd.
fn check_version(target: &Target, file: &Path, runs: &Invocation, program: &Path) -> Check {
    let ours = env!("CARGO_PKG_VERSION");
    let check = name(target);
    match version_of(program) {
        Ok(version) if version == ours => Check::ok(
            check,
            format!(
                "{} runs {} (filewatchd {version})",
                file.display(),
                program.display()
            ),
        ),
        Ok(version) => Check::warning(
            check,
            format!(
                "{} runs {} (filewatchd {version}), not this filewatchd {ours}",
                file.display(),
                program.display()
            ),
        )
        .fix(match runs {
            Invocation::Absolute(_) => reinstall(target),
            Invocation::Portable => {
                format!("put this filewatchd ({}) first on PATH", target.program.display())
            }
        }),
        Err(why) => Check::problem(
            check,
            format!("{} runs {}, which {why}", file.display(), program.display()),
        )
        .fix(reinstall(target)),
    }
}

/// The version `PROGRAM --version` prints, or why it is no filewatchd that runs.
fn version_of(program: &Path) -> Result<String, String> {
    let here = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    if here.is_some() && program.canonicalize().ok() == here {
        return Ok(env!("CARGO_PKG_VERSION").to_string());
    }
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot be run ({e})"))?;
    let until = Instant::now() + VERSION_WITHIN;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return Err("did not answer --version".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.trim().strip_prefix("filewatchd ") {
        Some(version) if out.status.success() => Ok(version.to_string()),
        _ => Err("is not filewatchd (its --version says otherwise)".into()),
    }
}

/// Codex runs a hook only once its trust is recorded, and a project's `.codex/` only in a
/// trusted project.
fn codex_trust(target: &Target, file: &Path) -> Vec<Check> {
    let check = format!("{}.trust", name(target));
    let trust = match install::codex_trust(target, file) {
        Ok(trust) => trust,
        Err(err) => return vec![Check::warning(check, format!("{err:#}"))],
    };
    let mut checks = Vec::new();
    if trust.project_trusted == Some(false) {
        checks.push(
            Check::warning(
                format!("{check}.project"),
                format!(
                    "{} has no trust_level = \"trusted\" for {}: Codex loads the project's .codex/ only in a trusted project",
                    trust.config.display(),
                    target.root.display()
                ),
            )
            .fix("open the project in the Codex TUI and trust it when it asks"),
        );
    }
    checks.push(if trust.hooks_trusted { Check::ok(
        check,
        format!(
            "{} records trust in {} (Codex asks again whenever a hook changes)",
            trust.config.display(),
            file.display()
        ),
    ) } else { Check::warning(
        check,
        format!(
            "{} records no trust in {}: the Codex TUI asks first, and `codex exec` skips untrusted hooks silently",
            trust.config.display(),
            file.display()
        ),
    )
    .fix("trust them once in the Codex TUI (/hooks), or run `codex exec --dangerously-bypass-hook-trust`") });
    checks
}
