//! G7 confinement and bad input: a symlink to a directory outside the root, planted where a
//! directory was, is never written through in any mode; paths that could leave the root or
//! reach `.git/` are refused; unknown sessions and turns, open turns and exhausted chains get
//! their error codes and change nothing.

use std::path::{Path, PathBuf};

use crate::common::*;
use Op::{Redo, Rollback, Undo};
use Refusal::{Error, Status};
use serde_json::{Value, json};

/// A directory outside the root, full of files whose names match the workspace's `d/`.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::Builder::new().prefix("fwd-outside-").tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "outside a\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.txt"), "outside b\n").unwrap();
        std::fs::write(dir.path().join("other.txt"), "outside other\n").unwrap();
        Outside { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn state(&self) -> (Tree, std::collections::BTreeMap<String, Mark>) {
        (snapshot(self.dir.path()), marks(self.dir.path()))
    }

    /// Nothing in the outside directory was created, removed, changed or rewritten.
    #[track_caller]
    fn assert_unchanged(&self, before: &(Tree, std::collections::BTreeMap<String, Mark>), what: &str) {
        let now = self.state();
        assert_tree_eq(&before.0, &now.0, &format!("the outside directory, {what}"));
        assert_eq!(before.1, now.1, "a file outside the root was rewritten, {what}");
    }
}

fn prepare_d(ws: &Workspace) {
    ws.write("d/a.txt", "inside a\n");
    ws.write("d/sub/b.txt", "inside b\n");
    ws.write("top.txt", "top\n");
}

fn link_d_to(ws: &Workspace, outside: &Path) {
    ws.sh(&format!("rm -rf d && ln -s '{}' d", outside.display()));
}

/// Every conflict of the answer has one of `codes`.
#[track_caller]
fn assert_codes(answer: &Value, list: &str, codes: &[&str]) {
    for n in answer[list].as_array().unwrap() {
        assert!(
            codes.iter().any(|c| n["code"] == *c),
            "{list}: unexpected code in {n}"
        );
    }
}

/// The tracked paths beneath `d/` that a rollback to before the symlink must create.
const BENEATH_D: [&str; 3] = ["d/a.txt", "d/sub", "d/sub/b.txt"];

/// The turn itself replaced `d/` by a symlink to a directory outside the root. Undoing it needs
/// `d/` as a directory: in no mode is anything written through the symlink.
#[test]
fn a_symlink_to_outside_planted_by_the_turn_is_never_written_through() {
    for (mode, outcome) in ON_CONFLICT {
        let ws = Workspace::new();
        let outside = Outside::new();
        prepare_d(&ws);
        let daemon = Daemon::start(&ws);
        let boundary = snapshot(ws.root());
        daemon.turn_start("s1", "swap d for a symlink");
        link_d_to(&ws, &outside.path());
        ws.write("top.txt", "top changed\n");
        daemon.turn_end("s1");
        let outside_before = outside.state();
        let after_turn = snapshot(ws.root());

        // Every path beneath the symlink, the direct child as much as the deeper ones, is a
        // `symlink_in_the_way` conflict.
        let plan = expect(200, daemon.undo("s1", json!({"dry_run": true})));
        assert_eq!(
            listed_paths(&plan, "conflicts"),
            set(BENEATH_D),
            "{mode}: every path beneath the symlink d is a conflict: {plan:#}"
        );
        assert_codes(&plan, "conflicts", &["symlink_in_the_way"]);

        let (status, answer) = daemon.undo("s1", json!({"on_conflict": mode}));
        outside.assert_unchanged(&outside_before, &format!("after undo with {mode}"));
        assert_eq!(status, outcome.status(), "{mode}: {answer:#}");
        match outcome {
            OnConflict::Refused => {
                assert_eq!(answer["error"]["code"], "conflicts", "{answer:#}");
                assert_eq!(listed_paths(&answer, "conflicts"), set(BENEATH_D), "{answer:#}");
                assert_tree_eq(&after_turn, &snapshot(ws.root()), "after the refused undo");
            }
            OnConflict::Skipped => {
                for path in BENEATH_D {
                    let skipped = listed(&answer, "skipped", path);
                    assert_eq!(skipped["code"], "symlink_in_the_way", "{answer:#}");
                }
                assert_eq!(ws.read("top.txt"), b"top\n", "skip: the rest was not rolled back");
                assert!(
                    !ws.path("d").is_symlink(),
                    "skip: the turn's own symlink (no conflict) was not rolled back"
                );
            }
            OnConflict::Forced => {
                assert_eq!(answer["skipped"], json!([]), "{answer:#}");
                assert_tree_eq(&boundary, &snapshot(ws.root()), "after undo with force");
            }
        }
        drop(daemon);
    }
}

