//! What the real-CLI tests of Gemini CLI, opencode and pi share (tests/agents_*.rs): finding
//! the pinned agent, running it offline in a home of its own with the `filewatchd` under test
//! on `PATH`, and the two-prompt check. Not every test uses every helper.

use crate::common::skip;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

/// How long one agent run may take before the test fails (a hung agent, not a slow one).
const RUN_DEADLINE: Duration = Duration::from_secs(180);

/// `tests/agents/<dir>/node_modules/.bin/<name>`, or `None` (and why) when it is not installed.
pub fn agent_bin(dir: &str, name: &str) -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/agents")
        .join(dir)
        .join("node_modules/.bin")
        .join(name);
    if bin.exists() {
        return Some(bin);
    }
    skip(&format!(
        "{} is missing; run `npm ci --no-audit --no-fund` in tests/agents/{dir}",
        bin.display()
    ));
    None
}

/// The agent's own home (`HOME`, the XDG dirs): under the test's temp home, never the user's.
pub fn agent_home(ws: &Workspace) -> PathBuf {
    let home = ws.home().join("agent-home");
    std::fs::create_dir_all(&home).expect("agent home");
    home
}

/// `bin` in the workspace with the environment a hook needs to find this workspace's daemon,
/// the `filewatchd` under test first on `PATH` (the project integrations run it from there),
/// and the agent's home.
pub fn agent_command(ws: &Workspace, bin: &Path) -> Command {
    let filewatchd = ws.command();
    let mut cmd = Command::new(bin);
    for (key, value) in filewatchd.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let home = agent_home(ws);
    cmd.env("PATH", path_with_filewatchd())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("FILEWATCHD_BIN")
        // opencode takes its directory from `$PWD`, which `current_dir` does not set.
        .env("PWD", ws.root())
        .current_dir(ws.root())
        .stdin(Stdio::null());
    cmd
}

/// Runs an agent to its end (at most `RUN_DEADLINE`) and fails the test unless it succeeded.
pub fn run_agent(mut cmd: Command, what: &str) -> Output {
    let (out, err) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    cmd.stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let until = Instant::now() + RUN_DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            child.kill().ok();
            child.wait().ok();
            panic!("{what} still running after {RUN_DEADLINE:?}: {}", read(&err));
        }
        std::thread::sleep(Duration::from_millis(50)); // polling a process, not synchronising
    };
    let output = Output {
        status,
        stdout: read(&out).into_bytes(),
        stderr: read(&err).into_bytes(),
    };
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn read(file: &std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut file = file;
    let mut text = String::new();
    file.rewind().ok();
    file.read_to_string(&mut text).ok();
    text
}

/// The one session the daemon knows of (the agent's).
pub fn only_session(daemon: &Daemon, context: &dyn Fn() -> String) -> String {
    let sessions = expect(200, daemon.get("/v1/sessions"));
    let all = sessions["sessions"].as_array().cloned().unwrap_or_default();
    assert_eq!(all.len(), 1, "one session expected: {sessions:#}\n{}", context());
    all[0]["session"].as_str().unwrap_or_default().to_string()
}

/// Two ended turns labelled `labels` (the prompts as the agent passed them on), each with exactly its paths; then an undo of the
/// second puts back exactly the tree `after_first`.
pub fn assert_two_turns_and_undo(
    daemon: &Daemon,
    session: &str,
    labels: [&str; 2],
    paths: [&[&str]; 2],
    after_first: &Tree,
    root: &Path,
) {
    let turns = daemon.turn_list(session);
    let got: Vec<Value> = turns.iter().map(|t| t["label"].clone()).collect();
    assert_eq!(got, vec![json!(labels[0]), json!(labels[1])], "{turns:#?}");
    assert!(turns.iter().all(|t| !t["ended_at"].is_null()), "{turns:#?}");
    for (n, expected) in [1, 2].into_iter().zip(paths) {
        let turn = daemon.turn(session, n, false);
        assert_eq!(
            changed_paths(&turn),
            set(expected.iter().copied()),
            "turn {n}: {turn:#}"
        );
    }
    rollback_applied(daemon.undo(session, json!({})));
    assert_tree_eq(after_first, &snapshot(root), "undo of the second prompt");
}

/// A workspace with `a.txt` and `b.txt`, its daemon, and `agent`'s hooks installed as the
/// README says (`filewatchd hook install AGENT --project`).
pub fn start_with_hooks(ws: &Workspace, agent: &str) -> Daemon {
    let daemon = Daemon::start_in_home(ws);
    let install = ws.cli(".", &["hook", "install", agent, "--project"]);
    assert!(install.status.success(), "{install:?}");
    daemon
}

/// The two prompts' script: the first edits `a.txt`; the second edits `b.txt` and creates
/// `c.txt` (what `assert_two_turns_and_undo` is given as each turn's paths).
pub fn two_prompt_script() -> super::model::Script {
    std::sync::Arc::new(|prompt: &str| {
        if prompt.contains("second") {
            "sed -i 's/two/2/' b.txt && echo made > c.txt".to_string()
        } else {
            "sed -i 's/one/1/' a.txt".to_string()
        }
    })
}

