//! A new prompt's hook starts the daemon when none runs, within the hooks' deadline, and the
//! turn it opens is recorded: the markers hooks queue while the first index runs are applied
//! in order, each at its place among the writes. Opting out, and the home directory, start
//! nothing.

use std::process::Command;

use crate::common::*;

const PROMPT: &str = "Rename fn to fx and update the callers";
const SESSION: &str = "fixture-session-1";

fn prompt_hook(ws: &Workspace, cmd: Command) -> HookRun {
    let run = ws.hook_with(
        cmd,
        "claude-code",
        &hook_fixture("claude-code", "UserPromptSubmit", ws.root()),
    );
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(run.stdout, "", "a hook printed on stdout");
    run
}

fn stop_hook(ws: &Workspace, cmd: Command) -> HookRun {
    let run = ws.hook_with(
        cmd,
        "claude-code",
        &hook_fixture("claude-code", "Stop", ws.root()),
    );
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(run.stdout, "", "a hook printed on stdout");
    run
}

#[test]
fn the_first_prompt_starts_the_daemon_and_its_turn_records_what_follows() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("src/a.rs", "fn a() {}\n");
    ws.write("old.txt", "old\n");
    let run = prompt_hook(&ws, ws.command_autostart());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("started filewatchd for"), "{}", run.stderr);

    let daemon = ws.wait_answering(ws.root());
    assert_eq!(daemons_of(ws.home()), vec![daemon.pid]);
    ws.sh("sed -i 's/fn/fx/' src/a.rs && rm old.txt && echo new > new.txt");
    let run = stop_hook(&ws, ws.command_autostart());
    assert_eq!(run.stderr, "", "the daemon answers now");

    let turn = expect(200, daemon.get(&format!("/v1/sessions/{SESSION}/turns/1")));
    assert_eq!(turn["label"], PROMPT, "{turn:#}");
    assert!(!turn["ended_at"].is_null(), "the turn is still open: {turn:#}");
    assert_eq!(
        changed_paths(&turn),
        set(["src/a.rs", "old.txt", "new.txt"]),
        "{turn:#}"
    );
}

/// While the first index is held (a test knob), the prompt's and the stop's markers are
/// queued; writes before the prompt, in the turn and after the stop each land where they were.
#[test]
fn markers_queued_while_the_first_index_runs_are_applied_in_place() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("a.txt", "one\n");
    let release = ws.state_dir().join("release");
    let pid = ws.spawn_held(&release);
    ws.wait_index_read(ws.root());

    ws.write("before.txt", "outside, before the prompt\n");
    let run = prompt_hook(&ws, ws.command_autostart());
    assert_eq!(run.stderr, "", "queued quietly for the indexing daemon");
    ws.write("a.txt", "two\n");
    ws.write("made.txt", "in the turn\n");
    let run = stop_hook(&ws, ws.command_autostart());
    assert_eq!(run.stderr, "", "queued quietly for the indexing daemon");
    ws.write("after.txt", "outside, after the stop\n");
    assert_eq!(daemons_of(ws.home()), vec![pid], "a hook started a second daemon");

    std::fs::write(&release, "").expect("release the index");
    let daemon = ws.wait_answering(ws.root());
    let turn = expect(200, daemon.get(&format!("/v1/sessions/{SESSION}/turns/1")));
    assert_eq!(turn["label"], PROMPT, "{turn:#}");
    assert!(
        !turn["ended_at"].is_null(),
        "the queued end was not applied: {turn:#}"
    );
    assert_eq!(changed_paths(&turn), set(["a.txt", "made.txt"]), "{turn:#}");
    for outside in ["before.txt", "after.txt"] {
        let history = expect(200, daemon.get(&format!("/v1/history?path={outside}")));
        assert_eq!(latest(&history)["origin"], "outside", "{outside}: {history:#}");
    }
    let queue = ws.home_state_of(ws.root()).expect("state").join("queue");
    assert_eq!(
        std::fs::read_dir(&queue).expect("queue").count(),
        0,
        "markers left in the queue"
    );
}

