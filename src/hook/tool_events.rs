//! The agents' tool-call events (docs/agents.md, "Tool calls"): each call's start and end,
//! its id, its tool and, for the agents' own edit tools, the files it writes. The payloads
//! and their sources are in tests/fixtures/hooks/README.md.

use super::payload::{Hook, Opencode, PiEvent, Text};
use crate::wire::request::CallPhase;

/// A tool call's start or end as the agent's hook reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallEvent {
    pub phase: CallPhase,
    pub id: Option<String>,
    pub tool: Option<String>,
    /// The files an edit tool names (as the agent gives them: absolute, or relative to `cwd`).
    pub paths: Vec<String>,
}

/// A call from the fields every agent's payload has in some form.
fn call(phase: CallPhase, id: &Text, tool: &Text, paths: Vec<String>) -> ToolCallEvent {
    ToolCallEvent {
        phase,
        id: id.0.clone(),
        tool: tool.0.clone(),
        paths,
    }
}

/// The files an edit tool's input names in these fields (those it has).
fn named(fields: &[&Text]) -> Vec<String> {
    fields.iter().filter_map(|field| field.0.clone()).collect()
}

/// Claude Code's `PreToolUse`, and `PostToolUse` or `PostToolUseFailure` after it: `Write`,
/// `Edit`, `MultiEdit` (`file_path`) and `NotebookEdit` (`notebook_path`) write files [CC].
pub fn claude_code(p: &Hook, phase: CallPhase) -> ToolCallEvent {
    let input = &p.tool_input;
    let paths = match p.tool_name.as_deref() {
        Some("Write" | "Edit" | "MultiEdit" | "NotebookEdit") => {
            named(&[&input.file_path, &input.notebook_path])
        }
        _ => Vec::new(),
    };
    call(phase, &p.tool_use_id, &p.tool_name, paths)
}

/// Codex's `PreToolUse` and `PostToolUse` (no event for a failed call: its window closes with
/// the turn): `apply_patch` names its files in the patch text [X-ap]; its shell tools
/// (`Bash`) name none [X-tool].
pub fn codex(p: &Hook, phase: CallPhase) -> ToolCallEvent {
    let paths = match p.tool_name.as_deref() {
        Some("apply_patch") => patch_paths(p.tool_input.command.as_deref().unwrap_or_default()),
        _ => Vec::new(),
    };
    call(phase, &p.tool_use_id, &p.tool_name, paths)
}

/// Gemini CLI's `BeforeTool` and `AfterTool`: no call id, an end matches the oldest open call
/// of its tool; `write_file` and `replace` write `file_path` (maybe relative) [G-tools].
pub fn gemini_cli(p: &Hook, phase: CallPhase) -> ToolCallEvent {
    let paths = match p.tool_name.as_deref() {
        Some("write_file" | "replace") => named(&[&p.tool_input.file_path]),
        _ => Vec::new(),
    };
    call(phase, &Text::default(), &p.tool_name, paths)
}

/// The envelope of integrations/opencode/filewatchd.js around `tool.execute.before` (the
/// arguments in `output.args`) and `tool.execute.after` (in `input.args`): `edit` and `write`
/// write `filePath`, `apply_patch` names its files in `patchText` [O-tools].
pub fn opencode(p: &Opencode, phase: CallPhase) -> ToolCallEvent {
    let input = &p.input;
    let args = match phase {
        CallPhase::Start => &p.output.args,
        CallPhase::End => &input.args,
    };
    let paths = match input.tool.as_deref() {
        Some("edit" | "write") => named(&[&args.file_path_camel]),
        Some("apply_patch") => patch_paths(args.patch_text.as_deref().unwrap_or_default()),
        _ => Vec::new(),
    };
    call(phase, &input.call_id, &input.tool, paths)
}

/// pi's `tool_call` (awaited before the tool runs; `tool_execution_start` is not) and
/// `tool_execution_end`, which comes for every call, blocked ones too (an end without a start
/// is ignored): `write` and `edit` write `input.path` [P-tools].
pub fn pi(event: &PiEvent, phase: CallPhase) -> ToolCallEvent {
    let paths = match event.tool_name.as_deref() {
        Some("write" | "edit") => named(&[&event.input.path]),
        _ => Vec::new(),
    };
    call(phase, &event.tool_call_id, &event.tool_name, paths)
}

/// The files a patch in the `apply_patch` format names (added, updated, deleted, moved to).
fn patch_paths(patch: &str) -> Vec<String> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    patch
        .lines()
        .filter_map(|line| HEADERS.iter().find_map(|h| line.strip_prefix(h)))
        .map(|path| path.trim().to_string())
        .filter(|path| !path.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::payload::read;
    use serde_json::json;

    #[test]
    fn an_edit_tool_names_its_file_and_a_shell_command_none() {
        let edit = json!({"tool_use_id": "t1", "tool_name": "Edit", "tool_input": {"file_path": "/w/a.rs"}});
        let parsed = claude_code(&read(&edit), CallPhase::Start);
        assert_eq!(parsed.paths, vec!["/w/a.rs".to_string()]);
        assert_eq!(parsed.id.as_deref(), Some("t1"));
        let bash =
            json!({"tool_name": "Bash", "tool_input": {"command": "echo > /w/b.rs", "file_path": "/w/x"}});
        let parsed = claude_code(&read(&bash), CallPhase::End);
        assert!(parsed.paths.is_empty());
        assert_eq!(parsed.tool.as_deref(), Some("Bash"));
    }

    #[test]
    fn a_patch_names_every_file_it_touches() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Move to: src/b.rs\n*** Add File: c.txt\n+new\n*** Delete File: d.txt\n*** End Patch\n";
        assert_eq!(patch_paths(patch), ["src/a.rs", "src/b.rs", "c.txt", "d.txt"]);
        let codex_call =
            json!({"tool_name": "apply_patch", "tool_use_id": "c", "tool_input": {"command": patch}});
        assert_eq!(codex(&read(&codex_call), CallPhase::Start).paths.len(), 4);
    }
}
