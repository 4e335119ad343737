//! `filewatchd hook <agent>`: one agent hook event in, one turn marker out; a session's start
//! or a new prompt with no daemon running starts one (`autostart`). It never hurts the agent: whatever goes wrong
//! (no daemon, a slow or refusing one, a payload it does not know), it prints nothing on
//! stdout, one line on stderr, and exits 0 within 2 s.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::de::IgnoredAny;
use serde_json::Value;

use super::agents;
use super::autostart::{self, Reached};
use super::events::{Action, Agent, HookEvent, parse};
use super::tool_events::ToolCallEvent;
use crate::client::{ApiFailure, Client};
use crate::escape;
use crate::wire::request::{ToolCall, TurnEnd, TurnStart};

/// Every request of a hook, and a daemon it starts, together stay under the agents' patience
/// (and our promise).
const BUDGET: Duration = Duration::from_millis(1500);
/// A payload carries a tool's input: Claude Code's `Write` the whole file it writes. A file of
/// up to about half this still gets its tool call reported.
const PAYLOAD_MAX: u64 = 64 * 1024 * 1024;

/// Runs one hook event. `args` are the arguments after the agent's name (Codex `notify`
/// appends its JSON there).
pub fn run(agent: Agent, args: &[String], state_dir: Option<&Path>) -> ExitCode {
    let said = match handle(agent, args, state_dir) {
        Ok(note) => note.map(|note| one_line(&note)),
        Err(message) => Some(format!(
            "{} (the agent goes on; this turn is not recorded)",
            one_line(&message)
        )),
    };
    if let Some(said) = said {
        eprintln!("filewatchd hook {}: {}", agent.name(), escape::text(&said));
    }
    ExitCode::SUCCESS
}

/// A message as one line: one that spans lines (a TOML error shows the line it failed on)
/// keeps its first line and its last.
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match lines.as_slice() {
        [] => String::new(),
        [only] => only.to_string(),
        [first, .., last] => format!("{first}: {last}"),
    }
}

/// What the hook did, and the one line it has to say, if any.
fn handle(agent: Agent, args: &[String], state_dir: Option<&Path>) -> Result<Option<String>, String> {
    let until = Instant::now() + BUDGET;
    let payload = read_payload(args)?;
    let event = parse(agent, &payload).map_err(|e| e.to_string())?;
    if event.action == Action::Nothing {
        return Ok(None);
    }
    if event.action == Action::StartDaemon {
        return autostart::start_early(&event, state_dir, until);
    }
    if let Action::ToolCall(call) = &event.action {
        return tool_call(&event, call, state_dir, until);
    }
    let said = autostart::reach(agent, &event, state_dir, until).and_then(|reached| match reached {
        Reached::Answering(client) => apply(&client, agent, &event)
            .map(|()| None)
            .map_err(|e| format!("{e:#}")),
        Reached::Queued { note } => Ok(note),
    });
    // The agent process reported the session, whether or not the daemon answered in time (a
    // daemon slow under load still takes the request): the MCP server the same agent process
    // runs can find it. Only beside an existing state directory (`agents::record`).
    if let Some(dir) = autostart::state_dir_of(&event, state_dir) {
        agents::record(&dir, agent.name(), &event.session, crate::model::now_ms());
    }
    said
}

/// The JSON payload: the last argument when it is JSON (Codex `notify`), else stdin.
fn read_payload(args: &[String]) -> Result<Value, String> {
    if let Some(last) = args.last().filter(|a| a.trim_start().starts_with('{')) {
        return serde_json::from_str(last).map_err(|e| format!("the payload argument is not JSON: {e}"));
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err("no hook payload: the agent passes its JSON on stdin".into());
    }
    let mut text = String::new();
    stdin
        .lock()
        .take(PAYLOAD_MAX)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the payload: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("the payload on stdin is not JSON: {e}"))
}

fn apply(client: &Client, agent: Agent, event: &HookEvent) -> anyhow::Result<()> {
    let session = &event.session;
    let start = |label: &Option<String>, turn_ref: &Option<String>| {
        let body = TurnStart {
            label: label.clone(),
            turn_ref: turn_ref.clone(),
            agent: Some(agent.name().to_string()),
        };
        client.post_as::<IgnoredAny>(&format!("/v1/sessions/{session}/turns"), &body)
    };
    match &event.action {
        Action::StartTurn { label, turn_ref } => drop(start(label, turn_ref)?),
        Action::EndTurn | Action::CloseStale => end_open_turn(client, session, None)?,
        Action::CompleteAndContinue { label, next_ref } => {
            end_open_turn(client, session, label.as_deref())?;
            start(&None, next_ref)?;
        }
        Action::StartDaemon | Action::ToolCall(_) | Action::Nothing => {}
    }
    Ok(())
}

/// Reports a tool call to the daemon that answers now; with none running (or one starting),
/// nothing: the call's writes fall to the turn-wide rule.
fn tool_call(
    event: &HookEvent,
    call: &ToolCallEvent,
    state_dir: Option<&Path>,
    until: Instant,
) -> Result<Option<String>, String> {
    // A failure is said as what it is: the turn goes on; only this call's window is missed.
    let missed = |err: String| {
        Ok(Some(format!(
            "{err} (the agent goes on; this tool call is not recorded)"
        )))
    };
    let client = match autostart::reach_answering(event, state_dir, until) {
        Ok(Some(client)) => client,
        Ok(None) => return Ok(None),
        Err(err) => return missed(err),
    };
    let absolute = |path: &String| match &event.cwd {
        Some(cwd) => cwd.join(path).to_string_lossy().into_owned(),
        None => path.clone(),
    };
    let body = ToolCall {
        phase: Some(call.phase),
        id: call.id.clone(),
        tool: call.tool.clone(),
        paths: call.paths.iter().map(absolute).collect(),
        pids: crate::fs::procs::agent_ancestry(std::process::id(), 64),
    };
    let session = &event.session;
    match client.post_as::<IgnoredAny>(&format!("/v1/sessions/{session}/tool-calls"), &body) {
        Ok(_) => Ok(None),
        Err(err) => missed(format!("{err:#}")),
    }
}

/// Ends the session's open turn; no open turn (or no session yet) is not an error.
fn end_open_turn(client: &Client, session: &str, label: Option<&str>) -> anyhow::Result<()> {
    let body = TurnEnd {
        label: label.map(str::to_string),
    };
    match client.post_as::<IgnoredAny>(&format!("/v1/sessions/{session}/turns/current/end"), &body) {
        Ok(_) => Ok(()),
        Err(err) => match err.downcast::<ApiFailure>() {
            Ok(failure) if matches!(failure.status, 404 | 409) => Ok(()),
            Ok(failure) => Err(failure.into()),
            Err(err) => Err(err),
        },
    }
}