#[test]
fn two_prompts_at_once_start_one_daemon_and_both_turns_open() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let payload =
        |session: &str| hook_fixture("claude-code", "UserPromptSubmit", ws.root()).replace(SESSION, session);
    let runs: Vec<HookRun> = std::thread::scope(|scope| {
        let hooks: Vec<_> = ["one", "two"]
            .map(|session| {
                let payload = payload(session);
                let ws = &ws;
                scope.spawn(move || ws.hook_with(ws.command_autostart(), "claude-code", &payload))
            })
            .into_iter()
            .collect();
        hooks
            .into_iter()
            .map(|h| h.join().expect("hook thread"))
            .collect()
    });
    for run in &runs {
        assert!(run.status.success() && run.stdout.is_empty(), "{}", run.stderr);
        assert!(run.stderr.lines().count() <= 1, "{}", run.stderr);
    }
    let daemon = ws.wait_answering(ws.root());
    assert_eq!(
        daemons_of(ws.home()),
        vec![daemon.pid],
        "two daemons were started"
    );
    for session in ["one", "two"] {
        let turns = expect(200, daemon.get(&format!("/v1/sessions/{session}/turns")));
        assert_eq!(
            turns["turns"].as_array().map(Vec::len),
            Some(1),
            "{session}: {turns:#}"
        );
    }
}

/// The one line a hook printed when it started nothing, and that nothing was started.
#[track_caller]
fn started_nothing(ws: &Workspace, run: &HookRun, says: &[&str]) {
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    for words in says {
        assert!(run.stderr.contains(words), "{words:?} not in {}", run.stderr);
    }
    assert!(daemons_of(ws.home()).is_empty(), "a daemon was started");
    assert!(ws.answering(ws.root()).is_none(), "a daemon answers");
}

#[test]
fn autostart_is_off_by_config_and_by_environment() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let mut cmd = ws.command_autostart();
    cmd.env("FILEWATCHD_AUTOSTART", "0");
    let run = prompt_hook(&ws, cmd);
    started_nothing(&ws, &run, &["FILEWATCHD_AUTOSTART", "filewatchd start"]);

    ws.write(".filewatchd.toml", "autostart = false\n");
    let run = prompt_hook(&ws, ws.command_autostart());
    started_nothing(&ws, &run, &["autostart = false", "filewatchd start"]);
    // Asked by hand, it starts.
    let out = ws.cli(".", &["start"]);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn hooks_never_start_a_daemon_for_the_home_directory() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let mut cmd = ws.command_autostart();
    cmd.env("HOME", ws.root());
    let run = prompt_hook(&ws, cmd);
    started_nothing(&ws, &run, &["home directory", "filewatchd start --root"]);
}

#[test]
fn a_turn_end_never_starts_a_daemon() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let run = stop_hook(&ws, ws.command_autostart());
    started_nothing(&ws, &run, &["no filewatchd is running"]);
}

#[test]
fn a_workspace_whose_daemon_cannot_start_says_why_and_queues_nothing() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write(".filewatchd.toml", "colour = 1\n");
    let run = prompt_hook(&ws, ws.command_autostart());
    started_nothing(&ws, &run, &["cannot start filewatchd", "colour"]);
    let queue = ws.home_state_of(ws.root()).map(|dir| dir.join("queue"));
    let left = queue
        .and_then(|q| std::fs::read_dir(q).ok())
        .map_or(0, Iterator::count);
    assert_eq!(left, 0, "a marker is left for a daemon that never starts");
}

/// A prompt's hook run from a subdirectory of a git project (the agent `cd`ed into `src/`)
/// starts the daemon for the project's root, not for `src/`.
#[test]
fn a_hook_run_in_a_subdirectory_starts_the_daemon_for_the_project_root() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    std::fs::create_dir_all(ws.path(".git")).expect(".git");
    ws.write("src/a.rs", "fn a() {}\n");
    let run = ws.hook_with(
        ws.command_autostart(),
        "claude-code",
        &hook_fixture("claude-code", "UserPromptSubmit", &ws.path("src")),
    );
    assert!(run.status.success(), "{}", run.stderr);
    let daemon = ws.wait_answering(ws.root());
    assert_eq!(daemons_of(ws.home()), vec![daemon.pid]);
    let status = expect(200, daemon.get("/v1/status"));
    assert_eq!(status["root"], ws.root().to_string_lossy().as_ref(), "{status:#}");
}

fn session_start_hook(ws: &Workspace, cmd: Command, fixture: &str) -> HookRun {
    let run = ws.hook_with(
        cmd,
        "claude-code",
        &hook_fixture("claude-code", fixture, ws.root()),
    );
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(run.stdout, "", "a hook printed on stdout");
    run
}

