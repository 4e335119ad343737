//! A scripted model server on loopback for the real-CLI tier (tests/agents_*.rs): HTTP/1.1 on
//! a std TcpListener, one thread per connection. Each prompt is answered with one tool call
//! that runs the prompt's bash command, then, once the tool's output comes back, a final text.
//! Speaks the OpenAI Responses API with SSE streaming (Codex), and the dialects of its
//! submodules: the Anthropic Messages API (Claude Code, model_anthropic.rs), OpenAI Chat
//! Completions (opencode, pi: model_chat.rs) and Gemini (model_gemini.rs). A server started with [`ModelServer::start_compacting`]
//! reports a nearly full context in its tool call for one prompt, then answers the agent's
//! compaction request with a summary holding [`SUMMARY`]. One started with
//! [`ModelServer::start_then_calling`] calls a second tool (filewatchd's MCP `turn_changes`,
//! by whatever name the agent gives it) once the command's output is back, and
//! [`ModelServer::tool_result`] reads what that tool answered from the agent's next request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

#[path = "model_anthropic.rs"]
mod anthropic;
#[path = "model_chat.rs"]
pub mod chat;
#[path = "model_gemini.rs"]
mod gemini;

pub use chat::last_prompt as last_chat_prompt;

/// The bash command a prompt's tool call runs.
pub type Script = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// The text of every compaction summary: after an auto-compaction the agent continues the
/// turn from it, so a script sees it in place of the prompt.
pub const SUMMARY: &str = "COMPACTED-SUMMARY: the work so far";

/// What the server answers: the script, and the prompt (a substring) whose tool call reports
/// `full` input tokens, a nearly full context that makes the agent compact.
pub struct Plan {
    pub script: Script,
    pub compact: Option<(String, u64)>,
    /// A summary was served and the agent has not asked for the turn's next step since.
    summarized: AtomicBool,
    /// A context overflow to play in the middle of a Chat Completions turn (`overflow_once`).
    overflow: Mutex<chat::Overflow>,
    /// The end of a tool's name (an MCP tool, as the agent names it) to call once the shell
    /// command's result is back, before the final text ([`ModelServer::start_then_calling`]).
    follow_up: Option<String>,
    /// Answers held back until the test opens their gate ([`ModelServer::gate`]).
    gates: Gates,
}

/// Gates by name: a request whose body holds `GATE-<name>` (the output of a tool call that
/// echoed it, carried back to the model) is not answered until the gate is open, so the
/// agent's turn stays open, with no tool call running, while the test acts.
#[derive(Default)]
struct Gates {
    /// Each gate, and whether it is open.
    gates: Mutex<std::collections::HashMap<String, bool>>,
    /// The gates a request waits at.
    held: Mutex<std::collections::HashSet<String>>,
}

