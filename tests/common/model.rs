//! A scripted model server on loopback for the real-CLI tier (tests/agents_*.rs): HTTP/1.1 on
//! a std TcpListener, one thread per connection. Each prompt is answered with one tool call
//! that runs the prompt's bash command, then, once the tool's output comes back, a final text.
//! Speaks the OpenAI Responses API with SSE streaming (Codex), and the dialects of its
//! submodules: OpenAI Chat Completions (model_chat.rs) and Gemini (model_gemini.rs).

#[path = "model_chat.rs"]
pub mod chat;
#[path = "model_gemini.rs"]
mod gemini;

#[allow(unused_imports)] // used by some of the tests that include this file
pub use chat::last_prompt as last_chat_prompt;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The bash command a prompt's tool call runs.
pub type Script = Arc<dyn Fn(&str) -> String + Send + Sync>;

pub struct ModelServer {
    pub url: String,
    /// Every request body received, in order (for failure messages).
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// A context overflow to play in the middle of a Chat Completions turn (`overflow_once`).
    overflow: Arc<Mutex<chat::Overflow>>,
}

impl ModelServer {
    pub fn start(script: Script) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the model server");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let overflow = Arc::new(Mutex::new(chat::Overflow::Off));
        let plan = overflow.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (script, seen, plan) = (script.clone(), seen.clone(), plan.clone());
                std::thread::spawn(move || serve(stream, &script, &seen, &plan));
            }
        });
        ModelServer {
            url,
            requests,
            overflow,
        }
    }

    /// Plays one context overflow in the next Chat Completions turn, after its first tool call:
    /// `Error` answers the tool's result with a "maximum context length" error (pi compacts and
    /// continues), `Usage` reports a nearly full context with the tool call (opencode compacts).
    /// After the compaction the turn goes on with another tool call (the script's next command).
    #[allow(dead_code)] // used by some of the tests that include this file
    pub fn overflow_once(&self, how: chat::Overflow) {
        if let Ok(mut plan) = self.overflow.lock() {
            *plan = how;
        }
    }
}

fn serve(mut stream: TcpStream, script: &Script, seen: &Mutex<Vec<Value>>, plan: &Mutex<chat::Overflow>) {
    let Some((method, path, body)) = read_request(&stream) else {
        return;
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Ok(mut all) = seen.lock() {
        all.push(json!({"method": method, "path": path, "body": request.clone()}));
    }
    let frames = match (method.as_str(), path.split('?').next().unwrap_or("")) {
        ("POST", p) if p.ends_with("/responses") => responses_turn(&request, script)
            .iter()
            .map(|e| {
                format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap_or("message")
                )
            })
            .collect(),
        ("POST", p) if p.ends_with("/chat/completions") => match chat::turn(&request, script, plan) {
            Ok(frames) => frames,
            Err(error) => return json_reply_status(stream, "400 Bad Request", &error),
        },
        ("POST", p) if p.ends_with(":streamGenerateContent") => gemini::turn(&request, script),
        ("POST", p) if p.ends_with(":generateContent") || p.ends_with(":countTokens") => {
            return json_reply(stream, &gemini::unary(p, &request));
        }
        _ => return json_reply(stream, &json!({"data": [], "models": []})),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    );
    for frame in frames {
        let _ = stream.write_all(frame.as_bytes());
    }
    let _ = stream.flush();
}

fn json_reply(stream: TcpStream, body: &Value) {
    json_reply_status(stream, "200 OK", body);
}

fn json_reply_status(mut stream: TcpStream, status: &str, body: &Value) {
    let body = body.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn read_request(stream: &TcpStream) -> Option<(String, String, Vec<u8>)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((method, path, body))
}

/// The prompt: the text of the last user message in `input`.
fn last_prompt(input: &[Value]) -> String {
    input
        .iter()
        .rev()
        .find(|item| item["role"] == "user")
        .and_then(|item| item["content"].as_array())
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// One model response: a tool call for a new prompt, the final text once its output is back.
fn responses_turn(request: &Value, script: &Script) -> Vec<Value> {
    let empty = Vec::new();
    let input = request["input"].as_array().unwrap_or(&empty);
    let answered = input
        .last()
        .is_some_and(|item| item["type"] == "function_call_output");
    let item = if answered {
        json!({"type": "message", "role": "assistant", "id": "msg_done",
            "content": [{"type": "output_text", "text": "Done."}]})
    } else {
        let command = script(&last_prompt(input));
        let (name, arguments) = shell_tool(request, &command);
        json!({"type": "function_call", "id": "fc_1", "call_id": format!("call_{}", input.len()),
            "name": name, "arguments": arguments.to_string()})
    };
    vec![
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
        json!({"type": "response.output_item.done", "item": item}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
            "input_tokens": 100, "input_tokens_details": null, "output_tokens": 10,
            "output_tokens_details": null, "total_tokens": 110}}}),
    ]
}

/// Picks the shell tool the agent offers and shapes its arguments.
fn shell_tool(request: &Value, command: &str) -> (String, Value) {
    let names: Vec<&str> = request["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    if names.contains(&"exec_command") {
        ("exec_command".into(), json!({"cmd": command}))
    } else if names.contains(&"shell_command") {
        ("shell_command".into(), json!({"command": command}))
    } else {
        ("shell".into(), json!({"command": ["bash", "-lc", command]}))
    }
}