/// A session's start starts the daemon, so its first index runs while the user
/// types and the first prompt's turn opens at once; a second session start, and the restart
/// after a compaction, start nothing more.
#[test]
fn a_session_start_starts_the_daemon_before_the_first_prompt() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("src/a.rs", "fn a() {}\n");
    let run = session_start_hook(&ws, ws.command_autostart(), "SessionStart-compact");
    started_nothing_quietly(&ws, &run);

    let run = session_start_hook(&ws, ws.command_autostart(), "SessionStart");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("started filewatchd for"), "{}", run.stderr);
    let daemon = ws.wait_answering(ws.root());
    let run = session_start_hook(&ws, ws.command_autostart(), "SessionStart");
    assert_eq!(run.stderr, "", "a daemon runs already");
    assert_eq!(daemons_of(ws.home()), vec![daemon.pid]);
    let sessions = expect(200, daemon.get("/v1/sessions"));
    assert_eq!(
        sessions["sessions"],
        serde_json::json!([]),
        "a session start opened a turn: {sessions:#}"
    );

    let run = prompt_hook(&ws, ws.command_autostart());
    assert_eq!(run.stderr, "", "the first prompt found its daemon answering");
    ws.write("src/a.rs", "fn b() {}\n");
    stop_hook(&ws, ws.command_autostart());
    let turn = expect(200, daemon.get(&format!("/v1/sessions/{SESSION}/turns/1")));
    assert_eq!(turn["label"], PROMPT, "{turn:#}");
    assert_eq!(changed_paths(&turn), set(["src/a.rs"]), "{turn:#}");
}

#[track_caller]
fn started_nothing_quietly(ws: &Workspace, run: &HookRun) {
    assert_eq!(run.stderr, "", "a compaction's session start said something");
    assert!(daemons_of(ws.home()).is_empty(), "a daemon was started");
}

#[test]
fn a_session_start_where_autostart_is_off_starts_nothing_and_says_why() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let mut cmd = ws.command_autostart();
    cmd.env("FILEWATCHD_AUTOSTART", "0");
    let run = session_start_hook(&ws, cmd, "SessionStart");
    started_nothing(&ws, &run, &["FILEWATCHD_AUTOSTART", "filewatchd start"]);
}

/// A hook starts a daemon only where the user works: a payload's `cwd` that is no project of
/// the user's (`/etc`, a bare directory) starts nothing, and the line says how to start one.
/// What the payload names is printed escaped: its escape sequences never reach the terminal.
#[test]
fn hooks_start_a_daemon_only_in_a_project_and_print_the_payloads_cwd_escaped() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    let bare = ws.root().join("scratch\u{1b}]0;pwned\u{7}");
    std::fs::create_dir(&bare).unwrap();
    let mut cmd = ws.command_autostart();
    std::fs::remove_dir(ws.root().join(".claude")).unwrap();
    cmd.current_dir(&bare);
    let quoted = serde_json::to_string(&*bare.to_string_lossy()).unwrap();
    let payload = hook_fixture("claude-code", "UserPromptSubmit", std::path::Path::new("@CWD@"))
        .replace("@CWD@", &quoted[1..quoted.len() - 1]);
    let run = run_hook(cmd, "claude-code", &[], &payload);
    assert!(run.status.success(), "{}", run.stderr);
    started_nothing(&ws, &run, &["only in a project of yours", "filewatchd start"]);
    assert!(
        !run.stderr.contains('\u{1b}') && !run.stderr.contains('\u{7}'),
        "{:?}",
        run.stderr
    );
    assert!(run.stderr.contains("\\u{1b}]0;pwned\\u{7}"), "{:?}", run.stderr);

    let payload = hook_fixture("claude-code", "UserPromptSubmit", std::path::Path::new("/etc"));
    let mut cmd = ws.command_autostart();
    std::fs::remove_dir(ws.root().join(".claude")).unwrap();
    cmd.current_dir("/etc");
    let run = run_hook(cmd, "claude-code", &[], &payload);
    assert!(run.status.success(), "{}", run.stderr);
    assert!(
        run.stderr.contains("only in a project of yours"),
        "{}",
        run.stderr
    );
    assert!(daemons_of(ws.home()).is_empty(), "a daemon was started for /etc");
}
