//! What capture does not do twice (work the agent would pay for). Content whose hash is the
//! latest version's (a rollback's own writes, a byte-for-byte rewrite) is read and hashed but not
//! compressed or stored again, and the record stays exact. (A hinted file whose stat the index
//! proves unchanged is not even opened: `fs::read`'s unit tests, since no event the watcher asks
//! for leaves a file's stat as it was.)

use crate::common::*;
use serde_json::Value;

fn counter(daemon: &Daemon, name: &str) -> u64 {
    let status = daemon.status();
    status["watcher"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("status has no watcher.{name}: {status:#}"))
}

fn versions(daemon: &Daemon, path: &str) -> usize {
    daemon.history(path)["versions"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_byte_for_byte_rewrite_is_hashed_not_stored_again() {
    let ws = Workspace::new();
    ws.write("a.txt", "alpha\nbeta\n");
    let daemon = Daemon::start(&ws);
    let before = (versions(&daemon, "a.txt"), counter(&daemon, "unchanged_by_hash"));
    let store = daemon.status()["store_bytes"].as_u64();

    // sed writes a new file and renames it over the old one: a new inode, the same bytes.
    ws.sh("sed -i 's/zzz/yyy/' a.txt");
    assert_eq!(
        versions(&daemon, "a.txt"),
        before.0,
        "no new version for the same bytes"
    );
    assert!(
        counter(&daemon, "unchanged_by_hash") > before.1,
        "the rewrite was stored again"
    );
    assert_eq!(daemon.status()["store_bytes"].as_u64(), store);

    // A real change after it is recorded as ever.
    ws.sh("sed -i 's/beta/gamma/' a.txt");
    let history = daemon.history("a.txt");
    assert_eq!(history["versions"].as_array().map(Vec::len), Some(before.0 + 1));
    assert_eq!(ws.read("a.txt"), b"alpha\ngamma\n");
}

#[test]
fn an_undos_own_writes_are_not_stored_again() {
    let ws = Workspace::new();
    for i in 0..40 {
        ws.write(format!("src/f{i:02}.rs"), format!("fn f{i}() {{}}\n"));
    }
    let daemon = Daemon::start(&ws);
    daemon.turn_start("s1", "edit forty files");
    ws.sh("for f in src/*.rs; do echo '// edited' >> \"$f\"; done");
    daemon.turn_end("s1");
    let before = counter(&daemon, "unchanged_by_hash") + counter(&daemon, "unchanged_by_stat");

    let (code, undo) = daemon.undo("s1", serde_json::json!({}));
    assert_eq!(code, 200, "{undo:#}");
    // The barrier of a history query: every event of the undo's writes has been handled.
    let history = daemon.history("src/f00.rs");
    let last = history["versions"].as_array().and_then(|v| v.last()).cloned();
    assert_eq!(
        last.as_ref().map(|v| &v["origin"]),
        Some(&Value::from("rollback")),
        "{history:#}"
    );
    let after = counter(&daemon, "unchanged_by_hash") + counter(&daemon, "unchanged_by_stat");
    assert!(
        after >= before + 40,
        "the undo's 40 writes were stored again ({before} → {after} skipped)"
    );
    for i in 0..40 {
        assert_eq!(
            ws.read(format!("src/f{i:02}.rs")),
            format!("fn f{i}() {{}}\n").into_bytes()
        );
        assert_eq!(
            versions(&daemon, &format!("src/f{i:02}.rs")),
            3,
            "added, edited, undone"
        );
    }
}