/// The user replaced `d/` by a symlink to outside between turns; the turn had edited files in
/// `d/`. The symlink is the user's, never the undo's to touch (issue 48); the turn's files
/// beneath it conflict (the user's change) and, whatever the mode, nothing is written outside.
#[test]
fn a_symlink_to_outside_planted_by_the_user_is_never_written_through() {
    for (mode, outcome) in ON_CONFLICT {
        let ws = Workspace::new();
        let outside = Outside::new();
        prepare_d(&ws);
        let daemon = Daemon::start(&ws);
        daemon.turn_start("s1", "edit d");
        ws.sh("echo 'a by the turn' > d/a.txt && echo 'b by the turn' > d/sub/b.txt && echo x > d/new.txt");
        daemon.turn_end("s1");
        link_d_to(&ws, &outside.path()); // the user, no turn open
        let outside_before = outside.state();
        let after_user = snapshot(ws.root());

        let (status, answer) = daemon.undo("s1", json!({"on_conflict": mode}));
        outside.assert_unchanged(&outside_before, &format!("after undo with {mode}"));
        let conflicts = listed_paths(&answer, "conflicts");
        assert_eq!(conflicts, set(["d/a.txt", "d/sub/b.txt"]), "{mode}: {answer:#}");
        assert!(
            !action_paths(&answer).contains("d"),
            "{mode}: the user's d is planned: {answer:#}"
        );
        assert_codes(&answer, "conflicts", &["changed_by_other", "symlink_in_the_way"]);
        assert_eq!(status, outcome.status(), "{mode}: {answer:#}");
        match outcome {
            OnConflict::Refused => {
                assert_tree_eq(&after_user, &snapshot(ws.root()), "after the refused undo");
            }
            OnConflict::Skipped | OnConflict::Forced => {
                // Forced, the turn's files would be written through the user's symlink: skipped.
                for path in ["d/a.txt", "d/sub/b.txt"] {
                    listed(&answer, "skipped", path);
                }
                assert_tree_eq(
                    &after_user,
                    &snapshot(ws.root()),
                    &format!("after undo with {mode}"),
                );
            }
        }
        assert!(
            ws.path("d").is_symlink(),
            "{mode}: the user's symlink was replaced"
        );
        drop(daemon);
    }
}

