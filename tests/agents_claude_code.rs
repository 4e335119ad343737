//! The real-CLI tier for Claude Code (fixtures shaped from the docs miss what the agent really
//! does): the pinned `@anthropic-ai/claude-code` of tests/agents/claude-code/, driven offline by
//! the scripted model server (tests/common/model.rs, the Anthropic Messages API of
//! model_anthropic.rs), with filewatchd's hooks installed as the README says. Skips (and says
//! why) when `npm ci` has not been run in tests/agents/claude-code.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::agent_cli::{self, *};
use crate::common::model;
use crate::common::*;
use serde_json::{Value, json};

/// The CLI, if installed and runnable. npm 11 may skip the package's postinstall, which puts
/// the native binary in place of `bin/claude.exe`; its `cli-wrapper.cjs` finds it then.
fn claude_bin() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/claude-code/node_modules");
    let bin = dir.join(".bin/claude");
    let wrapper = dir.join("@anthropic-ai/claude-code/cli-wrapper.cjs");
    for argv in [vec![bin.clone()], vec![PathBuf::from("node"), wrapper]] {
        let runs = argv[0].exists() || argv.len() > 1 && argv[1].exists();
        let version = runs.then(|| Command::new(&argv[0]).args(&argv[1..]).arg("--version").output());
        if let Some(Ok(out)) = version
            && out.status.success()
        {
            return Some(argv);
        }
    }
    skip(&format!(
        "{} is missing or does not run; run `npm ci --no-audit --no-fund` in tests/agents/claude-code",
        bin.display()
    ));
    None
}

/// A Claude Code session in `ws`, its home and config in the workspace's temporary home.
struct Claude<'a> {
    ws: &'a Workspace,
    argv: Vec<PathBuf>,
    server: &'a model::ModelServer,
    home: PathBuf,
}

impl Claude<'_> {
    fn new<'a>(ws: &'a Workspace, argv: Vec<PathBuf>, server: &'a model::ModelServer) -> Claude<'a> {
        Claude::named(ws, argv, server, "claude-home")
    }

    /// A Claude Code with its own home (`home`): two of them run side by side.
    fn named<'a>(
        ws: &'a Workspace,
        argv: Vec<PathBuf>,
        server: &'a model::ModelServer,
        home: &str,
    ) -> Claude<'a> {
        let home = ws.home().join(home);
        std::fs::create_dir_all(home.join(".claude")).expect("claude home");
        Claude {
            ws,
            argv,
            server,
            home,
        }
    }

    /// A user-settings hook (they run besides the project's) appending every event's payload to
    /// a file outside the workspace: the real sequence, read back by [`Claude::events`].
    fn record_events(&self) {
        let log = self.home.join("events.jsonl");
        let command = format!("cat >> '{}' && echo >> '{}'", log.display(), log.display());
        let hook = json!([{"hooks": [{"type": "command", "command": command}]}]);
        let events = [
            "UserPromptSubmit",
            "PreCompact",
            "PostCompact",
            "SessionStart",
            "Stop",
            "SessionEnd",
        ];
        let hooks: serde_json::Map<String, Value> =
            events.iter().map(|e| (e.to_string(), hook.clone())).collect();
        let settings = json!({"hooks": hooks}).to_string();
        std::fs::write(self.home.join(".claude/settings.json"), settings).expect("user settings");
    }

    /// The recorded events, each as `name` or `name:source-or-trigger`.
    fn events(&self) -> Vec<String> {
        agent_cli::recorded_events(&self.home.join("events.jsonl"), &["source", "trigger"])
    }

    /// One `claude -p` run (`--continue`: the same session as the run before).
    fn prompt(&self, resume: bool, prompt: &str) {
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..]).env_clear();
        for key in ["LANG", "TMPDIR"] {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
        cmd.env("HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", self.home.join(".claude"))
            .env("FILEWATCHD_HOME", self.ws.home())
            .env("PATH", path_with_filewatchd())
            .env("ANTHROPIC_BASE_URL", &self.server.url)
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            // MCP tools are offered at once, not deferred behind ToolSearch (the scripted
            // model calls them by name).
            .env("ENABLE_TOOL_SEARCH", "false");
        cmd.current_dir(self.ws.root()).arg("-p");
        if resume {
            cmd.arg("--continue");
        }
        cmd.args([
            "--allowedTools",
            "Bash,mcp__filewatchd__turn_changes",
            "--output-format",
            "json",
            prompt,
        ]);
        let out = cmd.stdin(Stdio::null()).output().expect("run claude");
        assert!(
            out.status.success(),
            "claude -p failed: {}\n{}\nrequests: {:#}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            json!(*self.server.requests.lock().unwrap())
        );
    }
}

