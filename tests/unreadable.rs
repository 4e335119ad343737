//! A file the daemon cannot read: it is recorded by what `stat` says, so
//! its turn lists it (`unreadable: true`) and a rollback that would touch it names it per path
//! (code `unreadable`), never silently leaves it out.
//!
//! Root reads every file, so the daemon runs as `nobody` (`setpriv`) on a workspace and state
//! directory it owns; a file of mode 000, and one of root's with mode 0600, are what it cannot
//! read. Skipped where the test does not run as root or `setpriv` is missing.

use std::process::Command;

use crate::common::*;
use serde_json::json;

const AS_NOBODY: &[&str] = &["--reuid=nobody", "--regid=nogroup", "--clear-groups"];

/// The daemon as `nobody`, the workspace, its state and home handed to `nobody` first.
fn daemon_as_nobody(ws: &Workspace) -> Option<Daemon> {
    let root = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&root.stdout).trim() != "0" {
        skip("needs root to run the daemon as another user");
        return None;
    }
    let works = Command::new("setpriv").args(AS_NOBODY).arg("true").status();
    if !works.is_ok_and(|s| s.success()) {
        skip("setpriv cannot run a command as nobody here");
        return None;
    }
    for dir in [ws.root(), ws.state_dir(), ws.home()] {
        let owned = Command::new("chown")
            .arg("-R")
            .arg("nobody:nogroup")
            .arg(dir)
            .status();
        assert!(owned.is_ok_and(|s| s.success()), "chown {}", dir.display());
    }
    Some(Daemon::start_command(ws, ws.wrapped_serve("setpriv", AS_NOBODY)))
}

/// The CLI as the daemon's user: root's CLI refuses a state directory another user owns
/// (docs/security.md), as it should.
fn cli_as_nobody(ws: &Workspace, args: &[&str]) -> String {
    let base = ws.command();
    let mut cmd = Command::new("setpriv");
    cmd.args(AS_NOBODY).arg(base.get_program()).args(base.get_args());
    cmd.args(args).arg("--state-dir").arg(ws.state_dir());
    for (key, value) in base.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    if let Some(dir) = base.get_current_dir() {
        cmd.current_dir(dir);
    }
    let out = cmd.output().expect("setpriv filewatchd");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "filewatchd {args:?}: {stdout}\n{stderr}");
    stdout
}

/// In alpha's turn a tracked file (nobody's) gets mode 000 and root makes a file of its own
/// with mode 0600: the turn lists both, `unreadable`, without a hash, and `show` says so. The
/// undo would delete or rewrite them: each is a conflict with code `unreadable`, and nothing
/// changes. Later, a rollback to the state in which `secret.txt` was unreadable names it as
/// not restorable.
#[test]
fn an_unreadable_file_is_listed_by_its_turn_and_named_by_a_rollback() {
    let ws = Workspace::new();
    ws.write("secret.txt", "readable at first\n");
    ws.write("keep.txt", "kept\n");
    let Some(daemon) = daemon_as_nobody(&ws) else {
        return;
    };

    daemon.turn_start("alpha", "hide things");
    ws.sh("printf 'hidden\\n' > secret.txt && chmod 000 secret.txt");
    ws.sh("umask 077 && printf 'root only\\n' > roots.txt");
    ws.write("plain.txt", "readable\n");
    let turn = daemon.turn_end("alpha");

    assert_eq!(
        changed_files(&turn),
        set(["secret.txt", "roots.txt", "plain.txt"]),
        "{turn:#}"
    );
    for (path, kind) in [("secret.txt", "modified"), ("roots.txt", "added")] {
        let listed = change(&turn, path);
        assert_eq!(listed["change"], kind, "{turn:#}");
        assert_eq!(listed["unreadable"], true, "{turn:#}");
        assert_eq!(listed.get("hash"), None, "no content, no hash: {turn:#}");
    }
    assert_eq!(change(&turn, "roots.txt")["size"], "root only\n".len());
    assert_eq!(change(&turn, "plain.txt").get("unreadable"), None, "{turn:#}");
    let shown = cli_as_nobody(&ws, &["show", "1", "--session", "alpha"]);
    let line = shown
        .lines()
        .find(|l| l.contains("roots.txt"))
        .unwrap_or_default();
    assert!(line.contains("unreadable"), "{shown}");

    let tree = snapshot(ws.root());
    let (status, refused) = daemon.undo("alpha", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(
        listed_paths(&refused, "conflicts"),
        set(["secret.txt", "roots.txt"]),
        "{refused:#}"
    );
    for path in ["secret.txt", "roots.txt"] {
        let conflict = listed(&refused, "conflicts", path);
        assert_eq!(conflict["code"], "unreadable", "{conflict}");
        assert!(
            conflict["reason"]
                .as_str()
                .is_some_and(|r| r.contains("cannot read")),
            "{conflict}"
        );
    }
    assert_tree_eq(&tree, &snapshot(ws.root()), "after a refused undo");

    // The session's own next turn makes it readable again (a change by anyone else before the
    // session's next write would be theirs to keep: the rollback's target then).
    daemon.turn_start("alpha", "write it again");
    ws.sh("chmod 644 secret.txt");
    ws.write("secret.txt", "written again\n");
    daemon.turn_end("alpha");
    let plan = daemon.rollback("alpha", json!({"to": "after", "turn": 1, "dry_run": true}));
    let plan = plan.1;
    let note = listed(&plan, "not_restorable", "secret.txt");
    assert_eq!(note["code"], "unreadable", "{plan:#}");
    assert!(
        note["reason"]
            .as_str()
            .is_some_and(|r| r.contains("could not read")),
        "{note}"
    );
}

/// `--force` rolls an unreadable file back too, as for any conflict: the undo deletes the file
/// it made and puts back the one it hid. Their mtimes are an hour old, so the recorded stat
/// proves them unchanged and the plan does not open them: they are still conflicts (the plan
/// once took "unchanged since recorded unreadable" for "as recorded", whenever the undo came
/// long enough after the writes).
#[test]
fn a_forced_undo_rolls_unreadable_files_back_too() {
    let ws = Workspace::new();
    ws.write("secret.txt", "readable at first\n");
    let Some(daemon) = daemon_as_nobody(&ws) else {
        return;
    };
    daemon.turn_start("alpha", "hide things");
    ws.sh("printf 'hidden\\n' > secret.txt && chmod 000 secret.txt");
    ws.sh("umask 077 && printf 'root only\\n' > roots.txt");
    ws.sh("touch -m -d '1 hour ago' secret.txt roots.txt");
    daemon.turn_end("alpha");
    let (status, refused) = daemon.undo("alpha", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(
        listed_paths(&refused, "conflicts"),
        set(["secret.txt", "roots.txt"]),
        "{refused:#}"
    );

    let answer = expect(200, daemon.undo("alpha", json!({"on_conflict": "force"})));
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(
        listed_paths(&answer, "conflicts"),
        set(["secret.txt", "roots.txt"]),
        "{answer:#}"
    );
    assert_eq!(ws.read("secret.txt"), b"readable at first\n", "{answer:#}");
    assert!(!ws.path("roots.txt").exists(), "{answer:#}");
}
