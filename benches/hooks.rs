//! What a tool-call hook costs the agent (issue 48): Claude Code runs `filewatchd hook
//! claude-code` before and after every tool call and waits for it. Timed from spawn to exit,
//! beside the floor of any command hook (`cat > /dev/null` reading the same payload), the two
//! alternating round by round; with the daemon up (a turn open, the tool call writing 10 files
//! between its start and its end) and with no daemon running.
//!
//! `cargo bench --bench hooks -- [--rounds N]` (default 200). Prints p50 and p95 of each, and
//! the ratio to the floor, pair by pair (median).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_filewatchd");

fn main() {
    let rounds = rounds();
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
    std::fs::create_dir_all(&ws).expect("workspace");
    std::fs::create_dir_all(&home).expect("home");
    for i in 0..10 {
        std::fs::write(ws.join(format!("f{i}.txt")), "0\n").expect("seed");
    }
    let run = |args: &[&str]| {
        let out = filewatchd(&home, &ws).args(args).output().expect("filewatchd");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&["start", "--root", &ws.to_string_lossy()]);
    hook(
        &home,
        &ws,
        &payload(&ws, "UserPromptSubmit", "\"prompt\": \"bench\""),
    );
    let mut up = Timings::default();
    for round in 0..rounds {
        let call = format!("\"tool_name\": \"Bash\", \"tool_use_id\": \"t{round}\", \"tool_input\": {{}}");
        let (pre, post) = (
            payload(&ws, "PreToolUse", &call),
            payload(&ws, "PostToolUse", &call),
        );
        let floor = time(|| floor_hook(&pre));
        let start = time(|| hook(&home, &ws, &pre));
        for i in 0..10 {
            std::fs::write(ws.join(format!("f{i}.txt")), format!("{round}\n")).expect("write");
        }
        let end = time(|| hook(&home, &ws, &post));
        up.push(floor, start, end);
    }
    hook(&home, &ws, &payload(&ws, "Stop", "\"stop_hook_active\": false"));
    run(&["stop"]);
    let mut down = Timings::default();
    for round in 0..rounds {
        let call = format!("\"tool_name\": \"Bash\", \"tool_use_id\": \"t{round}\", \"tool_input\": {{}}");
        let (pre, post) = (
            payload(&ws, "PreToolUse", &call),
            payload(&ws, "PostToolUse", &call),
        );
        let start = time(|| hook(&home, &ws, &pre));
        let floor = time(|| floor_hook(&pre));
        let end = time(|| hook(&home, &ws, &post));
        down.push(floor, start, end);
    }
    println!("`filewatchd hook claude-code` per tool call, {rounds} rounds, alternating with the floor");
    println!("| daemon | event | p50 | p95 | floor p50 / p95 | ÷ floor (median of pairs) |");
    println!("|---|---|---|---|---|---|");
    up.print(
        "up, a turn open",
        "PreToolUse",
        "PostToolUse (10 files written in the call)",
    );
    down.print("not running", "PreToolUse", "PostToolUse");
}

fn rounds() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(200)
}

fn filewatchd(home: &Path, ws: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env("FILEWATCHD_HOME", home)
        .env_remove("FILEWATCHD_URL")
        .env_remove("FILEWATCHD_TOKEN")
        .current_dir(ws);
    cmd
}

fn payload(ws: &Path, event: &str, extra: &str) -> String {
    format!(
        "{{\"session_id\": \"bench\", \"transcript_path\": \"/tmp/t.jsonl\", \"cwd\": {:?}, \"hook_event_name\": \"{event}\", {extra}}}",
        ws.to_string_lossy()
    )
}

fn feed(mut cmd: Command, stdin: &str) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin.as_bytes());
    }
    let status = child.wait().expect("wait");
    assert!(status.success());
}

fn hook(home: &Path, ws: &Path, stdin: &str) {
    let mut cmd = filewatchd(home, ws);
    cmd.args(["hook", "claude-code"]);
    feed(cmd, stdin);
}

/// The floor of any command hook: a process that reads the payload and exits.
fn floor_hook(stdin: &str) {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "cat > /dev/null"]);
    feed(cmd, stdin);
}

fn time(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

#[derive(Default)]
struct Timings {
    floor: Vec<Duration>,
    start: Vec<Duration>,
    end: Vec<Duration>,
}

impl Timings {
    fn push(&mut self, floor: Duration, start: Duration, end: Duration) {
        self.floor.push(floor);
        self.start.push(start);
        self.end.push(end);
    }

    fn print(&self, daemon: &str, start: &str, end: &str) {
        for (event, times) in [(start, &self.start), (end, &self.end)] {
            let pairs: Vec<f64> = times
                .iter()
                .zip(&self.floor)
                .map(|(t, f)| t.as_secs_f64() / f.as_secs_f64().max(1e-9))
                .collect();
            println!(
                "| {daemon} | {event} | {} | {} | {} / {} | {:.2}× |",
                ms(quantile(times, 0.5)),
                ms(quantile(times, 0.95)),
                ms(quantile(&self.floor, 0.5)),
                ms(quantile(&self.floor, 0.95)),
                median(pairs)
            );
        }
    }
}

fn quantile(times: &[Duration], q: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let at = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
