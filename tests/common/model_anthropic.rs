//! The Anthropic Messages API dialect of the scripted model server (Claude Code): `POST
//! /v1/messages` answered with SSE (`message_start`, `content_block_start` / `_delta` /
//! `_stop`, `message_delta`, `message_stop`), or one JSON message when the request does not
//! stream. A new prompt gets a `tool_use` of the Bash tool running the script's command; once
//! its `tool_result` is back, a final text. Claude Code's compaction request (its summary
//! prompt) gets a summary holding [`SUMMARY`](super::SUMMARY).

use std::io::Write;
use std::net::TcpStream;

use serde_json::{Value, json};

use super::Plan;

/// The start of Claude Code's compaction prompt (the bundle's compact prompt text).
const COMPACT_PROMPT: &str = "Your task is to create a detailed summary of the conversation so far";

pub fn serve_messages(stream: &mut TcpStream, request: &Value, plan: &Plan) {
    let (content, stop, input_tokens) = answer(request, plan);
    if request["stream"] != true {
        let body = json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": request["model"], "content": content, "stop_reason": stop,
            "stop_sequence": null, "usage": usage(input_tokens)})
        .to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    );
    for event in events(request, &content, stop, input_tokens) {
        let kind = event["type"].as_str().unwrap_or("message").to_string();
        let _ = write!(stream, "event: {kind}\ndata: {event}\n\n");
    }
    let _ = stream.flush();
}

fn usage(input_tokens: u64) -> Value {
    json!({"input_tokens": input_tokens, "output_tokens": 10,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

/// The content blocks, stop reason and reported input tokens of the answer to `request`.
fn answer(request: &Value, plan: &Plan) -> (Vec<Value>, &'static str, u64) {
    let blocks = trailing_user_blocks(request);
    let last = texts(&blocks);
    let text = |t: &str| vec![json!({"type": "text", "text": t})];
    if last.contains(COMPACT_PROMPT) {
        let summary = format!("<analysis>ok</analysis>\n<summary>{}</summary>", plan.summarize());
        return (text(&summary), "end_turn", 100);
    }
    let offers_bash = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"));
    if !offers_bash {
        return (text("Done."), "end_turn", 100);
    }
    let prompt = plan.prompt_for(last);
    if prompt != super::SUMMARY && blocks.iter().any(|b| b["type"] == "tool_result") {
        let offered: Vec<&str> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        if let Some(name) = plan.follow_up(&offered, last_call(request).as_deref()) {
            let id = format!(
                "toolu_follow_{}",
                request["messages"].as_array().map_or(0, Vec::len)
            );
            let tool = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
            return (vec![tool], "tool_use", 100);
        }
        return (text("Done."), "end_turn", 100);
    }
    let command = (plan.script)(&prompt);
    let id = format!("toolu_{}", request["messages"].as_array().map_or(0, Vec::len));
    let tool = json!({"type": "tool_use", "id": id, "name": "Bash",
        "input": {"command": command, "description": "Run the scripted command"}});
    (vec![tool], "tool_use", plan.input_tokens(&prompt))
}

/// The name of the tool the last assistant message called.
fn last_call(request: &Value) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let last = messages.iter().rev().find(|m| m["role"] == "assistant")?;
    let blocks = last["content"].as_array()?;
    let tool = blocks.iter().rev().find(|b| b["type"] == "tool_use")?;
    tool["name"].as_str().map(str::to_string)
}

/// The text of the `tool_result` answering the call to `…tool` in a request's messages.
pub fn tool_result(request: &Value, tool: &str) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let blocks: Vec<&Value> = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .collect();
    let call = blocks
        .iter()
        .find(|b| b["type"] == "tool_use" && b["name"].as_str().is_some_and(|n| n.ends_with(tool)))?;
    let result = blocks
        .iter()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == call["id"])?;
    Some(match &result["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => texts(parts),
        other => other.to_string(),
    })
}

/// The content blocks of the user messages after the last assistant message (a string
/// content is one text block). Claude Code may send several user messages in a row.
fn trailing_user_blocks(request: &Value) -> Vec<Value> {
    let empty = Vec::new();
    let messages = request["messages"].as_array().unwrap_or(&empty);
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .map_or(0, |i| i + 1);
    let mut blocks = Vec::new();
    for message in messages[start..].iter().filter(|m| m["role"] == "user") {
        match &message["content"] {
            Value::String(text) => blocks.push(json!({"type": "text", "text": text})),
            Value::Array(all) => blocks.extend(all.iter().cloned()),
            _ => {}
        }
    }
    blocks
}

/// The text blocks, joined.
fn texts(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The SSE events of one streamed message with these content blocks.
fn events(request: &Value, content: &[Value], stop: &str, input_tokens: u64) -> Vec<Value> {
    let mut events = vec![json!({"type": "message_start", "message": {"id": "msg_1",
        "type": "message", "role": "assistant", "model": request["model"], "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage(input_tokens)}})];
    for (index, block) in content.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            let mut start = block.clone();
            start["input"] = json!({});
            let partial = block["input"].to_string();
            (
                start,
                json!({"type": "input_json_delta", "partial_json": partial}),
            )
        } else {
            let text = block["text"].clone();
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": text}),
            )
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}}));
    events.push(json!({"type": "message_stop"}));
    events
}