/// The turn replaced a deleted file's directory by a symlink to outside, and the undo must
/// re-create a file beneath it: `outside/a.txt` is never overwritten, nor `outside/sub` filled.
#[test]
fn a_rollback_to_an_older_boundary_through_a_symlinked_directory_stays_inside() {
    for (mode, outcome) in ON_CONFLICT {
        let ws = Workspace::new();
        let outside = Outside::new();
        prepare_d(&ws);
        let daemon = Daemon::start(&ws);
        let boundary = snapshot(ws.root());
        daemon.turn_start("s1", "t1");
        ws.sh("rm d/a.txt && rm -rf d/sub");
        daemon.turn_end("s1");
        daemon.turn_start("s1", "t2");
        link_d_to(&ws, &outside.path());
        daemon.turn_end("s1");
        let outside_before = outside.state();

        let (status, answer) = daemon.rollback("s1", json!({"to": "before", "turn": 1, "on_conflict": mode}));
        outside.assert_unchanged(&outside_before, &format!("after rollback with {mode}"));
        assert_eq!(status, outcome.status(), "{mode}: {answer:#}");
        if outcome == OnConflict::Forced {
            assert_tree_eq(&boundary, &snapshot(ws.root()), "after rollback with force");
        }
        drop(daemon);
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input

/// The endpoints a rollback-like request goes to.
#[derive(Debug, Clone, Copy)]
enum Op {
    Undo,
    Redo,
    Rollback,
}

/// How a request must be refused.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// This status and the API's error with this code (`assert_error`).
    Error(u16, &'static str),
    /// Only this status: the body is not checked.
    Status(u16),
}

/// One refused request: the endpoint, the session, how it is refused, and the body.
type Refused = (Op, &'static str, Refusal, Value);

/// Requests for a session, turn or path that does not exist, and malformed ones (after s1 has
/// ended turn 1, which wrote `a.txt`).
#[rustfmt::skip]
fn unknown_or_malformed() -> [Refused; 11] {
    [
        (Undo,     "nobody",     Error(404, "not_found"),    json!({})),
        (Redo,     "nobody",     Error(404, "not_found"),    json!({})),
        (Rollback, "nobody",     Error(404, "not_found"),    json!({"to": "before", "turn": 1})),
        (Rollback, "s1",         Error(404, "not_found"),    json!({"to": "before", "turn": 7})),
        (Rollback, "s1",         Error(404, "not_found"),    json!({"to": "after", "turn": "no-such-ref"})),
        // A path nothing was recorded at (a typo of a.txt, a name that only prefixes it).
        (Rollback, "s1",         Error(404, "not_recorded"), json!({"to": "before", "turn": 1, "paths": ["a.tx"]})),
        (Rollback, "s1",         Error(404, "not_recorded"), json!({"to": "before", "turn": 1, "paths": ["a"]})),
        (Undo,     "bad%20name", Error(400, "bad_session"),  json!({})),
        // Malformed bodies: no "to", an unknown "to", an unknown on_conflict.
        (Rollback, "s1",         Status(400),                json!({"turn": 1})),
        (Rollback, "s1",         Status(400),                json!({"to": "sideways", "turn": 1})),
        (Undo,     "s1",         Status(400),                json!({"on_conflict": "maybe"})),
    ]
}

/// Every rollback-like request of s1 while its turn 2 is open.
#[rustfmt::skip]
fn with_a_turn_open() -> [Refused; 5] {
    let open = Error(409, "turn_open");
    [
        (Undo,     "s1", open, json!({})),
        (Undo,     "s1", open, json!({"dry_run": true})),
        (Redo,     "s1", open, json!({})),
        (Rollback, "s1", open, json!({"to": "before", "turn": 1})),
        (Rollback, "s1", open, json!({"to": "before", "turn": "current"})),
    ]
}

/// Sends the request and asserts that it is refused as the case says.
#[track_caller]
fn assert_refused(daemon: &Daemon, (op, session, refusal, body): Refused) {
    // Said before the request, so that the output of a failing test names the case.
    eprintln!("{op:?} {session} {body}: expecting {refusal:?}");
    let reply = match op {
        Undo => daemon.undo(session, body),
        Redo => daemon.redo(session, body),
        Rollback => daemon.rollback(session, body),
    };
    match refusal {
        Error(status, code) => assert_error(status, code, reply),
        Status(status) => assert_eq!(reply.0, status, "{op:?} {session}: {:#}", reply.1),
    }
}

const BAD_PATHS: [&str; 10] = [
    "../x",
    "a/../../x",
    "..",
    "/etc/passwd",
    ".git/config",
    ".git",
    "a\\x00b",
    "./a",
    "a//b",
    "",
];

/// Paths that could leave the root or reach `.git/` are refused with 400 `bad_path`, on every
/// rollback-like endpoint, dry run or not, and nothing changes.
#[test]
fn paths_outside_the_tracked_tree_are_refused() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    ws.write(".git/config", "[core]\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");
    let (tree, stat) = (snapshot(ws.root()), marks(ws.root()));

    for bad in BAD_PATHS {
        for dry_run in [false, true] {
            let body = json!({"paths": ["a.txt", bad], "dry_run": dry_run, "on_conflict": "force"});
            let mut with_target = body.clone();
            with_target["to"] = json!("before");
            with_target["turn"] = json!(1);
            assert_error(400, "bad_path", daemon.rollback("s1", with_target));
            assert_error(400, "bad_path", daemon.undo("s1", body.clone()));
            assert_error(400, "bad_path", daemon.redo("s1", body));
        }
    }
    assert_tree_eq(&tree, &snapshot(ws.root()), "after refused requests");
    assert_eq!(marks(ws.root()), stat, "a refused request rewrote files");
    // The undo is still to be done.
    let answer = expect(200, daemon.undo("s1", json!({})));
    assert_eq!(answer["target"]["turn"], 1, "{answer:#}");
    assert_eq!(ws.read("a.txt"), b"a0\n");
    assert_eq!(ws.read(".git/config"), b"[core]\n");
}

/// Unknown sessions and turns are 404; a malformed session name or request is 400.
#[test]
fn unknown_sessions_and_turns_are_not_found() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");

    for case in unknown_or_malformed() {
        assert_refused(&daemon, case);
    }
    assert_eq!(ws.read("a.txt"), b"a1\n", "a refused request changed the tree");
}

/// A session with a turn open cannot roll back (409 `turn_open`); once it ends, it can.
#[test]
fn undo_with_an_open_turn_is_refused() {
    let ws = Workspace::new();
    ws.write("a.txt", "a0\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.write("a.txt", "a1\n");
    daemon.turn_end("s1");
    daemon.turn_start("s1", "t2");
    ws.write("a.txt", "a2\n");

    for case in with_a_turn_open() {
        assert_refused(&daemon, case);
    }
    assert_eq!(ws.read("a.txt"), b"a2\n", "a refused undo changed the tree");

    daemon.turn_end("s1");
    let answer = expect(200, daemon.undo("s1", json!({})));
    assert_eq!(answer["target"]["turn"], 2, "{answer:#}");
    assert_eq!(ws.read("a.txt"), b"a1\n");
}

/// Nothing to undo or redo: 409 with its own code.
#[test]
fn exhausted_chains_say_so() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "t1");
    ws.write("a.txt", "a\n");
    daemon.turn_end("s1");

    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));
    expect(200, daemon.undo("s1", json!({})));
    assert!(!ws.path("a.txt").exists());
    assert_error(409, "nothing_to_undo", daemon.undo("s1", json!({})));
    assert_error(
        409,
        "nothing_to_undo",
        daemon.undo("s1", json!({"dry_run": true})),
    );
    expect(200, daemon.redo("s1", json!({})));
    assert_eq!(ws.read("a.txt"), b"a\n");
    assert_error(409, "nothing_to_redo", daemon.redo("s1", json!({})));
}
