//! The Gemini API dialect of the scripted model server (tests/common/model.rs) for Gemini CLI:
//! `POST .../models/M:streamGenerateContent?alt=sse` (the agent loop, SSE `data:` chunks) and
//! the unary `:generateContent` / `:countTokens` calls around it.

use serde_json::{Value, json};

use super::Script;

/// The SSE frames answering one `streamGenerateContent`: a `run_shell_command` call for a new
/// prompt, the final text once the last content is the tool's `functionResponse`.
pub fn turn(request: &Value, script: &Script) -> Vec<String> {
    let empty = Vec::new();
    let contents = request["contents"].as_array().unwrap_or(&empty);
    let declarations = function_declarations(request);
    let answered = declarations.is_empty()
        || contents
            .last()
            .is_some_and(|c| parts(c).iter().any(|p| p.get("functionResponse").is_some()));
    let part = if answered {
        json!({"text": "Done."})
    } else {
        let command = script(&last_prompt(contents));
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
        "finishReason": "STOP", "index": 0}], "usageMetadata": usage(), "modelVersion": "mock"});
    vec![format!("data: {chunk}\r\n\r\n")]
}

/// The JSON body answering a unary call: token counts, or a short JSON text for the CLI's
/// side requests (next-speaker check, routing), which ask for JSON output.
pub fn unary(path: &str, _request: &Value) -> Value {
    if path.ends_with(":countTokens") {
        return json!({"totalTokens": 100});
    }
    let text = json!({"reasoning": "The task is done.", "next_speaker": "user",
        "model_choice": "flash"});
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text.to_string()}]},
        "finishReason": "STOP", "index": 0}], "usageMetadata": usage(), "modelVersion": "mock"})
}

fn usage() -> Value {
    json!({"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110})
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
