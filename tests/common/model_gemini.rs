//! The Gemini API dialect of the scripted model server (tests/common/model.rs) for Gemini CLI:
//! `POST .../models/M:streamGenerateContent?alt=sse` (the agent loop, SSE `data:` chunks) and
//! the unary `:generateContent` / `:countTokens` calls around it. A compacting plan's tool call
//! reports its `promptTokenCount` (Gemini CLI compresses the chat at its next request once that
//! passes half the model's window) and the compression requests get a summary holding
//! [`SUMMARY`], from which the turn's next tool call is scripted.

use serde_json::{Value, json};

use super::{Plan, SUMMARY};

/// The SSE frames answering one `streamGenerateContent`: a `run_shell_command` call for a new
/// prompt, the final text once the last content is the tool's `functionResponse`; but right
/// after a compression (the history starts from the summary and holds one tool call since),
/// the tool call the script gives for [`SUMMARY`].
pub fn turn(request: &Value, plan: &Plan) -> Vec<String> {
    let empty = Vec::new();
    let contents = request["contents"].as_array().unwrap_or(&empty);
    let declarations = function_declarations(request);
    let compressed = calls_since_summary(contents) == Some(1);
    let answered = declarations.is_empty()
        || (!compressed
            && contents
                .last()
                .is_some_and(|c| parts(c).iter().any(|p| p.get("functionResponse").is_some())));
    let mut tokens = 100;
    let offered: Vec<&str> = declarations.iter().filter_map(|d| d["name"].as_str()).collect();
    let last_call = contents
        .iter()
        .rev()
        .flat_map(parts)
        .find_map(|p| p["functionCall"]["name"].as_str().map(str::to_string));
    let follow_up = answered
        .then(|| plan.follow_up(&offered, last_call.as_deref()))
        .flatten();
    let part = if let Some(name) = follow_up {
        json!({"functionCall": {"name": name, "args": {}}})
    } else if answered {
        json!({"text": "Done."})
    } else {
        let prompt = if compressed {
            SUMMARY.to_string()
        } else {
            last_prompt(contents)
        };
        tokens = plan.input_tokens(&prompt);
        let command = (plan.script)(&prompt);
        let tool = declarations
            .iter()
            .find(|d| d["name"] == "run_shell_command")
            .or_else(|| declarations.first());
        let name = tool
            .and_then(|d| d["name"].as_str())
            .unwrap_or("run_shell_command");
        let schema = tool
            .map(|d| {
                if d["parametersJsonSchema"].is_null() {
                    &d["parameters"]
                } else {
                    &d["parametersJsonSchema"]
                }
            })
            .unwrap_or(&Value::Null);
        json!({"functionCall": {"name": name, "args": super::chat::shell_arguments(schema, &command)}})
    };
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [part]},
        "finishReason": "STOP", "index": 0}], "usageMetadata": usage(tokens), "modelVersion": "mock"});
    vec![format!("data: {chunk}\r\n\r\n")]
}

/// The JSON body answering a unary call: token counts; a summary for the compression's two
/// requests (the snapshot, then its check), whose last content asks for a `<state_snapshot>`;
/// or a short JSON text for the CLI's side requests (next-speaker check, routing), which ask
/// for JSON output.
pub fn unary(path: &str, request: &Value) -> Value {
    if path.ends_with(":countTokens") {
        return json!({"totalTokens": 100});
    }
    let empty = Vec::new();
    let contents = request["contents"].as_array().unwrap_or(&empty);
    let text = if contents
        .last()
        .is_some_and(|c| text_of(c).contains("<state_snapshot>"))
    {
        format!("<state_snapshot>{SUMMARY}</state_snapshot>")
    } else {
        json!({"reasoning": "The task is done.", "next_speaker": "user", "model_choice": "flash"}).to_string()
    };
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
        "finishReason": "STOP", "index": 0}], "usageMetadata": usage(100), "modelVersion": "mock"})
}

/// The `functionResponse` of the call to `…tool` in a request's contents.
pub fn tool_result(request: &Value, tool: &str) -> Option<String> {
    let contents = request["contents"].as_array()?;
    let response = contents.iter().flat_map(parts).find(|p| {
        p["functionResponse"]["name"]
            .as_str()
            .is_some_and(|n| n.ends_with(tool))
    })?;
    Some(response["functionResponse"]["response"].to_string())
}

fn usage(prompt_tokens: u64) -> Value {
    json!({"promptTokenCount": prompt_tokens, "candidatesTokenCount": 10,
        "totalTokenCount": prompt_tokens + 10})
}

/// How many tool calls the model made since the compression summary (a user content holding
/// [`SUMMARY`]), or `None` when the history holds no summary.
fn calls_since_summary(contents: &[Value]) -> Option<usize> {
    let start = contents
        .iter()
        .rposition(|c| c["role"] == "user" && text_of(c).contains(SUMMARY))?;
    let calls = contents[start..]
        .iter()
        .filter(|c| parts(c).iter().any(|p| p.get("functionCall").is_some()))
        .count();
    Some(calls)
}

fn text_of(content: &Value) -> String {
    parts(content)
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn parts(content: &Value) -> Vec<Value> {
    content["parts"].as_array().cloned().unwrap_or_default()
}

fn function_declarations(request: &Value) -> Vec<Value> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .flat_map(|t| t["functionDeclarations"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// The text of the last user content that has text (not a tool's response).
fn last_prompt(contents: &[Value]) -> String {
    contents
        .iter()
        .rev()
        .filter(|c| c["role"] == "user")
        .map(|c| {
            parts(c)
                .iter()
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .find(|texts| !texts.is_empty())
        .map(|texts| texts.join("\n"))
        .unwrap_or_default()
}