impl Gates {
    /// Waits (polling, with a deadline) while `body` names a closed gate.
    fn pass(&self, body: &str) {
        let closed = |name: &String| {
            self.gates
                .lock()
                .map(|g| g.get(name) == Some(&false))
                .unwrap_or(false)
        };
        let names: Vec<String> = self
            .gates
            .lock()
            .map(|g| g.keys().cloned().collect())
            .unwrap_or_default();
        let Some(name) = names
            .into_iter()
            .find(|n| body.contains(&format!("GATE-{n}")) && closed(n))
        else {
            return;
        };
        if let Ok(mut held) = self.held.lock() {
            held.insert(name.clone());
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while closed(&name) && std::time::Instant::now() < until {
            // Polling the test's condition with a deadline, not synchronising by time.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Plan {
    /// Notes that a compaction summary was served; returns the summary text.
    pub fn summarize(&self) -> &'static str {
        self.summarized.store(true, Ordering::SeqCst);
        SUMMARY
    }

    /// The prompt to script the next tool call from: after a compaction the agent goes on
    /// from the summary (whatever of the old turn it kept), so the script gets [`SUMMARY`].
    pub fn prompt_for(&self, prompt: String) -> String {
        if self.summarized.swap(false, Ordering::SeqCst) {
            SUMMARY.to_string()
        } else {
            prompt
        }
    }

    /// The tool to call now that a tool's result is back: the offered tool whose name ends with
    /// the follow-up, unless the last call already was to it (then the turn is done).
    pub fn follow_up(&self, offered: &[&str], last_call: Option<&str>) -> Option<String> {
        let suffix = self.follow_up.as_deref()?;
        let tool = offered.iter().find(|name| name.ends_with(suffix))?;
        (last_call != Some(*tool)).then(|| tool.to_string())
    }

    /// Input tokens to report for the tool call answering `prompt`.
    pub fn input_tokens(&self, prompt: &str) -> u64 {
        match &self.compact {
            Some((trigger, full)) if prompt.contains(trigger.as_str()) && !prompt.contains(SUMMARY) => *full,
            _ => 100,
        }
    }
}

/// The script of the auto-compaction tests: a prompt holding "compact" writes `before.txt` and
/// edits `a.txt`; the turn's step after the compaction (scripted from [`SUMMARY`]) writes
/// `after.txt` and edits `a.txt` again; any other prompt writes `warm.txt`.
pub fn compaction_script() -> Script {
    Arc::new(|prompt: &str| {
        if prompt.contains(SUMMARY) {
            "echo after > after.txt && sed -i 's/1/ONE/' a.txt".to_string()
        } else if prompt.contains("compact") {
            "echo before > before.txt && sed -i 's/one/1/' a.txt".to_string()
        } else {
            "echo warm > warm.txt".to_string()
        }
    })
}

pub struct ModelServer {
    pub url: String,
    /// Every request body received, in order (for failure messages).
    pub requests: Arc<Mutex<Vec<Value>>>,
    plan: Arc<Plan>,
}

impl ModelServer {
    pub fn start(script: Script) -> ModelServer {
        ModelServer::serve(Plan {
            script,
            compact: None,
            summarized: AtomicBool::new(false),
            overflow: Mutex::new(chat::Overflow::Off),
            follow_up: None,
            gates: Gates::default(),
        })
    }

    /// Closes the gate `name`: the request carrying `GATE-<name>` back waits until [`open`].
    pub fn gate(&self, name: &str) {
        if let Ok(mut gates) = self.plan.gates.gates.lock() {
            gates.insert(name.to_string(), false);
        }
    }

    /// Whether a request waits at the gate `name` now.
    pub fn held_at(&self, name: &str) -> bool {
        self.plan
            .gates
            .held
            .lock()
            .map(|h| h.contains(name))
            .unwrap_or(false)
    }

    /// Opens the gate `name`: the request waiting there is answered.
    pub fn open(&self, name: &str) {
        if let Ok(mut gates) = self.plan.gates.gates.lock() {
            gates.insert(name.to_string(), true);
        }
    }

    /// A server that, once the shell command's result is back, calls the tool whose name ends
    /// with `tool` (with no arguments), then answers with the final text.
    pub fn start_then_calling(script: Script, tool: &str) -> ModelServer {
        ModelServer::serve(Plan {
            script,
            compact: None,
            summarized: AtomicBool::new(false),
            overflow: Mutex::new(chat::Overflow::Off),
            follow_up: Some(tool.to_string()),
            gates: Gates::default(),
        })
    }

    /// The text of what the tool named `…tool` returned, from the request that carried it
    /// back to the model (`None` if no request did).
    pub fn tool_result(&self, tool: &str) -> Option<String> {
        let requests = self.requests.lock().map(|r| r.clone()).unwrap_or_default();
        requests.iter().rev().find_map(|r| {
            let body = &r["body"];
            let path = r["path"].as_str().unwrap_or_default();
            if path.contains("/v1/messages") {
                anthropic::tool_result(body, tool)
            } else if path.contains("/responses") {
                responses_tool_result(body, tool)
            } else if path.contains("/chat/completions") {
                chat::tool_result(body, tool)
            } else {
                gemini::tool_result(body, tool)
            }
        })
    }

    /// A server whose tool call for a prompt containing `trigger` reports `full` input tokens.
    pub fn start_compacting(script: Script, trigger: &str, full: u64) -> ModelServer {
        ModelServer::serve(Plan {
            script,
            compact: Some((trigger.to_string(), full)),
            summarized: AtomicBool::new(false),
            overflow: Mutex::new(chat::Overflow::Off),
            follow_up: None,
            gates: Gates::default(),
        })
    }

    fn serve(plan: Plan) -> ModelServer {
        let plan = Arc::new(plan);
        let served = plan.clone();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the model server");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (plan, seen) = (plan.clone(), seen.clone());
                std::thread::spawn(move || serve(stream, &plan, &seen));
            }
        });
        ModelServer {
            url,
            requests,
            plan: served,
        }
    }

    /// Plays one context overflow in the next Chat Completions turn, after its first tool call:
    /// `Error` answers the tool's result with a "maximum context length" error (pi compacts and
    /// continues), `Usage` reports a nearly full context with the tool call (opencode compacts).
    /// After the compaction the turn goes on with another tool call (the script's next command).
    pub fn overflow_once(&self, how: chat::Overflow) {
        if let Ok(mut overflow) = self.plan.overflow.lock() {
            *overflow = how;
        }
    }
}

