//! `filewatchd mcp` answers stay usable on big turns and files: the daemon is asked for the
//! page and paths needed (not the whole turn), and what is left out says so.

use crate::common::*;
use serde_json::{Value, json};

fn change<'a>(answer: &'a Value, path: &str) -> &'a Value {
    answer["changes"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["path"] == path))
        .unwrap_or_else(|| panic!("{path} not listed: {answer:#}"))
}

/// A turn whose diffs together are past the client's 10 MiB limit: `diff: true` on one small
/// file answers its diff, and on the whole turn answers every diff that fits, the big file's
/// left out with a reason.
#[test]
fn diffs_of_a_big_turn_come_for_the_paths_asked() {
    let ws = Workspace::new();
    ws.write("small.txt", "one\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "big");
    ws.sh("seq 1 1600000 > big.txt && echo two >> small.txt");
    // The endpoint's filter and page: the changes at or beneath `path`, how many, the counts
    // of the whole turn.
    let page = expect(200, daemon.get("/v1/sessions/s1/turns/1?path=small.txt&limit=5"));
    assert_eq!(page["changes_total"], 1, "{page:#}");
    assert_eq!(page["changes"][0]["path"], "small.txt");
    assert_eq!(page["counts"]["added"], 1);
    let (status, refused) = daemon.get("/v1/sessions/s1/turns/1?path=../etc");
    assert_eq!((status, &refused["error"]["code"]), (400, &json!("bad_path")));
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let one = mcp.ok("turn_changes", json!({"diff": true, "path": "small.txt"}));
    assert_eq!(one["paths"], 1, "{one:#}");
    assert_eq!(one["path"], "small.txt");
    assert_eq!(one["counts"]["added"], 1, "the whole turn's counts: {one:#}");
    let diff = change(&one, "small.txt")["diff"].as_str().expect("a diff");
    assert!(diff.contains("+two\n"), "{diff}");

    let all = mcp.ok("turn_changes", json!({"diff": true}));
    assert_eq!(all["paths"], 2, "{all:#}");
    let big = change(&all, "big.txt");
    assert!(big["diff"].is_null(), "{big:#}");
    assert!(big["diff_omitted"].is_string(), "{big:#}");
    assert!(
        change(&all, "small.txt")["diff"]
            .as_str()
            .is_some_and(|d| d.contains("+two\n")),
        "{all:#}"
    );
}

/// 1500 lines of 400 characters: a blame of 1000 lines stops at the 64 KiB page and says
/// which line to go on from; that page goes on where the first stopped.
#[test]
fn blame_answers_a_page_of_at_most_64_kib() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    let line = "x".repeat(400);
    let text: String = (0..1500).map(|i| format!("{i:04}{line}\n")).collect();
    ws.write("wide.txt", &text);
    daemon.turn_start("s1", "sync");
    daemon.turn_end("s1");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let answer = mcp.ok("blame", json!({"path": "wide.txt", "lines": 1000}));
    let size = answer.to_string().len();
    assert!(size <= 66 * 1024, "{size} bytes");
    assert_eq!(answer["lines_total"], 1500);
    let runs = answer["runs"].as_array().expect("runs");
    let shown: usize = runs
        .iter()
        .map(|r| r["text"].as_array().map_or(0, Vec::len))
        .sum();
    assert!((1..1000).contains(&shown), "{shown} lines shown");
    let more = answer["more"].as_str().expect("more");
    assert!(more.contains(&format!("start_line={}", shown + 1)), "{more}");
    let next = mcp.ok("blame", json!({"path": "wide.txt", "start_line": shown + 1}));
    let first = next["runs"][0]["text"][0].as_str().unwrap_or_default();
    assert!(first.starts_with(&format!("{shown:04}")), "{first:.10}");
}

/// A 2 MB file of one line is past what a plan diffs: its change says the diff is left out
/// and why, instead of coming without one.
#[test]
fn a_diff_left_out_says_so() {
    let ws = Workspace::new();
    ws.write("one-line.txt", "a".repeat(2 << 20));
    ws.write("small.txt", "old\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "rewrite");
    ws.write("one-line.txt", "b".repeat(2 << 20));
    ws.write("small.txt", "new\n");
    daemon.turn_end("s1");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let one = mcp.ok("diff_since", json!({"before": 1, "path": "one-line.txt"}));
    let big = change(&one, "one-line.txt");
    assert!(big["diff"].is_null(), "{one:#}");
    assert!(
        big["diff_omitted"].as_str().is_some_and(|r| r.contains("1 MiB")),
        "{one:#}"
    );
    assert!(one["diffs_cut"].is_string(), "{one:#}");
    let both = mcp.ok("diff_since", json!({"before": 1, "diff": true}));
    assert!(change(&both, "small.txt")["diff_omitted"].is_null(), "{both:#}");
    assert!(
        change(&both, "one-line.txt")["diff_omitted"].is_string(),
        "{both:#}"
    );
}
