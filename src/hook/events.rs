//! Each agent's hook payload, mapped to what filewatchd does (docs/agents.md). The
//! payloads and their sources are in tests/fixtures/hooks/README.md; each mapping cites the
//! tag of its source there.

use std::path::PathBuf;

use serde_json::Value;

use super::payload::{CodexNotify, Hook, Loose, Opencode, Pi, Text, read};
use super::tool_events::{self, ToolCallEvent};
use crate::wire::request::CallPhase;

/// The agents with a hook adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    ClaudeCode,
    GeminiCli,
    Codex,
    Opencode,
    Pi,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::GeminiCli => "gemini-cli",
            Self::Codex => "codex",
            Self::Opencode => "opencode",
            Self::Pi => "pi",
        }
    }
}

/// What one hook event asks of the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A prompt was submitted: start a turn (ending the session's open one).
    StartTurn {
        label: Option<String>,
        turn_ref: Option<String>,
    },
    /// The agent finished responding: end the open turn.
    EndTurn,
    /// Codex `notify` fires only when a turn completes: end the open turn (labelled with the
    /// prompt, now known) and open the next one at once, since its start is never signalled.
    CompleteAndContinue {
        label: Option<String>,
        next_ref: Option<String>,
    },
    /// The session ended: close a turn it left open (Claude Code's `Stop` does not fire on
    /// an interrupt). Session *starts* (startup, resume, clear, compact) never end a turn:
    /// Claude Code and Codex fire `SessionStart` (source `compact`) inside a turn after an
    /// auto-compaction, and only a new prompt starts the next turn.
    CloseStale,
    /// A session started (a new one, a resume, a clear; not the restart after a compaction):
    /// start the daemon when none runs, so the first index runs while the user types and the
    /// first prompt's turn opens at once. It opens no turn and ends none.
    StartDaemon,
    /// One of the agent's tool calls starts or ends: the window its writes are attributed by
    /// (`crate::capture::owners`). Never starts a daemon, never queued.
    ToolCall(ToolCallEvent),
    Nothing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    pub session: String,
    /// Where the agent works: the daemon is found from here.
    pub cwd: Option<PathBuf>,
    pub action: Action,
}

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("the hook payload has no {0}")]
    Missing(&'static str),
}

/// Labels are prompts; a very long one is cut (the full text stays with the agent).
const LABEL_MAX: usize = 1000;

pub fn parse(agent: Agent, payload: &Value) -> Result<HookEvent, HookError> {
    match agent {
        Agent::ClaudeCode => claude_code(&read(payload)),
        Agent::GeminiCli => gemini_cli(&read(payload)),
        Agent::Codex => {
            let notify: CodexNotify = read(payload);
            match notify.kind.0 {
                Some(_) => codex_notify(&notify),
                None => codex(&read(payload)),
            }
        }
        Agent::Opencode => opencode(&read(payload)),
        Agent::Pi => pi(&read(payload)),
    }
}

fn label(prompt: Option<String>) -> Option<String> {
    prompt
        .map(|p| p.trim().chars().take(LABEL_MAX).collect::<String>())
        .filter(|p| !p.is_empty())
}

fn start(prompt: &Text, turn_ref: Option<String>) -> Action {
    Action::StartTurn {
        label: label(prompt.0.clone()),
        turn_ref,
    }
}

/// `session_id` / `cwd` / `hook_event_name` on stdin [CC].
fn claude_code(p: &Hook) -> Result<HookEvent, HookError> {
    let action = match p.hook_event_name.as_deref() {
        Some("UserPromptSubmit") => start(&p.prompt, None),
        Some("Stop" | "StopFailure") => Action::EndTurn,
        Some("SessionEnd") => Action::CloseStale,
        Some("SessionStart") => session_start(p),
        Some("PreToolUse") => Action::ToolCall(tool_events::claude_code(p, CallPhase::Start)),
        Some("PostToolUse" | "PostToolUseFailure") => {
            Action::ToolCall(tool_events::claude_code(p, CallPhase::End))
        }
        // PreCompact, PostCompact: the turn goes on. A subagent's writes belong to the
        // parent's turn.
        _ => Action::Nothing,
    };
    event(&p.session_id, "session_id", &p.cwd, action)
}

/// Same base fields as Claude Code; `BeforeAgent` carries the prompt [G-typ, G-evt].
fn gemini_cli(p: &Hook) -> Result<HookEvent, HookError> {
    let action = match p.hook_event_name.as_deref() {
        Some("BeforeAgent") => start(&p.prompt, None),
        Some("AfterAgent") => Action::EndTurn,
        Some("SessionEnd") => Action::CloseStale,
        Some("SessionStart") => Action::StartDaemon,
        Some("BeforeTool") => Action::ToolCall(tool_events::gemini_cli(p, CallPhase::Start)),
        Some("AfterTool") => Action::ToolCall(tool_events::gemini_cli(p, CallPhase::End)),
        // PreCompress (auto, inside a turn): the turn goes on.
        _ => Action::Nothing,
    };
    event(&p.session_id, "session_id", &p.cwd, action)
}

