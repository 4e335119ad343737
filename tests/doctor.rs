//! `filewatchd doctor`: every check with its verdict and fix; exit 0 when nothing is
//! a problem, 1 when something is. A healthy workspace, no daemon, a state directory open to
//! others, a damaged index, an inotify watch limit below the tree's directory count (in a user
//! namespace of its own), and installed hooks that run a missing, foreign-version or trusted
//! filewatchd.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::install::AGENT_ENV;
use crate::common::*;
use serde_json::Value;

/// The user's `HOME` of a test, and a `PATH` directory it controls.
struct User {
    home: tempfile::TempDir,
    bin: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        User {
            home: tempfile::Builder::new().prefix("fwd-user-").tempdir().unwrap(),
            bin: tempfile::Builder::new().prefix("fwd-bin-").tempdir().unwrap(),
        }
    }

    /// `filewatchd ARGS` in the root with this home, the agents' overrides cleared, and `PATH`
    /// holding only this user's `bin` and the system's directories.
    fn command(&self, ws: &Workspace, args: &[&str]) -> Command {
        let mut cmd = ws.command();
        for var in AGENT_ENV {
            cmd.env_remove(var);
        }
        cmd.env("HOME", self.home.path())
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.path().display()))
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// A `filewatchd` on this user's PATH: this binary, or a script saying it is `version`.
    fn put_on_path(&self, version: Option<&str>) -> PathBuf {
        let path = self.bin.path().join("filewatchd");
        let _ = std::fs::remove_file(&path);
        match version {
            None => std::os::unix::fs::symlink(BIN, &path).unwrap(),
            Some(version) => {
                std::fs::write(&path, format!("#!/bin/sh\necho filewatchd {version}\n")).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        path
    }
}

/// `doctor --json` (with `--state-dir` when `state`); its exit code and report.
fn doctor_json(ws: &Workspace, user: &User, state: bool) -> (Option<i32>, Value) {
    let mut cmd = user.command(ws, &["doctor", "--json"]);
    if state {
        cmd.arg("--state-dir").arg(ws.state_dir());
    }
    let out = run_to_end(cmd);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json is not JSON ({e}):\n{}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), report)
}

/// The check named `name` in a report.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    let checks = report["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks: {report:#}"));
    checks
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report:#}"))
}

fn verdict<'a>(report: &'a Value, name: &str) -> &'a str {
    check(report, name)["verdict"].as_str().unwrap_or_default()
}