/// The one session the daemon knows, with its turns.
fn the_session(daemon: &Daemon, server: &model::ModelServer) -> (String, Vec<Value>) {
    let sessions = expect(200, daemon.get("/v1/sessions"));
    let session = sessions["sessions"][0]["session"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "no session: {sessions:#}\n{:#}",
                json!(*server.requests.lock().unwrap())
            )
        })
        .to_string();
    assert_eq!(
        sessions["sessions"].as_array().map(Vec::len),
        Some(1),
        "{sessions:#}"
    );
    let turns = daemon.turn_list(&session);
    (session, turns)
}

fn labels(turns: &[Value]) -> Vec<Value> {
    turns.iter().map(|t| t["label"].clone()).collect()
}

fn start(ws: &Workspace) -> Daemon {
    start_with_hooks(ws, "claude-code")
}

#[test]
fn claude_print_two_prompts_make_two_turns_and_undo_is_exact() {
    let Some(argv) = claude_bin() else { return };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    ws.write("b.txt", "fn two\n");
    let daemon = start(&ws);
    let server = model::ModelServer::start(two_prompt_script());
    let claude = Claude::new(&ws, argv, &server);
    claude.prompt(false, "first prompt: edit a");
    let after_first = snapshot(ws.root());
    claude.prompt(true, "second prompt: edit b");
    let (session, _) = the_session(&daemon, &server);
    let labels = ["first prompt: edit a", "second prompt: edit b"];
    let paths: [&[&str]; 2] = [&["a.txt"], &["b.txt", "c.txt"]];
    assert_two_turns_and_undo(&daemon, &session, labels, paths, &after_first, ws.root());
    assert_eq!(ws.read("b.txt"), b"fn two\n");
}

/// Whether the agent sent the server a request whose text holds `needle`.
fn requested(server: &model::ModelServer, needle: &str) -> bool {
    let requests = server.requests.lock().unwrap();
    requests.iter().any(|r| r["body"].to_string().contains(needle))
}

/// With the real CLI, an auto-compaction inside a turn does not end it: the answer to the tool
/// call reports a nearly full context, Claude Code auto-compacts before its next request
/// (PreCompact, SessionStart `compact`, PostCompact) and goes on with the same turn from the
/// summary.
#[test]
fn claude_auto_compaction_in_a_turn_keeps_the_turn_whole() {
    let Some(argv) = claude_bin() else { return };
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    let daemon = start(&ws);
    let script = model::compaction_script();
    // Claude Code's default model here (`claude-opus-5-5`) has a large window: 195k reported
    // tokens do not make it compact, 990k do (the threshold is taken from the last usage).
    let server = model::ModelServer::start_compacting(script, "compact", 990_000);
    let claude = Claude::new(&ws, argv, &server);
    claude.record_events();
    claude.prompt(false, "warm-up prompt");
    let after_first = snapshot(ws.root());
    claude.prompt(true, "compact prompt: edit a twice");
    assert!(
        requested(&server, "Your task is to create a detailed summary"),
        "no compaction request: {:#}",
        json!(*server.requests.lock().unwrap())
    );
    let events = claude.events();
    let second_run = &events[events
        .iter()
        .rposition(|e| e.starts_with("SessionStart:resume"))
        .unwrap_or(0)..];
    assert_eq!(
        second_run,
        [
            "SessionStart:resume",
            "UserPromptSubmit",
            "PreCompact:auto",
            "SessionStart:compact",
            "PostCompact:auto",
            "Stop",
            "SessionEnd",
        ],
        "{events:?}"
    );
    assert_compacted_turn(&daemon, &ws, &server, &after_first);
}

/// The compacted prompt is one ended turn with its label, holding the writes from before and
/// after the compaction, and its undo gives back the tree as it was after the warm-up.
fn assert_compacted_turn(daemon: &Daemon, ws: &Workspace, server: &model::ModelServer, after_first: &Tree) {
    let (session, turns) = the_session(daemon, server);
    assert_eq!(
        labels(&turns),
        vec![json!("warm-up prompt"), json!("compact prompt: edit a twice")]
    );
    let second = daemon.turn(&session, 2, false);
    assert_eq!(
        changed_paths(&second),
        set(["a.txt", "after.txt", "before.txt"]),
        "{second:#}\nrequests: {:#}",
        json!(*server.requests.lock().unwrap())
    );
    assert_eq!(ws.read("a.txt"), b"fn ONE\n");
    assert!(turns.iter().all(|t| !t["ended_at"].is_null()), "{turns:#?}");
    rollback_applied(daemon.undo(&session, json!({})));
    assert_tree_eq(after_first, &snapshot(ws.root()), "undo of the compacted turn");
}