/// `PATH` with the directory of the `filewatchd` under test first.
pub fn path_with_filewatchd() -> std::ffi::OsString {
    let dir = Path::new(BIN).parent().map(Path::to_path_buf).unwrap_or_default();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest))).unwrap_or(rest)
}

/// A script whose tool calls run `commands` in turn (the last one again once they run out).
pub fn commands_in_turn(commands: &'static [&'static str]) -> super::model::Script {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::sync::Arc::new(move |_prompt: &str| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        commands[n.min(commands.len() - 1)].to_string()
    })
}

/// One ended turn labelled `label` with exactly `paths` (writes before and after a compaction
/// in its middle), and the server saw the compaction's summary request (no tools, "summar…");
/// an undo then puts back exactly the tree `before`, but for what lies under `agent_dir` (the
/// agent's own files, which it writes at start-up outside any turn).
pub fn assert_one_compacted_turn_and_undo(
    daemon: &Daemon,
    server: &super::model::ModelServer,
    label: &str,
    paths: &[&str],
    before: &Tree,
    root: &Path,
    agent_dir: &str,
) {
    let requests = server.requests.lock().map(|r| r.clone()).unwrap_or_default();
    let summaries = requests
        .iter()
        .filter(|r| r["body"]["messages"].is_array())
        .filter(|r| r["body"]["tools"].as_array().is_none_or(Vec::is_empty))
        .filter(|r| r["body"].to_string().to_lowercase().contains("summar"))
        .count();
    assert!(summaries > 0, "no compaction request: {requests:#?}");
    let session = only_session(daemon, &|| format!("{requests:#?}"));
    let turns = daemon.turn_list(&session);
    assert_eq!(turns.len(), 1, "{turns:#?}");
    assert_eq!(turns[0]["label"], json!(label), "{turns:#?}");
    assert!(!turns[0]["ended_at"].is_null(), "{turns:#?}");
    let turn = daemon.turn(&session, 1, false);
    assert_eq!(changed_paths(&turn), set(paths.iter().copied()), "{turn:#}");
    rollback_applied(daemon.undo(&session, json!({})));
    let outside = |tree: &Tree| -> Tree {
        let mine = |path: &String| path.starts_with(&format!("{agent_dir}/"));
        tree.iter()
            .filter(|(p, _)| !mine(p))
            .map(|(p, e)| (p.clone(), e.clone()))
            .collect()
    };
    assert_tree_eq(
        &outside(before),
        &outside(&snapshot(root)),
        "undo of the compacted turn",
    );
}

/// The hook events a logging hook recorded in `log` (one JSON payload per line), each as
/// `name` or `name:detail`, the detail the first of `details` the payload has (`source`,
/// `trigger`, `reason`).
pub fn recorded_events(log: &Path, details: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tag = |e: Value| {
        let name = e["hook_event_name"].as_str().unwrap_or("?").to_string();
        match details.iter().find_map(|key| e[*key].as_str()) {
            Some(detail) => format!("{name}:{detail}"),
            None => name,
        }
    };
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .map(tag)
        .collect()
}

/// The MCP tests' workspace: `a.txt`, which the prompt's `sed` edits, and `b.txt`, which
/// nothing touches.
pub fn mcp_workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write("a.txt", "fn one\n");
    ws.write("b.txt", "fn two\n");
    ws
}

/// The MCP tests' model: the prompt's tool call runs `sed -i` on `a.txt`, then, with that
/// result back, the model calls filewatchd's `turn_changes` tool.
pub fn sed_then_turn_changes() -> super::model::ModelServer {
    super::model::ModelServer::start_then_calling(
        commands_in_turn(&["sed -i 's/one/1/' a.txt"]),
        "turn_changes",
    )
}

/// filewatchd's MCP server added to the agent's project configuration as the README says
/// (`filewatchd hook install AGENT --mcp`).
pub fn install_mcp(ws: &Workspace, agent: &str) {
    let install = ws.cli(".", &["hook", "install", agent, "--mcp"]);
    assert!(install.status.success(), "{install:?}");
}

/// The answer of `turn_changes` that came back to the model lists `a.txt` (what the `sed`
/// changed) and not `b.txt`.
pub fn assert_turn_changes_saw_the_sed(server: &super::model::ModelServer) {
    let requests = || format!("{:#}", json!(*server.requests.lock().unwrap()));
    let Some(answer) = server.tool_result("turn_changes") else {
        panic!(
            "no answer of turn_changes came back to the model:\n{}",
            requests()
        );
    };
    assert!(
        answer.contains("a.txt"),
        "turn_changes does not list a.txt: {answer}"
    );
    assert!(!answer.contains("b.txt"), "turn_changes lists b.txt: {answer}");
}
