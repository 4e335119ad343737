//! Writes through a shared mapping (mmap MAP_SHARED + msync) of a file that stays open make
//! no inotify event: the verification pass finds them (G2), on demand (`filewatchd verify`,
//! `POST /v1/verify`) and in the background once the workspace is quiet, and attributes them
//! by the time the file changed.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};

/// Opens the file read-write, maps it shared, overwrites its first bytes through the mapping,
/// msyncs, says so, and keeps file and mapping open until its stdin closes.
const MAPPED_WRITE: &str = r#"
import mmap, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0)
data = sys.argv[2].encode()
m[0:len(data)] = data
m.flush()
print("written", flush=True)
sys.stdin.readline()
"#;

/// A python3 process holding a shared mapping it has written through.
struct MappedWriter {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl MappedWriter {
    /// Returns once the bytes are in the mapping and msync'ed.
    fn write(ws: &Workspace, rel: &str, bytes: &str) -> MappedWriter {
        let mut child = Command::new("python3")
            .args(["-c", MAPPED_WRITE])
            .arg(ws.path(rel))
            .arg(bytes)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is needed for the mmap tests");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("python3's stdout");
        assert_eq!(line.trim(), "written", "the mapped write failed");
        let stdin = child.stdin.take();
        MappedWriter { child, stdin }
    }
}

impl Drop for MappedWriter {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"\n");
        }
        let _ = self.child.wait();
    }
}

fn hash_of(daemon: &Daemon, path: &str) -> Value {
    latest(&daemon.history(path))["hash"].clone()
}

fn find<'a>(found: &'a Value, path: &str) -> &'a Value {
    found["versions"]
        .as_array()
        .and_then(|all| all.iter().find(|v| v["path"] == path))
        .unwrap_or_else(|| panic!("{path} not among what verify found: {found:#}"))
}

#[test]
fn verify_records_a_write_through_a_mapping_that_stays_open() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "[verify]\ninterval = \"off\"\n");
    ws.write("data.bin", "hello world\n");
    let daemon = Daemon::start(&ws);
    let _writer = MappedWriter::write(&ws, "data.bin", "HELLO");
    assert_eq!(ws.read("data.bin"), b"HELLO world\n");
    // The history answers behind the barrier: no event came, nothing was recorded.
    assert_eq!(hash_of(&daemon, "data.bin"), blake3_hex(b"hello world\n"));

    let found = cli_state_json(&ws, &["verify", "--json"]);
    assert_eq!(found["changed"], 1, "{found:#}");
    assert_eq!(find(&found, "data.bin")["origin"], "outside");
    assert_eq!(hash_of(&daemon, "data.bin"), blake3_hex(b"HELLO world\n"));
    let verify = &daemon.status()["verify"];
    assert_eq!(verify["runs"], 1, "{verify:#}");
    assert_eq!(verify["last_changed"], 1, "{verify:#}");
    assert_eq!(verify["changed_total"], 1, "{verify:#}");
    assert!(verify["last_run"].is_string(), "{verify:#}");
    assert_eq!(verify["interval_ms"], Value::Null, "{verify:#}");

    // Nothing else differs: a second pass records nothing, and says so in text too.
    let text = cli_state_text(&ws, &["verify"]);
    assert!(text.contains("0 changes recorded"), "{text}");
    let verify = &daemon.status()["verify"];
    assert_eq!(
        (verify["runs"].clone(), verify["changed_total"].clone()),
        (json!(2), json!(1))
    );
    let status = cli_state_text(&ws, &["status"]);
    assert!(
        status.contains("verify:") && status.contains("background pass off"),
        "{status}"
    );
}

#[test]
fn the_background_pass_records_a_mapped_write_without_being_asked() {
    let ws = Workspace::new();
    ws.write(
        ".filewatchd.toml",
        "[verify]\ninterval = \"1s\"\nquiet = \"200ms\"\n",
    );
    ws.write("data.bin", "hello world\n");
    let daemon = Daemon::start(&ws);
    let _writer = MappedWriter::write(&ws, "data.bin", "HELLO");

    // Status is read without the barrier: polling it never makes the pass yield.
    let deadline = Instant::now() + Duration::from_secs(30);
    let verify = loop {
        let verify = daemon.status()["verify"].clone();
        if verify["changed_total"].as_u64() >= Some(1) {
            break verify;
        }
        assert!(
            Instant::now() < deadline,
            "no background pass found the write: {verify:#}"
        );
        std::thread::sleep(Duration::from_millis(50)); // polling a condition, not synchronising
    };
    assert_eq!(verify["interval_ms"], 1000, "{verify:#}");
    assert!(verify["runs"].as_u64() >= Some(1), "{verify:#}");
    let history = daemon.history("data.bin");
    assert_eq!(latest(&history)["hash"], blake3_hex(b"HELLO world\n"));
    assert_eq!(latest(&history)["origin"], "outside");
}

