//! The OpenAI Chat Completions dialect of the scripted model server (tests/common/model.rs),
//! streamed as SSE `data:` chunks ending in `[DONE]` (opencode's openai-compatible provider,
//! pi's `openai-completions` API).

use std::sync::Mutex;

use serde_json::{Value, json};

use super::Script;

/// A context overflow played in the middle of a turn (`ModelServer::overflow_once`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Overflow {
    Off,
    /// Answer the first tool result with a context-length error.
    Error,
    /// Report a nearly full context with the first tool call.
    Usage,
    /// Overflowed: the next request with tools gets the script's next tool call.
    Compacted,
}

/// The SSE frames answering one `POST .../chat/completions`: a tool call running the prompt's
/// command for a new prompt, the final text once the tool's result is the last message; or
/// the body of an error reply.
pub fn turn(request: &Value, plan: &super::Plan) -> Result<Vec<String>, Value> {
    let script = &plan.script;
    let follow_up = {
        let empty = Vec::new();
        let messages = request["messages"].as_array().unwrap_or(&empty);
        let offered: Vec<&str> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        let answered = messages.last().is_some_and(|m| m["role"] == "tool");
        answered
            .then(|| plan.follow_up(&offered, last_call(messages)))
            .flatten()
    };
    if let Some(name) = follow_up {
        return Ok(tool_call_frames(request, &name, "{}"));
    }
    overflow_turn(request, script, &plan.overflow)
}

/// The name of the tool the last assistant message called.
fn last_call(messages: &[Value]) -> Option<&str> {
    let last = messages.iter().rev().find(|m| m["role"] == "assistant")?;
    last["tool_calls"][0]["function"]["name"].as_str()
}

/// One streamed tool call of `name` with these arguments.
fn tool_call_frames(request: &Value, name: &str, arguments: &str) -> Vec<String> {
    let n = request["messages"].as_array().map_or(0, Vec::len);
    let delta = json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
        "id": format!("call_follow_{n}"), "type": "function",
        "function": {"name": name, "arguments": arguments}}]});
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
            "model": request["model"], "choices": [{"index": 0, "delta": delta,
            "finish_reason": finish}], "usage": {"prompt_tokens": 100, "completion_tokens": 10,
            "total_tokens": 110}})
    };
    [chunk(delta, Value::Null), chunk(json!({}), json!("tool_calls"))]
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .chain(std::iter::once("data: [DONE]\n\n".to_string()))
        .collect()
}

/// The content of the tool message answering the call to `…tool`.
pub fn tool_result(request: &Value, tool: &str) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let calls = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten();
    let call = calls
        .into_iter()
        .find(|c| c["function"]["name"].as_str().is_some_and(|n| n.ends_with(tool)))?;
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call["id"])?;
    Some(match &result["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    })
}

fn overflow_turn(request: &Value, script: &Script, plan: &Mutex<Overflow>) -> Result<Vec<String>, Value> {
    let empty = Vec::new();
    let messages = request["messages"].as_array().unwrap_or(&empty);
    let tools = request["tools"].as_array().unwrap_or(&empty);
    let mut plan = plan
        .lock()
        .map_err(|_| json!({"error": {"message": "poisoned"}}))?;
    let tool_result_last = messages.last().is_some_and(|m| m["role"] == "tool");
    if *plan == Overflow::Error && tool_result_last {
        *plan = Overflow::Compacted;
        return Err(
            json!({"error": {"code": "context_length_exceeded", "type": "invalid_request_error",
            "message": "This model's maximum context length is 1000 tokens. However, your messages resulted in 999999 tokens."}}),
        );
    }
    let continue_after_compaction = *plan == Overflow::Compacted && !tools.is_empty();
    if continue_after_compaction {
        *plan = Overflow::Off;
    }
    // A request without tools (a title, a compaction summary) gets text.
    let answered = !continue_after_compaction && (tools.is_empty() || tool_result_last);
    let mut prompt_tokens = 100;
    if *plan == Overflow::Usage && !answered {
        *plan = Overflow::Compacted;
        prompt_tokens = 127_000;
    }
    let delta = if answered {
        json!({"role": "assistant", "content": "Done."})
    } else {
        let command = script(&last_prompt(messages));
        let (name, arguments) = shell_call(tools, &command);
        json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
            "id": format!("call_{}", messages.len()), "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}}]})
    };
    let finish = if answered { "stop" } else { "tool_calls" };
    let chunk = |delta: Value, finish: Value, usage: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
            "model": request["model"], "choices": [{"index": 0, "delta": delta,
            "finish_reason": finish}], "usage": usage})
    };
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": 10,
        "total_tokens": prompt_tokens + 10});
    Ok([
        chunk(delta, Value::Null, Value::Null),
        chunk(json!({}), json!(finish), usage),
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .chain(std::iter::once("data: [DONE]\n\n".to_string()))
    .collect())
}

/// The text of the last user message (a string, or text parts).
pub fn last_prompt(messages: &[Value]) -> String {
    let Some(content) = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| &m["content"])
    else {
        return String::new();
    };
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The agent's shell tool (`bash`) among `tools` (`{type: function, function: {name,
/// parameters}}`), with arguments filled from its JSON schema.
fn shell_call(tools: &[Value], command: &str) -> (String, Value) {
    let functions: Vec<&Value> = tools.iter().map(|t| &t["function"]).collect();
    let tool = functions
        .iter()
        .find(|f| f["name"] == "bash")
        .or_else(|| functions.first())
        .copied();
    let name = tool
        .and_then(|f| f["name"].as_str())
        .unwrap_or("bash")
        .to_string();
    let parameters = tool.map(|f| &f["parameters"]).unwrap_or(&Value::Null);
    (name, shell_arguments(parameters, command))
}

/// Arguments for a shell tool's JSON schema: `command` gets the command, every other required
/// string property (opencode's `description`) a short text.
pub fn shell_arguments(parameters: &Value, command: &str) -> Value {
    let mut args = serde_json::Map::new();
    args.insert("command".into(), json!(command));
    let required = parameters["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let kind = parameters["properties"][name]["type"]
            .as_str()
            .unwrap_or("string");
        if name != "command" && kind.eq_ignore_ascii_case("string") {
            args.insert(name.into(), json!("Runs the requested command"));
        }
    }
    Value::Object(args)
}