/// With the real CLI, the agent can ask what it changed: after its `sed`, the model calls
/// filewatchd's MCP tool `turn_changes` (`mcp__filewatchd__turn_changes`, the server from
/// `.mcp.json` as `hook install claude-code --mcp` wrote and approved it) and gets back what
/// that command changed.
#[test]
fn claude_sees_what_its_sed_changed_through_turn_changes() {
    let Some(argv) = claude_bin() else { return };
    let ws = mcp_workspace();
    let _daemon = start(&ws);
    install_mcp(&ws, "claude-code");
    let server = sed_then_turn_changes();
    let claude = Claude::new(&ws, argv, &server);
    claude.prompt(false, "edit a, then ask filewatchd what changed");
    assert_turn_changes_saw_the_sed(&server);
}

const SHARED: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\n";

/// Alpha's command echoes its gate: the model's answer to its result waits until the test
/// opens it, so alpha's turn stays open with no tool call running.
fn two_sessions_script() -> model::Script {
    std::sync::Arc::new(|prompt: &str| {
        if prompt.contains("alpha") {
            "echo GATE-alpha && echo A > a.txt && sed -i 's/^line 2$/line 2 by alpha/' shared.txt".to_string()
        } else {
            "echo B > b.txt".to_string()
        }
    })
}

/// Issue 48 with the real CLI: two Claude Code sessions in one tree whose turns overlap and
/// whose tool calls do not, the person editing between their calls (one edit in a file alpha
/// also edits, in another place). Each turn lists only its own writes; each undo, without
/// `--force`, takes back only its own and leaves the other's files and the person's edits.
#[test]
fn two_claude_sessions_and_a_person_each_undo_takes_back_only_its_own() {
    let Some(argv) = claude_bin() else { return };
    let ws = Workspace::new();
    ws.write("shared.txt", SHARED);
    ws.write("notes.txt", "my notes\n");
    let daemon = start(&ws);
    let server = model::ModelServer::start(two_sessions_script());
    server.gate("alpha");
    let alpha = Claude::named(&ws, argv.clone(), &server, "alpha-home");
    let beta = Claude::named(&ws, argv, &server, "beta-home");
    std::thread::scope(|scope| {
        let running = scope.spawn(|| alpha.prompt(false, "alpha: edit a and line 2"));
        assert!(
            poll_until(std::time::Duration::from_secs(120), || server
                .held_at("alpha")
                .then_some(()))
            .is_some(),
            "alpha's tool result never reached the model: {:#}",
            json!(*server.requests.lock().unwrap())
        );
        // Alpha's turn is open, its tool call done. The person edits; beta works.
        ws.write("notes.txt", "my notes\nmore of my notes\n");
        ws.sh("sed -i 's/^line 8$/line 8 by the person/' shared.txt");
        beta.prompt(false, "beta: add b");
        server.open("alpha");
        running.join().expect("alpha's run");
    });
    let sessions = expect(200, daemon.get("/v1/sessions"));
    let names: Vec<String> = sessions["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["session"].as_str().map(str::to_string))
        .collect();
    assert_eq!(names.len(), 2, "{sessions:#}");
    let turn_of = |name: &String| daemon.turn(name, 1, false);
    let (alpha_turn, beta_turn) = match names
        .iter()
        .find(|n| changed_paths(&turn_of(n)).contains("a.txt"))
    {
        Some(a) => (turn_of(a), turn_of(names.iter().find(|n| *n != a).expect("beta"))),
        None => panic!("no turn lists a.txt: {sessions:#}"),
    };
    assert_eq!(
        changed_paths(&alpha_turn),
        set(["a.txt", "shared.txt"]),
        "{alpha_turn:#}"
    );
    assert_eq!(changed_paths(&beta_turn), set(["b.txt"]), "{beta_turn:#}");
    let undo = |turn: &Value| {
        let session = turn["session"].as_str().unwrap_or_default().to_string();
        let out = ws.cli(".", &["undo", "--session", &session]);
        assert!(out.status.success(), "{out:?}");
    };
    undo(&alpha_turn);
    let person_only = SHARED.replace("line 8\n", "line 8 by the person\n");
    assert!(!ws.path("a.txt").exists());
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), person_only);
    assert_eq!(ws.read("notes.txt"), b"my notes\nmore of my notes\n");
    assert_eq!(ws.read("b.txt"), b"B\n");
    undo(&beta_turn);
    assert!(!ws.path("b.txt").exists());
    assert_eq!(String::from_utf8_lossy(&ws.read("shared.txt")), person_only);
}