/// Every check has a known verdict, a message, and a fix when it is not ok; the counts agree.
#[track_caller]
fn assert_shape(report: &Value) {
    let checks = report["checks"].as_array().unwrap();
    let mut problems = 0;
    for c in checks {
        let verdict = c["verdict"].as_str().unwrap_or_default();
        assert!(["ok", "warning", "problem"].contains(&verdict), "{c:#}");
        assert!(
            c["check"].is_string() && c["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{c:#}"
        );
        assert!(
            verdict == "ok" || c["fix"].is_string(),
            "a verdict without its fix: {c:#}"
        );
        assert!(c["fix"].is_null() || c["fix"].is_string(), "{c:#}");
        problems += usize::from(verdict == "problem");
    }
    assert_eq!(report["problems"], problems, "{report:#}");
    assert_eq!(report["healthy"], problems == 0, "{report:#}");
}

#[test]
fn a_healthy_workspace_passes_in_text_and_json() {
    let ws = Workspace::new();
    ws.write("src/main.rs", "fn main() {}\n");
    let user = User::new();
    let daemon = Daemon::start(&ws);

    let (code, report) = doctor_json(&ws, &user, true);
    assert_shape(&report);
    assert_eq!(code, Some(0), "{report:#}");
    for name in [
        "daemon",
        "capture",
        "state_dir",
        "store",
        "inotify.max_user_watches",
        "inotify.max_user_instances",
        "inotify.max_queued_events",
        "hooks",
    ] {
        assert_eq!(verdict(&report, name), "ok", "{report:#}");
    }
    assert_ne!(verdict(&report, "disk"), "problem", "{report:#}");
    let message = check(&report, "daemon")["message"].as_str().unwrap_or_default();
    assert!(message.contains(&format!("pid {}", daemon.pid)), "{message}");
    assert!(
        check(&report, "inotify.max_user_watches")["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("2 directories to watch")),
        "the root and src/: {report:#}"
    );

    let out = run_to_end(user.command(
        &ws,
        &["doctor", "--state-dir", &ws.state_dir().display().to_string()],
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("ok       daemon: pid")),
        "{text}"
    );
    assert!(
        text.lines().last().is_some_and(|l| l.starts_with("healthy")),
        "{text}"
    );
}

#[test]
fn no_daemon_is_a_problem_whose_fix_is_start() {
    let ws = Workspace::new();
    ws.write("a/b/c.txt", "x");
    let user = User::new();
    let (code, report) = doctor_json(&ws, &user, false);
    assert_shape(&report);
    assert_eq!(code, Some(1), "{report:#}");
    let daemon = check(&report, "daemon");
    assert_eq!(
        (&daemon["verdict"], &daemon["fix"]),
        (&Value::from("problem"), &Value::from("filewatchd start"))
    );
    assert!(
        daemon["message"]
            .as_str()
            .is_some_and(|m| m.contains("no filewatchd runs")),
        "{daemon:#}"
    );
    // Without a daemon the tree is walked: the root, a/ and a/b/.
    let watches = check(&report, "inotify.max_user_watches");
    assert!(
        watches["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("3 directories to watch")),
        "{watches:#}"
    );

    let out = run_to_end(user.command(&ws, &["doctor"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("problem  daemon: no filewatchd runs for"), "{text}");
    assert!(text.contains("fix: filewatchd start"), "{text}");
}

#[test]
fn a_state_directory_open_to_others_and_a_damaged_index_are_problems() {
    let ws = Workspace::new();
    let user = User::new();
    let daemon = Daemon::start(&ws);
    let token = ws.state_dir().join("token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, report) = doctor_json(&ws, &user, true);
    assert_eq!(
        (code, verdict(&report, "state_dir")),
        (Some(1), "problem"),
        "{report:#}"
    );
    let fix = check(&report, "state_dir")["fix"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(fix, format!("chmod 600 {}", token.display()));
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(ws.state_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_, report) = doctor_json(&ws, &user, true);
    let fix = check(&report, "state_dir")["fix"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(fix, format!("chmod 700 {}", ws.state_dir().display()));
    std::fs::set_permissions(ws.state_dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(doctor_json(&ws, &user, true).0, Some(0));

    daemon.stop();
    damage(&ws.state_dir().join("index.sqlite"));
    let (code, report) = doctor_json(&ws, &user, true);
    assert_eq!(
        (code, verdict(&report, "store")),
        (Some(1), "problem"),
        "{report:#}"
    );
    assert!(
        check(&report, "store")["message"]
            .as_str()
            .is_some_and(|m| m.contains("damaged")),
        "{report:#}"
    );
}

/// Overwrites the index's pages after the header: SQLite's own check finds it.
fn damage(db: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    let len = file.metadata().unwrap().len();
    file.seek(SeekFrom::Start(4096)).unwrap();
    file.write_all(&vec![0xA5; (len - 4096).min(64 * 1024) as usize])
        .unwrap();
}

/// The watch limit is set low in a user namespace of doctor's own, so the rest of the
/// machine keeps its limit; skipped where that cannot be done.
#[test]
fn a_watch_limit_below_the_directory_count_is_a_warning_with_the_sysctl() {
    if !user_namespace_watch_limit_works() {
        return;
    }
    let ws = Workspace::new();
    for i in 0..10 {
        ws.write(format!("d{i}/f.txt"), "x");
    }
    let user = User::new();
    let _daemon = Daemon::start(&ws);
    let inner = user.command(&ws, &["doctor", "--json", "--state-dir"]);
    let mut cmd = Command::new("unshare");
    cmd.args([
        "-Ur",
        "sh",
        "-c",
        "echo 5 > /proc/sys/user/max_inotify_watches && exec \"$@\"",
        "sh",
    ])
    .arg(BIN)
    .args(inner.get_args())
    .arg(ws.state_dir())
    .current_dir(ws.root())
    .stdin(Stdio::null());
    for (name, value) in inner.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    let out: Output = run_to_end(cmd);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_shape(&report);
    let watches = check(&report, "inotify.max_user_watches");
    assert_eq!(watches["verdict"], "warning", "{report:#}");
    assert!(
        watches["message"]
            .as_str()
            .is_some_and(|m| m.contains("11 directories to watch, over the limit of 5")),
        "{watches:#}"
    );
    assert!(
        watches["fix"]
            .as_str()
            .is_some_and(|f| f.starts_with("sudo sysctl user.max_inotify_watches=524288")),
        "{watches:#}"
    );
    assert_eq!(out.status.code(), Some(0), "a warning is healthy: {report:#}");
}

#[test]
fn installed_hooks_must_run_an_existing_filewatchd_of_this_version() {
    let ws = Workspace::new();
    let user = User::new();
    let _daemon = Daemon::start(&ws);
    ws.write(
        ".claude/settings.local.json",
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/gone/bin/filewatchd hook claude-code"}]}]}}"#,
    );
    let (code, report) = doctor_json(&ws, &user, true);
    assert_shape(&report);
    assert_eq!(code, Some(1), "{report:#}");
    let claude = check(&report, "hooks.claude-code.project");
    assert_eq!(claude["verdict"], "problem", "{claude:#}");
    assert!(
        claude["message"]
            .as_str()
            .is_some_and(|m| m.contains("/gone/bin/filewatchd, which does not exist")),
        "{claude:#}"
    );
    assert_eq!(claude["fix"], "filewatchd hook install claude-code");

    // The fix: install points the hooks at this binary.
    let install = run_to_end(user.command(&ws, &["hook", "install", "claude-code"]));
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let (_, report) = doctor_json(&ws, &user, true);
    assert_eq!(verdict(&report, "hooks.claude-code.project"), "ok", "{report:#}");

    // A user file that runs `filewatchd` from PATH: none, another version, this one.
    let gemini = user.home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(gemini.parent().unwrap()).unwrap();
    std::fs::write(
        &gemini,
        r#"{"hooks": {"AfterAgent": [{"hooks": [{"command": "filewatchd hook gemini-cli"}]}]}}"#,
    )
    .unwrap();
    let (code, report) = doctor_json(&ws, &user, true);
    assert_eq!(
        (code, verdict(&report, "hooks.gemini-cli.user")),
        (Some(1), "problem"),
        "{report:#}"
    );
    user.put_on_path(Some("0.0.1"));
    let (code, report) = doctor_json(&ws, &user, true);
    let gemini_check = check(&report, "hooks.gemini-cli.user");
    assert_eq!(
        (code, &gemini_check["verdict"]),
        (Some(0), &Value::from("warning")),
        "{report:#}"
    );
    assert!(
        gemini_check["message"]
            .as_str()
            .is_some_and(|m| m.contains("filewatchd 0.0.1")),
        "{gemini_check:#}"
    );
    user.put_on_path(None);
    let (code, report) = doctor_json(&ws, &user, true);
    assert_eq!(
        (code, verdict(&report, "hooks.gemini-cli.user")),
        (Some(0), "ok"),
        "{report:#}"
    );
    // An earlier release's install: no tool-call events. A warning, fixed by installing again.
    let events = check(&report, "hooks.gemini-cli.user.events");
    assert_eq!(events["verdict"], "warning", "{report:#}");
    assert!(
        events["message"]
            .as_str()
            .is_some_and(|m| m.contains("BeforeTool, AfterTool")),
        "{events:#}"
    );
    assert_eq!(
        events["fix"], "filewatchd hook install gemini-cli --user, then restart the agent's running sessions",
        "{events:#}"
    );
    let claude_events = report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["check"] == "hooks.claude-code.project.events");
    assert_eq!(claude_events, None, "a fresh install has every event: {report:#}");
}

#[test]
fn codex_hooks_need_their_trust_recorded() {
    let ws = Workspace::new();
    let user = User::new();
    let _daemon = Daemon::start(&ws);
    user.put_on_path(None);
    let install = run_to_end(user.command(&ws, &["hook", "install", "codex"]));
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );

    let (code, report) = doctor_json(&ws, &user, true);
    assert_shape(&report);
    assert_eq!(code, Some(0), "untrusted hooks are a warning: {report:#}");
    assert_eq!(verdict(&report, "hooks.codex.project"), "ok", "{report:#}");
    assert_eq!(
        verdict(&report, "hooks.codex.project.trust"),
        "warning",
        "{report:#}"
    );
    assert_eq!(
        verdict(&report, "hooks.codex.project.trust.project"),
        "warning",
        "{report:#}"
    );

    let hooks = ws.root().join(".codex/hooks.json");
    let config = user.home.path().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        format!(
            "[projects.\"{root}\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"{hooks}:Stop:0:0\"]\ntrusted_hash = \"sha256:00\"\n",
            root = ws.root().display(),
            hooks = hooks.display()
        ),
    )
    .unwrap();
    let (_, report) = doctor_json(&ws, &user, true);
    assert_eq!(verdict(&report, "hooks.codex.project.trust"), "ok", "{report:#}");
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["check"].as_str())
        .collect();
    assert!(
        !names.contains(&"hooks.codex.project.trust.project"),
        "{report:#}"
    );
}
