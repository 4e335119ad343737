//! `filewatchd mcp` driven by a real MCP client (the official Python SDK, tests/mcp/driver.py)
//! over stdio: the tools it lists, and each one's answer checked against the record after
//! real edits, shell side effects included.

use crate::common::*;
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

/// Every tool has a one-line description and an object schema; the ones that change files
/// are not listed unless the user allowed them.
#[test]
fn the_tools_are_listed_with_schemas_and_none_changes_files_by_default() {
    let ws = Workspace::new();
    let _daemon = Daemon::start_in_home(&ws);
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let tools = mcp.tools();
    for tool in &tools {
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(!description.is_empty() && !description.contains('\n'), "{tool:#}");
        assert_eq!(tool["input_schema"]["type"], "object", "{tool:#}");
    }
    let expected = [
        "blame",
        "diff_since",
        "file_history",
        "preview_rollback",
        "preview_undo",
        "turn_changes",
        "turns",
    ];
    assert_eq!(mcp.tool_names(), expected);
    let turn_changes = tools
        .iter()
        .find(|t| t["name"] == "turn_changes")
        .expect("listed");
    let properties = &turn_changes["input_schema"]["properties"];
    for argument in ["session", "turn", "diff", "path", "offset", "limit"] {
        assert!(
            properties.get(argument).is_some(),
            "turn_changes lacks {argument}: {turn_changes:#}"
        );
    }
}

/// `turns`, `file_history`, `blame` and `diff_since` say what the record says, after edits
/// by a turn's shell, by the user and by a second turn.
#[test]
fn turns_history_blame_and_diff_since_answer_from_the_record() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\ntwo\nthree\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "first prompt\ndetails");
    ws.sh("sed -i 's/two/TWO/' a.txt");
    daemon.turn_end("s1");
    ws.write("user.txt", "mine\n");
    daemon.turn_start("s1", "second prompt");
    ws.sh("echo four >> a.txt && rm user.txt");
    daemon.turn_end("s1");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };

    let turns = mcp.ok("turns", json!({}));
    assert_eq!(turns["session_from"], "the workspace's only session", "{turns:#}");
    assert_eq!(turns["turns_total"], 2);
    let listed: Vec<&Value> = turns["turns"].as_array().expect("turns").iter().collect();
    assert_eq!(listed[0]["turn"], 2, "the latest first: {turns:#}");
    assert_eq!(listed[1]["prompt"], "first prompt");
    assert_eq!(listed[1]["undone"], false);
    assert_eq!(listed[0]["counts"], daemon.turn_list("s1")[1]["counts"]);
    let first_only = mcp.ok("turns", json!({"limit": 1}));
    assert_eq!(first_only["turns"].as_array().map(Vec::len), Some(1));
    assert!(
        first_only["more"]
            .as_str()
            .is_some_and(|m| m.contains("offset=1")),
        "{first_only:#}"
    );

    let history = mcp.ok("file_history", json!({"path": "a.txt"}));
    let record = daemon.history("a.txt");
    assert_eq!(history["versions_total"], versions(&record).len());
    assert_eq!(history["versions"][0]["seq"], latest(&record)["seq"]);
    assert_eq!(history["versions"][0]["turn"], 2);
    assert_eq!(history["by_origin"]["turn"], 2, "{history:#}");

    let blame = mcp.ok("blame", json!({"path": "a.txt"}));
    assert_eq!(blame["lines_total"], 4);
    let runs = blame["runs"].as_array().expect("runs");
    let who: Vec<(String, Value)> = runs
        .iter()
        .map(|r| {
            (
                r["lines"].as_str().unwrap_or_default().to_string(),
                r["turn"].clone(),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            ("1".into(), Value::Null),
            ("2".into(), json!(1)),
            ("3".into(), Value::Null),
            ("4".into(), json!(2))
        ],
        "{blame:#}"
    );
    assert_eq!(runs[1]["prompt"], "first prompt");
    assert_eq!(runs[1]["text"], json!(["TWO"]));

    // Since turn 2 started: its append and the user's file it removed.
    let since = mcp.ok("diff_since", json!({"before": 2}));
    assert_eq!(
        since["since"]["seq"],
        daemon.turn("s1", 2, false)["start_seq"],
        "{since:#}"
    );
    let changes: Vec<(String, String)> = since["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap_or_default().into(),
                c["change"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("a.txt".into(), "modified".into()),
            ("user.txt".into(), "deleted".into())
        ]
    );
    let one = mcp.ok("diff_since", json!({"before": 1, "path": "a.txt"}));
    let diff = one["changes"][0]["diff"].as_str().expect("a diff for one path");
    assert!(
        diff.contains("-two\n+TWO\n") && diff.contains("+four\n"),
        "{diff}"
    );
    assert_eq!(one["changes"][0]["lines_added"], 2, "{one:#}");
    assert_eq!(one["changes"][0]["lines_removed"], 1);
    let error = mcp.fails("diff_since", json!({"before": 1, "at": "2026-01-01T00:00:00Z"}));
    assert_eq!(error["error"]["code"], "bad_argument", "{error:#}");
}

