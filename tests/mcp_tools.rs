//! `filewatchd mcp` driven by a real MCP client (the official Python SDK, tests/mcp/driver.py)
//! over stdio: the tools it lists, and each one's answer checked against the record after
//! real edits, shell side effects included.

mod common;

use common::*;
use serde_json::{Value, json};

fn paths_of(answer: &Value, list: &str) -> Vec<String> {
    answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list}: {answer:#}"))
        .iter()
        .map(|c| c["path"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The agent's `sed` in a shell is in its turn the moment it returns: the answer comes after
/// the barrier. Paths, kinds and counts are the record's, diffs only when asked.
#[test]
fn turn_changes_shows_what_a_shell_command_just_did() {
    let ws = Workspace::new();
    ws.write("src/a.txt", "one\ntwo\n");
    ws.write("gone.txt", "bye\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "rename two\nand more");
    ws.sh("sed -i 's/two/TWO/' src/a.txt && rm gone.txt && echo new > made.txt");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };

    let answer = mcp.ok("turn_changes", json!({}));
    assert_eq!(answer["session"], "s1", "{answer:#}");
    assert_eq!(answer["turn"], 1);
    assert_eq!(answer["open"], true);
    assert_eq!(answer["prompt"], "rename two");
    assert_eq!(answer["paths"], 3);
    assert_eq!(answer["counts"]["added"], 1);
    assert_eq!(answer["counts"]["modified"], 1);
    assert_eq!(answer["counts"]["deleted"], 1);
    let record = daemon.turn("s1", 1, false);
    assert_eq!(set(paths_of(&answer, "changes")), changed_paths(&record));
    assert!(
        answer["changes"][0].get("diff").is_none(),
        "no diff unless asked: {answer:#}"
    );

    let with_diff = mcp.ok("turn_changes", json!({"diff": true, "path": "src"}));
    assert_eq!(paths_of(&with_diff, "changes"), ["src/a.txt"]);
    let diff = with_diff["changes"][0]["diff"].as_str().expect("a diff");
    assert!(diff.contains("-two\n+TWO\n"), "{diff}");
}