/// Codex lifecycle hooks: a turn's start and end carry the same `turn_id` [X-sch, X-ev].
fn codex(p: &Hook) -> Result<HookEvent, HookError> {
    let action = match p.hook_event_name.as_deref() {
        Some("UserPromptSubmit") => start(&p.prompt, p.turn_id.0.clone()),
        Some("Stop" | "StopFailure" | "Interrupt") => Action::EndTurn,
        Some("SessionStart") => session_start(p),
        Some("PreToolUse") => Action::ToolCall(tool_events::codex(p, CallPhase::Start)),
        Some("PostToolUse") => Action::ToolCall(tool_events::codex(p, CallPhase::End)),
        // PreCompact and PostCompact come inside a turn after an auto-compaction, with the
        // turn's own turn_id: the turn goes on.
        _ => Action::Nothing,
    };
    event(&p.session_id, "session_id", &p.cwd, action)
}

/// Codex legacy `notify`: `agent-turn-complete` with `thread-id`, `turn-id`, `cwd` and
/// `input-messages`, as the last argv element [X-notify]. `input-messages` lists every prompt
/// of the thread so far (a resumed thread repeats the earlier ones): the turn's own prompt is
/// the last.
fn codex_notify(p: &CodexNotify) -> Result<HookEvent, HookError> {
    let prompt = p.input_messages.iter().rev().find_map(Value::as_str);
    let action = match p.kind.as_ref().and_then(Value::as_str) {
        Some("agent-turn-complete") => Action::CompleteAndContinue {
            label: label(prompt.map(str::to_string)),
            next_ref: None,
        },
        _ => Action::Nothing,
    };
    event(&p.thread_id, "thread-id", &p.cwd, action)
}

/// The envelope of integrations/opencode/filewatchd.js: `{directory, event}` from the `event`
/// hook, `{hook: "chat.message", directory, input, output}` from `chat.message` [O-plg, O-sdk].
fn opencode(p: &Opencode) -> Result<HookEvent, HookError> {
    let hook = match p.hook.as_deref() {
        Some("tool.execute.before") => Some(Action::ToolCall(tool_events::opencode(p, CallPhase::Start))),
        Some("tool.execute.after") => Some(Action::ToolCall(tool_events::opencode(p, CallPhase::End))),
        Some("chat.message") => {
            let texts = p
                .output
                .parts
                .iter()
                .filter(|part| part.kind.as_deref() == Some("text"));
            let prompt: Vec<&str> = texts.filter_map(|part| part.text.as_deref()).collect();
            Some(start(&Loose(Some(prompt.join("\n"))), None))
        }
        _ => None,
    };
    if let Some(action) = hook {
        return event(&p.input.session_id, "input.sessionID", &p.directory, action);
    }
    let props = &p.event.properties;
    let (session, action) = match p.event.kind.as_deref() {
        Some("session.status") if props.status.kind.as_deref() == Some("idle") => {
            (props.session_id.as_deref(), Action::EndTurn)
        }
        Some("session.idle") => (props.session_id.as_deref(), Action::EndTurn),
        Some("session.deleted") => (props.info.id.as_deref(), Action::CloseStale),
        Some("session.created") => (props.info.id.as_deref(), Action::StartDaemon),
        // session.compacted, the synthetic "continue" user message an
        // auto-compaction adds (message.updated): the turn goes on until the session is idle.
        _ => (props.session_id.as_deref(), Action::Nothing),
    };
    let session = match (session, &action) {
        (Some(session), _) => session,
        // Nothing to do: which session it was does not matter.
        (None, Action::Nothing) => "",
        (None, _) => {
            return Err(HookError::Missing(
                "session id (event.properties.sessionID, or info.id)",
            ));
        }
    };
    Ok(HookEvent {
        session: session_name(session),
        cwd: p.directory.0.clone().map(PathBuf::from),
        action,
    })
}

/// The envelope of integrations/pi/filewatchd.ts: `{session_id, cwd, event: {type, prompt?}}`
/// [P-doc, P-typ].
fn pi(p: &Pi) -> Result<HookEvent, HookError> {
    let what = &p.event;
    let action = match what.kind.as_deref() {
        Some("before_agent_start") => start(&what.prompt, None),
        Some("agent_end" | "agent_settled") => Action::EndTurn,
        Some("session_shutdown") => Action::CloseStale,
        // startup, reload, new, resume, fork: none of them inside a turn.
        Some("session_start") => Action::StartDaemon,
        Some("tool_call") => Action::ToolCall(tool_events::pi(what, CallPhase::Start)),
        Some("tool_execution_end") => Action::ToolCall(tool_events::pi(what, CallPhase::End)),
        _ => Action::Nothing,
    };
    event(&p.session_id, "session_id", &p.cwd, action)
}

