//! G3 for permission bits: a version records `mode & 07777`, a `chmod` alone is a change, and
//! every rollback puts the bits back exactly (a 0600 secret never comes back world-readable),
//! whatever the daemon's umask.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::process::{Output, Stdio};

use crate::common::*;
use serde_json::{Value, json};

/// `filewatchd --state-dir STATE exec -- ARGS...` in the root, as an agent's shell runs it.
fn exec(ws: &Workspace, args: &[&str]) -> Output {
    let mut cmd = ws.command();
    cmd.arg("--state-dir")
        .arg(ws.state_dir())
        .args(["exec", "--"])
        .args(args)
        .stdin(Stdio::null());
    let out = run_to_end(cmd);
    assert_eq!(
        out.status.code(),
        Some(0),
        "exec {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The permission bits of a path in the workspace (not following a symlink).
fn mode_of(ws: &Workspace, rel: &str) -> u32 {
    let meta = std::fs::symlink_metadata(ws.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    meta.permissions().mode() & 0o7777
}

/// The permission bits of every regular file beneath the root.
fn modes(ws: &Workspace) -> BTreeMap<String, String> {
    let tree = snapshot(ws.root());
    tree.iter()
        .filter(|(_, entry)| matches!(entry, Entry::File { .. }))
        .map(|(path, _)| (path.clone(), format!("{:04o}", mode_of(ws, path))))
        .collect()
}

/// Writes `rel` with `bytes` and sets its bits.
fn write_with_mode(ws: &Workspace, rel: &str, bytes: &str, mode: u32) {
    ws.write(rel, bytes);
    std::fs::set_permissions(ws.path(rel), std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// `.env` made 0600, removed by a command the agent ran, undone from the CLI. It comes back
/// 0600 (it came back 0644: a secret made world-readable by an undo), and
/// its history shows the bits.
#[test]
fn an_undo_from_the_cli_brings_a_0600_secret_back_0600() {
    let ws = Workspace::new();
    ws.sh("printf 'API_KEY=abc\\n' > .env && chmod 600 .env");
    let daemon = Daemon::start(&ws);

    exec(&ws, &["rm", ".env"]);
    assert!(!ws.path(".env").exists());
    let undone = cli_state(&ws, &["undo"]);
    assert_eq!(
        undone.status.code(),
        Some(0),
        "undo: {}",
        String::from_utf8_lossy(&undone.stderr)
    );

    assert_eq!(ws.read(".env"), b"API_KEY=abc\n");
    assert_eq!(format!("{:04o}", mode_of(&ws, ".env")), "0600");
    let history = daemon.history(".env");
    let shown: Vec<&Value> = versions(&history).iter().map(|v| &v["mode"]).collect();
    assert_eq!(
        shown,
        [&json!("0600"), &Value::Null, &json!("0600")],
        "{history:#}"
    );
    let printed = cli_state_text(&ws, &["history", ".env"]);
    assert!(printed.contains(" 0600"), "{printed}");
}

/// A file of mode 000 removed by a turn, and one the turn created with mode 000 (root reads
/// both): the undo and the redo each give back exactly the bits of their boundary.
#[test]
fn mode_000_files_keep_their_bits_through_undo_and_redo() {
    let ws = Workspace::new();
    write_with_mode(&ws, "locked.txt", "locked away\n", 0o000);
    let daemon = Daemon::start(&ws);
    let before = (snapshot(ws.root()), modes(&ws));

    daemon.turn_start("s1", "lock and unlock");
    ws.sh("rm locked.txt && printf 'new\\n' > new.txt && chmod 000 new.txt");
    let turn = daemon.turn_end("s1");
    let after = (snapshot(ws.root()), modes(&ws));

    all_done(&rollback_applied(daemon.undo("s1", json!({}))));
    assert_tree_eq(&before.0, &snapshot(ws.root()), "after the undo");
    assert_eq!(modes(&ws), before.1, "the bits after the undo");

    all_done(&rollback_applied(daemon.redo("s1", json!({}))));
    assert_tree_eq(&after.0, &snapshot(ws.root()), "after the redo");
    assert_eq!(modes(&ws), after.1, "the bits after the redo");
    assert_eq!(change(&turn, "new.txt")["mode"], "0000", "{turn:#}");
}

/// `exec -- chmod 600 src/main.rs` (and a set-user-ID bit, and a sticky one) is a turn that
/// modified those files, `mode_changed` with the new bits; the undo sets the old bits back
/// without rewriting the content (`set_mode`), and the redo the new ones.
#[test]
fn a_chmod_alone_is_a_modified_turn_and_its_undo_sets_the_old_bits_back() {
    let ws = Workspace::new();
    write_with_mode(&ws, "src/main.rs", "fn main() {}\n", 0o644);
    write_with_mode(&ws, "tool", "#!/bin/sh\n", 0o755);
    write_with_mode(&ws, "shared", "everyone\n", 0o666);
    let daemon = Daemon::start(&ws);
    let before = modes(&ws);

    let out = exec(
        &ws,
        &[
            "sh",
            "-c",
            "chmod 600 src/main.rs && chmod 4755 tool && chmod 1664 shared",
        ],
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("+0 ~3 -0"), "{summary}");
    let turn = daemon.turn("exec", 1, false);
    for (path, mode) in [("src/main.rs", "0600"), ("tool", "4755"), ("shared", "1664")] {
        let listed = change(&turn, path);
        assert_eq!(listed["change"], "modified", "{path}: {turn:#}");
        assert_eq!(
            (&listed["mode"], &listed["mode_changed"]),
            (&json!(mode), &json!(true))
        );
    }
    let shown = cli_state_text(&ws, &["show", "--session", "exec", "--no-pager", "1"]);
    assert!(shown.contains("mode 0600"), "{shown}");
    let after = modes(&ws);
    let marks_before_undo = marks(ws.root());

    let answer = rollback_applied(daemon.undo("exec", json!({})));
    all_done(&answer);
    assert_eq!(action(&answer, "src/main.rs")["action"], "set_mode", "{answer:#}");
    assert_eq!(modes(&ws), before, "the bits after the undo");
    let marks_after_undo = marks(ws.root());
    assert_eq!(
        marks_after_undo["src/main.rs"].ino, marks_before_undo["src/main.rs"].ino,
        "a chmod's undo does not rewrite the file"
    );

    all_done(&rollback_applied(daemon.redo("exec", json!({}))));
    assert_eq!(modes(&ws), after, "the bits after the redo");
}

/// The bits a turn's undo restores on each path it takes (re-created, rewritten, bits set),
/// for files of modes the default (0644, 0755) never gives.
fn undo_restores_every_mode_under(umask: &str) {
    let ws = Workspace::new();
    let cases = [
        ("open.txt", 0o666),
        ("group.txt", 0o640),
        ("odd.txt", 0o604),
        ("all.sh", 0o777),
        ("secret.txt", 0o600),
        ("readonly.txt", 0o444),
    ];
    for (name, mode) in cases {
        for dir in ["removed", "rewritten", "chmodded"] {
            write_with_mode(&ws, &format!("{dir}/{name}"), "before\n", mode);
        }
    }
    let script = format!("umask {umask} && exec \"$0\" \"$@\"");
    let daemon = Daemon::start_command(&ws, ws.wrapped_serve("sh", &["-c", &script]));
    let before = (snapshot(ws.root()), modes(&ws));

    daemon.turn_start("s1", "change every file");
    ws.sh("rm -r removed && for f in rewritten/*; do rm -f \"$f\"; echo after > \"$f\"; done && chmod 750 chmodded/*");
    daemon.turn_end("s1");

    all_done(&rollback_applied(daemon.undo("s1", json!({}))));
    assert_tree_eq(&before.0, &snapshot(ws.root()), "after the undo");
    assert_eq!(
        modes(&ws),
        before.1,
        "the bits after the undo, daemon umask {umask}"
    );
}

#[test]
fn a_umask_of_077_does_not_narrow_what_an_undo_writes() {
    undo_restores_every_mode_under("077");
}

#[test]
fn a_umask_of_000_does_not_widen_what_an_undo_writes() {
    undo_restores_every_mode_under("000");
}

/// A time rollback (no session: the user's own chmods, outside any turn) and its redo.
#[test]
fn a_time_rollback_and_its_redo_put_the_bits_of_their_moment_back() {
    let ws = Workspace::new();
    write_with_mode(&ws, "key.pem", "-----BEGIN KEY-----\n", 0o400);
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let t0 = time_mark();
    let before = modes(&ws);

    ws.sh("chmod 644 key.pem && printf 'x\\n' > made.txt && chmod 2640 made.txt");
    daemon.turn_start("s1", "barrier");
    daemon.turn_end("s1");
    let after = modes(&ws);

    all_done(&rollback_applied(daemon.rollback_in_time(json!({"at": t0}))));
    assert_eq!(modes(&ws), before, "the bits at the time rolled back to");
    all_done(&rollback_applied(daemon.redo_in_time(json!({}))));
    assert_eq!(modes(&ws), after, "the bits after the time redo");
}

/// A failed undo's put-back: the turn created `new.key` 0600 and rewrote three files; the
/// undo removes `new.key`, then its third rename fails (ENOSPC, injected), and everything it
/// changed is put back: `new.key` re-created 0600, not 0644.
#[test]
fn the_put_back_of_a_failed_undo_restores_the_bits_too() {
    let ws = Workspace::new();
    for name in ["a.txt", "b.txt", "c.txt"] {
        write_with_mode(&ws, name, "before\n", 0o640);
    }
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s", "the bad turn");
    ws.sh("for f in a.txt b.txt c.txt; do echo after > $f; done && (umask 077 && echo k > new.key)");
    daemon.turn_end("s");
    let after = (snapshot(ws.root()), modes(&ws));
    assert_eq!(after.1["new.key"], "0600");

    let inject = "inject=renameat2:error=ENOSPC:when=3";
    let Some(strace) = Strace::attach(daemon.pid, &["-e", "trace=renameat2", "-e", inject]) else {
        return;
    };
    let (status, body) = daemon.undo("s", json!({}));
    strace.detach();
    assert_eq!(status, 503, "{body:#}");
    assert_eq!(body["error"]["reverted"], true, "{body:#}");
    assert_tree_eq(&after.0, &snapshot(ws.root()), "after the put-back");
    assert_eq!(modes(&ws), after.1, "the bits after the put-back");
}