/// Each session's command waits (polling a flag the test sets, with a deadline) until both
/// are running, then writes its file: their tool calls overlap.
/// Each command writes its file and runs on a moment, as most commands do: a writer that
/// exits at once can be gone before fanotify's reader reads its ancestry, and its write then
/// stays `ambiguous` (docs/tracking.md, "By process").
fn overlapping_script(control: &Path) -> model::Script {
    let control = control.to_path_buf();
    std::sync::Arc::new(move |prompt: &str| {
        let name = if prompt.contains("alpha") { "alpha" } else { "beta" };
        format!(
            "touch '{dir}/started-{name}' && for i in $(seq 3000); do [ -e '{dir}/go' ] && break; sleep 0.01; done && echo {name} > {name}.txt && sleep 0.5",
            dir = control.display()
        )
    })
}

/// Two Claude Code sessions whose tool calls overlap, in a workspace whose daemon has the
/// capability or not; each session's turn, by its file.
fn overlapping_calls(argv: &[PathBuf], env: &[(&str, &str)]) -> (Daemon, Vec<(String, Value)>) {
    let ws = Workspace::new();
    let control = tempfile::tempdir().expect("control dir");
    let daemon = Daemon::start_in_home_with_env(&ws, env);
    let install = ws.cli(".", &["hook", "install", "claude-code", "--project"]);
    assert!(install.status.success(), "{install:?}");
    let server = model::ModelServer::start(overlapping_script(control.path()));
    let alpha = Claude::named(&ws, argv.to_vec(), &server, "alpha-home");
    let beta = Claude::named(&ws, argv.to_vec(), &server, "beta-home");
    std::thread::scope(|scope| {
        let runs = [
            scope.spawn(|| alpha.prompt(false, "alpha: write alpha.txt")),
            scope.spawn(|| beta.prompt(false, "beta: write beta.txt")),
        ];
        let started = |name: &str| control.path().join(format!("started-{name}")).exists();
        let both = poll_until(std::time::Duration::from_secs(120), || {
            (started("alpha") && started("beta")).then_some(())
        });
        assert!(
            both.is_some(),
            "both calls running: {:#}",
            json!(*server.requests.lock().unwrap())
        );
        std::fs::write(control.path().join("go"), "").expect("go");
        for run in runs {
            run.join().expect("a claude run");
        }
    });
    let sessions = expect(200, daemon.get("/v1/sessions"));
    let turns = sessions["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["session"].as_str())
        .map(|name| (name.to_string(), daemon.turn(name, 1, false)))
        .collect();
    drop(ws);
    (daemon, turns)
}

/// Issue 48 with the real CLI, tool calls that overlap: without the capability the two files
/// are `ambiguous` (each turn lists both); with it (the tests run as root), fanotify names each
/// file's writer, a descendant of its own Claude Code: each turn lists only its file.
#[test]
fn two_claude_sessions_whose_calls_overlap_are_told_apart_by_process() {
    let Some(argv) = claude_bin() else { return };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("fanotify needs CAP_SYS_ADMIN: run the tests as root");
        return;
    }
    let (_daemon, turns) = overlapping_calls(&argv, &[("FILEWATCHD_FANOTIFY", "off")]);
    for (session, turn) in &turns {
        assert_eq!(
            changed_paths(turn),
            set(["alpha.txt", "beta.txt"]),
            "{session}: {turn:#}"
        );
        assert_eq!(turn["counts"]["ambiguous"], 2, "{session}: {turn:#}");
    }
    // fanotify marks the whole file system: every other test's writes would be events this
    // daemon reads too, and a writer (a tool call's short shell) that has exited before its
    // event is read is nobody's. Alone on the machine, it reads its own (docs/testing.md).
    let _alone = machine::exclusive();
    let (_daemon, turns) = overlapping_calls(&argv, &[]);
    assert_eq!(turns.len(), 2, "{turns:#?}");
    for (session, turn) in &turns {
        let listed = changed_paths(turn);
        assert_eq!(listed.len(), 1, "{session}: {turn:#}");
        let change = &turn["changes"][0];
        assert_eq!(change["decided"], "process", "{session}: {turn:#}");
        assert_eq!(turn["counts"]["ambiguous"], 0, "{session}: {turn:#}");
    }
}