/// Claude Code's and Codex's `SessionStart`: source `compact` comes inside a turn after an
/// auto-compaction (the daemon runs, the turn goes on); any other source starts a session.
fn session_start(p: &Hook) -> Action {
    match p.source.as_deref() {
        Some("compact") => Action::Nothing,
        _ => Action::StartDaemon,
    }
}

/// The event in `session` (its field named `field`, for the error when it has none).
fn event(session: &Text, field: &'static str, cwd: &Text, action: Action) -> Result<HookEvent, HookError> {
    let session = session.as_deref().ok_or(HookError::Missing(field))?;
    Ok(HookEvent {
        session: session_name(session),
        cwd: cwd.0.clone().map(PathBuf::from),
        action,
    })
}

/// An agent's session id as a filewatchd session name: 1 to 128 of `A-Za-z0-9._:-`, anything
/// else replaced by `-`.
pub fn session_name(id: &str) -> String {
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._:-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(128)
        .collect();
    if cleaned.is_empty() {
        "agent".to_string()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(agent: &str, name: &str) -> Value {
        let path = format!(
            "{}/tests/fixtures/hooks/{agent}/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn action(agent: Agent, dir: &str, name: &str) -> Action {
        parse(agent, &fixture(dir, name)).expect("parses").action
    }

    const PROMPT: &str = "Rename fn to fx and update the callers";

    #[test]
    fn every_fixture_maps_to_its_action() {
        let started = Action::StartTurn {
            label: Some(PROMPT.into()),
            turn_ref: None,
        };
        assert_eq!(
            action(Agent::ClaudeCode, "claude-code", "UserPromptSubmit"),
            started
        );
        assert_eq!(action(Agent::ClaudeCode, "claude-code", "Stop"), Action::EndTurn);
        assert_eq!(
            action(Agent::ClaudeCode, "claude-code", "StopFailure"),
            Action::EndTurn
        );
        assert_eq!(
            action(Agent::ClaudeCode, "claude-code", "SubagentStop"),
            Action::Nothing
        );
        assert_eq!(
            action(Agent::ClaudeCode, "claude-code", "SessionEnd"),
            Action::CloseStale
        );
        // Compaction, resume and clear never end a turn.
        for (agent, dir, name) in [
            (Agent::ClaudeCode, "claude-code", "SessionStart-compact"),
            (Agent::ClaudeCode, "claude-code", "PreCompact"),
            (Agent::ClaudeCode, "claude-code", "PostCompact"),
            (Agent::Codex, "codex", "SessionStart-compact"),
            (Agent::Codex, "codex", "PreCompact"),
            (Agent::Codex, "codex", "PostCompact"),
            (Agent::GeminiCli, "gemini-cli", "PreCompress"),
        ] {
            assert_eq!(action(agent, dir, name), Action::Nothing, "{dir} {name}");
        }
        // A session's start starts the daemon, so its first index runs while the user types.
        for (agent, dir, name) in [
            (Agent::ClaudeCode, "claude-code", "SessionStart"),
            (Agent::Codex, "codex", "SessionStart"),
            (Agent::GeminiCli, "gemini-cli", "SessionStart"),
        ] {
            assert_eq!(action(agent, dir, name), Action::StartDaemon, "{dir} {name}");
        }
        // The plugins' envelopes around the opencode and pi events.
        let created = serde_json::json!({"directory": "/w", "event": fixture("opencode", "session.created")});
        let pi_start =
            serde_json::json!({"session_id": "s", "cwd": "/w", "event": fixture("pi", "session_start")});
        for (agent, payload) in [(Agent::Opencode, created), (Agent::Pi, pi_start)] {
            let parsed = parse(agent, &payload).expect("parses");
            assert_eq!(parsed.action, Action::StartDaemon, "{}", agent.name());
        }
        assert_eq!(action(Agent::GeminiCli, "gemini-cli", "BeforeAgent"), started);
        assert_eq!(
            action(Agent::GeminiCli, "gemini-cli", "AfterAgent"),
            Action::EndTurn
        );
        let codex_start = Action::StartTurn {
            label: Some(PROMPT.into()),
            turn_ref: Some("fixture-turn-1".into()),
        };
        assert_eq!(action(Agent::Codex, "codex", "UserPromptSubmit"), codex_start);
        assert_eq!(action(Agent::Codex, "codex", "Stop"), Action::EndTurn);
        assert_eq!(action(Agent::Codex, "codex", "SubagentStop"), Action::Nothing);
        let notify = Action::CompleteAndContinue {
            label: Some(PROMPT.into()),
            next_ref: None,
        };
        assert_eq!(
            action(Agent::Codex, "codex", "notify-agent-turn-complete"),
            notify
        );
    }

    #[test]
    fn session_ids_become_valid_names() {
        assert_eq!(session_name("ses_01J/abc def"), "ses_01J-abc-def");
        assert_eq!(session_name(""), "agent");
        assert_eq!(session_name(&"x".repeat(300)).len(), 128);
    }
}