/// A new project's first turn starts before any version (seq 0): what changed since then is
/// everything it made.
#[test]
fn diff_since_the_first_turn_of_a_project_that_began_empty() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "scaffold");
    ws.sh("mkdir src && echo 'fn main() {}' > src/main.rs");
    daemon.turn_end("s1");
    assert_eq!(daemon.turn("s1", 1, false)["start_seq"], 0);
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let since = mcp.ok("diff_since", json!({"before": 1}));
    assert_eq!(since["since"]["seq"], 0, "{since:#}");
    assert_eq!(paths_of(&since, "changes"), ["src", "src/main.rs"], "{since:#}");
    assert_eq!(since["counts"]["added"], 2, "{since:#}");
}

/// Without `allow_rollback`, a preview says what an undo would do, each conflict with its
/// reason, and the exact command to ask the user to run; nothing changes.
#[test]
fn previews_tell_the_agent_which_command_to_ask_for() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write("b.txt", "b0\n");
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "edit both");
    ws.sh("echo a1 > a.txt && echo b1 > b.txt");
    daemon.turn_end("s1");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let clean = mcp.ok("preview_undo", json!({}));
    assert_eq!(clean["dry_run"], true, "{clean:#}");
    assert_eq!(clean["conflicts_total"], 0);
    assert_eq!(set(paths_of(&clean, "actions")), set(["a.txt", "b.txt"]));
    let next = clean["next_step"].as_str().expect("next_step");
    assert!(
        next.contains("ask the user to run `filewatchd undo --session s1`"),
        "{next}"
    );

    ws.write("b.txt", "the user's\n");
    let conflicted = mcp.ok("preview_rollback", json!({"to": "before", "turn": 1}));
    assert_eq!(conflicted["conflicts_total"], 1, "{conflicted:#}");
    assert_eq!(conflicted["conflicts"][0]["path"], "b.txt");
    assert_eq!(conflicted["conflicts"][0]["code"], "changed_by_other");
    assert!(
        conflicted["conflicts"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("outside any turn"))
    );
    let next = conflicted["next_step"].as_str().expect("next_step");
    assert!(
        next.contains("filewatchd rollback --session s1 --before 1 --skip-conflicts"),
        "{next}"
    );
    assert_eq!(ws.read("a.txt"), b"a1\n", "a preview changed a file");

    // While the session's turn is open an undo cannot be planned: the answer says when.
    daemon.turn_start("s1", "more");
    let open = mcp.fails("preview_undo", json!({}));
    assert_eq!(open["error"]["code"], "turn_open", "{open:#}");
    let message = open["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("after this turn"), "{open:#}");
    assert!(
        !message.contains("end it first") && message.contains("Do not end the turn yourself"),
        "an agent is never told to end its turn: {message}"
    );
    let tools = mcp.tools();
    for name in ["preview_undo", "preview_rollback"] {
        let tool = tools.iter().find(|t| t["name"] == name).expect("listed");
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(description.contains("turn_open"), "{name}: {description}");
    }
}

/// A turn of 120 files: 50 paths a page with `more` saying where the next starts, the whole
/// count first, and a last page that says there is nothing more.
#[test]
fn long_lists_come_a_page_at_a_time() {
    let ws = Workspace::new();
    let daemon = Daemon::start_in_home(&ws);
    daemon.turn_start("s1", "many");
    ws.sh("mkdir gen && for i in $(seq 1 120); do echo $i > gen/f$i.txt; done");
    let Some(mut mcp) = Mcp::start(&ws, &[], &[]) else {
        return;
    };
    let first = mcp.ok("turn_changes", json!({}));
    assert_eq!(first["paths"], 121, "the files and their directory: {first:#}");
    assert_eq!(first["changes"].as_array().map(Vec::len), Some(50));
    let more = first["more"].as_str().expect("more");
    assert!(
        more.starts_with("71 more: call turn_changes (turn=1) with offset=50"),
        "{more}"
    );
    let last = mcp.ok("turn_changes", json!({"offset": 100, "limit": 500}));
    assert_eq!(last["changes"].as_array().map(Vec::len), Some(21));
    assert!(last["more"].is_null(), "{last:#}");
    let mut seen = set(paths_of(&first, "changes"));
    let middle = mcp.ok("turn_changes", json!({"offset": 50}));
    seen.extend(paths_of(&middle, "changes"));
    seen.extend(paths_of(&last, "changes"));
    assert_eq!(seen, changed_paths(&daemon.turn("s1", 1, false)));
}