fn serve(mut stream: TcpStream, plan: &Plan, seen: &Mutex<Vec<Value>>) {
    let Some((method, path, body)) = read_request(&stream) else {
        return;
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Ok(mut all) = seen.lock() {
        all.push(json!({"method": method, "path": path, "body": request.clone()}));
    }
    plan.gates.pass(&String::from_utf8_lossy(&body));
    let path = path.split('?').next().unwrap_or("");
    if method == "POST" && path.ends_with("/v1/messages") {
        return anthropic::serve_messages(&mut stream, &request, plan);
    }
    let frames = match (method.as_str(), path) {
        ("POST", p) if p.ends_with("/responses") => responses_turn(&request, plan)
            .iter()
            .map(|e| {
                format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap_or("message")
                )
            })
            .collect(),
        ("POST", p) if p.ends_with("/chat/completions") => match chat::turn(&request, plan) {
            Ok(frames) => frames,
            Err(error) => return json_reply_status(stream, "400 Bad Request", &error),
        },
        ("POST", p) if p.ends_with(":streamGenerateContent") => gemini::turn(&request, plan),
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

/// The start of Codex's local compaction prompt (codex-rs templates/compact/prompt.md).
const CODEX_COMPACT_PROMPT: &str = "CONTEXT CHECKPOINT COMPACTION";

/// One model response: a tool call for a new prompt, the final text once its output is back,
/// a summary for a compaction request.
fn responses_turn(request: &Value, plan: &Plan) -> Vec<Value> {
    let empty = Vec::new();
    let input = request["input"].as_array().unwrap_or(&empty);
    let prompt = last_prompt(input);
    let answered = input
        .last()
        .is_some_and(|item| item["type"] == "function_call_output");
    let message = |text: &str| {
        json!({"type": "message", "role": "assistant", "id": "msg_done",
            "content": [{"type": "output_text", "text": text}]})
    };
    let tools = responses_tools(request);
    let offered: Vec<&str> = tools.iter().map(|(_, name)| name.as_str()).collect();
    let last_call = input
        .iter()
        .rev()
        .find(|item| item["type"] == "function_call")
        .and_then(|item| item["name"].as_str());
    let follow_up = answered.then(|| plan.follow_up(&offered, last_call)).flatten();
    let (item, tokens) = if prompt.contains(CODEX_COMPACT_PROMPT) {
        (message(plan.summarize()), 100)
    } else if let Some(name) = follow_up {
        let mut call = json!({"type": "function_call", "id": "fc_2",
            "call_id": format!("call_{}", input.len()), "name": name, "arguments": "{}"});
        if let Some((Some(namespace), _)) = tools.iter().find(|(_, n)| *n == name) {
            call["namespace"] = json!(namespace);
        }
        (call, 100)
    } else if answered {
        (message("Done."), 100)
    } else {
        let prompt = plan.prompt_for(prompt);
        let command = (plan.script)(&prompt);
        let (name, arguments) = shell_tool(request, &command);
        let call = json!({"type": "function_call", "id": "fc_1",
            "call_id": format!("call_{}", input.len()), "name": name,
            "arguments": arguments.to_string()});
        (call, plan.input_tokens(&prompt))
    };
    vec![
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
        json!({"type": "response.output_item.done", "item": item}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
            "input_tokens": tokens, "input_tokens_details": null, "output_tokens": 10,
            "output_tokens_details": null, "total_tokens": tokens + 10}}}),
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

/// The function tools a Responses request offers, each as its name and, for a tool inside a
/// namespace (Codex lists an MCP server's tools in `mcp__<server>`), the namespace's name.
fn responses_tools(request: &Value) -> Vec<(Option<String>, String)> {
    let mut found = Vec::new();
    for tool in request["tools"].as_array().into_iter().flatten() {
        let outer = tool["name"].as_str().map(str::to_string);
        if tool["type"] != "namespace" {
            found.extend(outer.map(|name| (None, name)));
            continue;
        }
        for inner in tool["tools"].as_array().into_iter().flatten() {
            if let Some(name) = inner["name"].as_str() {
                found.push((outer.clone(), name.to_string()));
            }
        }
    }
    found
}

/// The output of the call to `…tool` in a Responses request's input.
fn responses_tool_result(request: &Value, tool: &str) -> Option<String> {
    let input = request["input"].as_array()?;
    let call = input
        .iter()
        .find(|i| i["type"] == "function_call" && i["name"].as_str().is_some_and(|n| n.ends_with(tool)))?;
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == call["call_id"])?;
    Some(match &output["output"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}
