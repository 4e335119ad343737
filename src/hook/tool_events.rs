//! The agents' tool-call events (docs/agents.md, "Tool calls"): each call's start and end,
//! its id, its tool and, for the agents' own edit tools, the files it writes. The payloads
//! and their sources are in tests/fixtures/hooks/README.md.

use serde_json::Value;

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

/// The tools of one agent that write the files their input names, and the input fields that
/// name them.
struct EditTools {
    tools: &'static [&'static str],
    fields: &'static [&'static str],
}

/// Claude Code's `Write`, `Edit`, `MultiEdit` (`file_path`) and `NotebookEdit`
/// (`notebook_path`) [CC].
const CLAUDE_CODE: EditTools = EditTools {
    tools: &["Write", "Edit", "MultiEdit", "NotebookEdit"],
    fields: &["file_path", "notebook_path"],
};

/// Codex's `apply_patch` names its files in the patch text [X-ap]; its shell tools (`Bash`)
/// name none.
const CODEX: EditTools = EditTools {
    tools: &[],
    fields: &[],
};

/// Gemini CLI's `write_file` and `replace` (`file_path`, maybe relative) [G-tools].
const GEMINI_CLI: EditTools = EditTools {
    tools: &["write_file", "replace"],
    fields: &["file_path"],
};

/// opencode's `edit` and `write` (`filePath`); `apply_patch` names its files in `patchText`
/// [O-tools].
const OPENCODE: EditTools = EditTools {
    tools: &["edit", "write"],
    fields: &["filePath"],
};

/// pi's `write` and `edit` (`input.path`) [P-tools].
const PI: EditTools = EditTools {
    tools: &["write", "edit"],
    fields: &["path"],
};

/// A call from the fields every agent's payload has in some form.
fn call(
    phase: CallPhase,
    id: Option<&Value>,
    tool: Option<&Value>,
    input: &Value,
    edits: &EditTools,
) -> ToolCallEvent {
    let tool = tool.and_then(Value::as_str).map(str::to_string);
    let is_edit = tool.as_deref().is_some_and(|t| edits.tools.contains(&t));
    let paths = if is_edit {
        edits
            .fields
            .iter()
            .filter_map(|field| input.get(*field).and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    } else {
        Vec::new()
    };
    ToolCallEvent {
        phase,
        id: id.and_then(Value::as_str).map(str::to_string),
        tool,
        paths,
    }
}

/// Claude Code's `PreToolUse`, and `PostToolUse` or `PostToolUseFailure` after it [CC].
pub fn claude_code(p: &Value, phase: CallPhase) -> ToolCallEvent {
    call(
        phase,
        p.get("tool_use_id"),
        p.get("tool_name"),
        &p["tool_input"],
        &CLAUDE_CODE,
    )
}

/// Codex's `PreToolUse` and `PostToolUse` (no event for a failed call: its window closes with
/// the turn) [X-tool].
pub fn codex(p: &Value, phase: CallPhase) -> ToolCallEvent {
    let mut event = call(
        phase,
        p.get("tool_use_id"),
        p.get("tool_name"),
        &p["tool_input"],
        &CODEX,
    );
    if event.tool.as_deref() == Some("apply_patch") {
        event.paths = patch_paths(p["tool_input"]["command"].as_str().unwrap_or_default());
    }
    event
}

/// Gemini CLI's `BeforeTool` and `AfterTool`: no call id, an end matches the oldest open call
/// of its tool [G-tools].
pub fn gemini_cli(p: &Value, phase: CallPhase) -> ToolCallEvent {
    call(phase, None, p.get("tool_name"), &p["tool_input"], &GEMINI_CLI)
}

/// The envelope of integrations/opencode/filewatchd.js around `tool.execute.before` (the
/// arguments in `output.args`) and `tool.execute.after` (in `input.args`) [O-tools].
pub fn opencode(p: &Value, phase: CallPhase) -> ToolCallEvent {
    let input = &p["input"];
    let args = match phase {
        CallPhase::Start => &p["output"]["args"],
        CallPhase::End => &input["args"],
    };
    let mut event = call(phase, input.get("callID"), input.get("tool"), args, &OPENCODE);
    if event.tool.as_deref() == Some("apply_patch") {
        event.paths = patch_paths(args["patchText"].as_str().unwrap_or_default());
    }
    event
}

/// pi's `tool_call` (awaited before the tool runs; `tool_execution_start` is not) and
/// `tool_execution_end`, which comes for every call, blocked ones too (an end without a start
/// is ignored) [P-tools].
pub fn pi(event: &Value, phase: CallPhase) -> ToolCallEvent {
    call(
        phase,
        event.get("toolCallId"),
        event.get("toolName"),
        &event["input"],
        &PI,
    )
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
    use serde_json::json;

    #[test]
    fn an_edit_tool_names_its_file_and_a_shell_command_none() {
        let edit = json!({"tool_use_id": "t1", "tool_name": "Edit", "tool_input": {"file_path": "/w/a.rs"}});
        let parsed = claude_code(&edit, CallPhase::Start);
        assert_eq!(parsed.paths, vec!["/w/a.rs".to_string()]);
        assert_eq!(parsed.id.as_deref(), Some("t1"));
        let bash =
            json!({"tool_name": "Bash", "tool_input": {"command": "echo > /w/b.rs", "file_path": "/w/x"}});
        let parsed = claude_code(&bash, CallPhase::End);
        assert!(parsed.paths.is_empty());
        assert_eq!(parsed.tool.as_deref(), Some("Bash"));
    }

    #[test]
    fn a_patch_names_every_file_it_touches() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Move to: src/b.rs\n*** Add File: c.txt\n+new\n*** Delete File: d.txt\n*** End Patch\n";
        assert_eq!(patch_paths(patch), ["src/a.rs", "src/b.rs", "c.txt", "d.txt"]);
        let codex_call =
            json!({"tool_name": "apply_patch", "tool_use_id": "c", "tool_input": {"command": patch}});
        assert_eq!(codex(&codex_call, CallPhase::Start).paths.len(), 4);
    }
}
