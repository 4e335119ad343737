//! `projects` lists every workspace with a state directory, running or not; `forget` deletes
//! one's state, never while its daemon runs, and never without being asked.

use crate::common::*;
use serde_json::Value;

#[track_caller]
fn run_ok(ws: &Workspace, args: &[&str]) -> String {
    let out = ws.cli(".", args);
    assert!(out.status.success(), "{args:?}: {out:?}\n{}", ws.daemon_logs());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn listed(ws: &Workspace) -> Vec<Value> {
    let text = run_ok(ws, &["projects", "--json"]);
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    answer["projects"].as_array().cloned().unwrap_or_default()
}

#[test]
fn projects_lists_running_and_stopped_workspaces_with_sizes() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    assert!(listed(&ws).is_empty());
    let other = tempfile::Builder::new()
        .prefix("fwd-other-")
        .tempdir()
        .expect("tempdir");
    let other_root = other.path().canonicalize().expect("canonical");
    std::fs::write(other_root.join("big.bin"), noise(1, 200_000)).expect("write");
    ws.write("a.txt", "a\n");
    let other_arg = other_root.to_str().expect("utf-8");
    run_ok(&ws, &["start", "--root", other_arg]);
    run_ok(&ws, &["stop", "--root", other_arg]);
    run_ok(&ws, &["start"]);
    let daemon = ws.answering(ws.root()).expect("running");

    let projects = listed(&ws);
    assert_eq!(projects.len(), 2, "{projects:#?}");
    let of = |root: &std::path::Path| {
        projects
            .iter()
            .find(|p| p["root"] == root.to_str().expect("utf-8"))
            .unwrap_or_else(|| panic!("{} not listed: {projects:#?}", root.display()))
    };
    let running = of(ws.root());
    assert_eq!(
        (running["running"].as_bool(), running["pid"].as_u64()),
        (Some(true), Some(u64::from(daemon.pid)))
    );
    assert_eq!(running["url"], daemon.url.as_str());
    let stopped = of(&other_root);
    assert_eq!(
        (stopped["running"].as_bool(), &stopped["pid"]),
        (Some(false), &Value::Null)
    );
    // The stopped one holds the 200 kB of noise (it does not compress).
    assert!(stopped["disk_bytes"].as_u64() > Some(200_000), "{stopped:#}");
    assert!(running["disk_bytes"].as_u64() > Some(0), "{running:#}");
    for p in [running, stopped] {
        assert!(
            p["last_activity"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{p:#}"
        );
    }

    let table = run_ok(&ws, &["projects"]);
    let line_of = |root: &std::path::Path| {
        let root = root.display().to_string();
        table
            .lines()
            .find(|l| l.starts_with(&format!("{root} ")))
            .unwrap_or_else(|| panic!("{root} not in:\n{table}"))
            .to_string()
    };
    let line = line_of(ws.root());
    assert!(
        line.contains(&format!("running pid {}", daemon.pid)) && line.contains("just now"),
        "{table}"
    );
    let line = line_of(&other_root);
    assert!(line.contains("stopped") && line.contains(" KiB"), "{table}");
}

#[test]
fn forget_refuses_while_running_and_without_asking_then_deletes_after_stop() {
    let ws = Workspace::new();
    let _reaper = ws.reaper();
    ws.write("a.txt", "a\n");
    run_ok(&ws, &["start"]);
    let state = ws.home_state_of(ws.root()).expect("state directory");
    let root = ws.root().to_str().expect("utf-8");

    for args in [&["forget", root][..], &["forget", root, "--yes"][..]] {
        let out = ws.cli(".", args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(
            stderr.contains("is running") && stderr.contains("filewatchd stop"),
            "{stderr}"
        );
        assert!(
            state.join("index.sqlite").exists(),
            "{args:?} deleted a running daemon's state"
        );
    }

    run_ok(&ws, &["stop"]);
    // No terminal to ask on: refused unless --yes.
    let out = ws.cli(".", &["forget", root]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert!(state.exists(), "forgot without asking");

    let said = run_ok(&ws, &["forget", root, "--yes"]);
    assert!(said.starts_with(&format!("forgot {root}")), "{said}");
    assert!(!state.exists(), "the state directory is still there");
    assert!(listed(&ws).is_empty());
    let out = ws.cli(".", &["forget", root, "--yes"]);
    assert_eq!(out.status.code(), Some(1), "forgetting twice: {out:?}");
}