#[test]
fn what_verify_finds_belongs_to_the_turn_open_when_the_file_changed() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "[verify]\ninterval = \"off\"\n");
    ws.write("before.bin", "written before any turn\n");
    ws.write("during.bin", "written during turn one\n");
    let daemon = Daemon::start(&ws);

    let _before = MappedWriter::write(&ws, "before.bin", "WRITTEN");
    daemon.turn_start("s", "one");
    let _during = MappedWriter::write(&ws, "during.bin", "WRITTEN");
    let one = daemon.turn_end("s");
    assert!(
        !changed_paths(&one).contains("during.bin"),
        "no event was expected: {one:#}"
    );
    // Found while turn 2 is open, each write still goes where its time says.
    daemon.turn_start("s", "two");
    let found = expect(200, daemon.post_empty("/v1/verify"));
    assert_eq!(found["changed"], 2, "{found:#}");
    let during = find(&found, "during.bin");
    assert_eq!(
        (&during["origin"], &during["session"], &during["turn"]),
        (&json!("turn"), &json!("s"), &json!(1))
    );
    assert_eq!(find(&found, "before.bin")["origin"], "outside");

    let history = daemon.history("during.bin");
    assert_eq!(latest(&history)["turn"], 1);
    assert_eq!(latest(&history)["hash"], blake3_hex(b"WRITTEN during turn one\n"));
    assert!(changed_paths(&daemon.turn("s", 1, false)).contains("during.bin"));
    assert!(!changed_paths(&daemon.turn_end("s")).contains("during.bin"));
}

/// A forced undo over writes no event reported (a shared mapping): the plan sees the disk
/// differ, what each such file holds is recorded first (`outside`), and only those paths are
/// planned again; the other files of the turn are rolled back as planned, and a redo brings
/// the unrecorded bytes back. A file also changed by someone else since the turn is recorded
/// too (its conflict shows the other change, not the disk's).
#[test]
fn a_forced_undo_records_what_no_event_reported_before_overwriting_it() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "[verify]\ninterval = \"off\"\n");
    ws.write("mapped.bin", "hello world\n");
    ws.write("both.bin", "hello again\n");
    ws.write("plain.txt", "p0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edits");
    ws.sh(
        "printf 'agent world\\n' > mapped.bin && printf 'agent again\\n' > both.bin && echo p1 > plain.txt",
    );
    daemon.turn_end("s1");
    ws.sh("printf 'user! again\\n' > both.bin");
    let _mapped = MappedWriter::write(&ws, "mapped.bin", "MAPPED");
    let _both = MappedWriter::write(&ws, "both.bin", "BOTH!");
    // No event came for either mapped write: the record lacks them.
    assert_eq!(hash_of(&daemon, "mapped.bin"), blake3_hex(b"agent world\n"));
    assert_eq!(hash_of(&daemon, "both.bin"), blake3_hex(b"user! again\n"));

    let answer = expect(200, daemon.undo("s1", json!({"on_conflict": "force"})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(
        listed_paths(&answer, "conflicts"),
        set(["both.bin", "mapped.bin"]),
        "{answer:#}"
    );
    assert_eq!(ws.read("mapped.bin"), b"hello world\n");
    assert_eq!(ws.read("both.bin"), b"hello again\n");
    assert_eq!(ws.read("plain.txt"), b"p0\n");
    for (path, unrecorded) in [
        ("mapped.bin", &b"MAPPEDworld\n"[..]),
        ("both.bin", b"BOTH! again\n"),
    ] {
        let history = daemon.history(path);
        let kept = versions(&history)
            .iter()
            .any(|v| v["origin"] == "outside" && v["hash"] == blake3_hex(unrecorded));
        assert!(
            kept,
            "{path}: what the mapping wrote is not in history: {history:#}"
        );
        assert_eq!(latest(&history)["origin"], "rollback", "{history:#}");
    }

    let answer = expect(200, daemon.redo("s1", json!({})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(ws.read("mapped.bin"), b"MAPPEDworld\n");
    assert_eq!(ws.read("both.bin"), b"BOTH! again\n");
    assert_eq!(ws.read("plain.txt"), b"p1\n");
}
