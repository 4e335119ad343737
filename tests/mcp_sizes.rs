//! `filewatchd mcp` answers stay usable on big turns and files: the daemon is asked for the
//! page and paths needed (not the whole turn), and what is left out says so.

mod common;

use common::*;
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
