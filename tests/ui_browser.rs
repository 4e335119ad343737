//! The review page in a real browser: headless Chromium driven by playwright-core
//! under node's test runner (tests/ui/*.test.mjs), against this very daemon binary, in a
//! workspace whose turns are real bash commands run by `filewatchd exec`. Each test here has a
//! workspace and daemon of its own and runs one of those files. Skipped, saying why, when
//! Chromium or tests/ui/node_modules is missing (`.ci/run` installs both; under `CI=true` that
//! is a failure).

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// The Chromium to drive, if the machine has one.
fn chromium() -> Option<String> {
    let from_env = std::env::var("FILEWATCHD_CHROMIUM").ok();
    from_env
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(String::from))
        .find(|path| Path::new(path).is_file())
}

/// Runs `bash -c SCRIPT` as one turn of `session` labelled `label`.
fn exec_turn(ws: &Workspace, session: &str, label: &str, script: &str) {
    let mut cmd = ws.command();
    cmd.arg("--state-dir").arg(ws.state_dir());
    cmd.args([
        "exec",
        "--session",
        session,
        "--label",
        label,
        "--",
        "bash",
        "-c",
        script,
    ]);
    let out = run_to_completion(cmd);
    assert!(
        out.status.success(),
        "exec {label}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Chromium to drive and the repository, or `None` (said as a skip) when the tools are missing.
fn browser_tools() -> Option<(String, &'static Path)> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(chromium) = chromium() else {
        skip("no Chromium (apt-get install chromium; .ci/run does)");
        return None;
    };
    if !repo.join("tests/ui/node_modules/playwright-core").is_dir() {
        skip("tests/ui/node_modules is missing (run `npm ci` in tests/ui; .ci/run does)");
        return None;
    }
    Some((chromium, repo))
}

/// Runs `node --test tests/ui/FILE` against `daemon` of `ws`, logged in with `login_url`;
/// fails with node's report when a browser test fails.
fn run_browser_tests(file: &str, ws: &Workspace, daemon: &Daemon, login_url: &str) {
    let Some((chromium, repo)) = browser_tools() else {
        return;
    };
    let out = Command::new("node")
        .args(["--test", "--test-concurrency=1", &format!("tests/ui/{file}")])
        .current_dir(repo)
        .env("FILEWATCHD_UI_LOGIN_URL", login_url)
        .env("FILEWATCHD_UI_ROOT", ws.root())
        .env("FILEWATCHD_UI_API", &daemon.url)
        .env("FILEWATCHD_UI_TOKEN", &daemon.token)
        .env("FILEWATCHD_UI_BIN", BIN)
        .env("FILEWATCHD_UI_STATE", ws.state_dir())
        .env("FILEWATCHD_UI_HOME", ws.home())
        .env("FILEWATCHD_CHROMIUM", &chromium)
        .output()
        .expect("node is needed for the browser tests (Node.js 20 or later)");
    // What node ran and skipped, shown with `--nocapture`.
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "node --test tests/ui/{file} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `filewatchd ui --print-url`: a one-time login link.
fn login_url(ws: &Workspace) -> String {
    let out = cli_state(ws, &["ui", "--print-url"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_review_page_works_in_a_browser() {
    if browser_tools().is_none() {
        return;
    }
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    exec_turn(
        &ws,
        "s1",
        "write the notes",
        "printf 'one\\ntwo\\nthree\\n' > notes.txt; echo hello > readme.md",
    );
    exec_turn(
        &ws,
        "s1",
        "edit the notes\nand add a file",
        "sed -i 's/two/TWO/' notes.txt; echo x > extra.txt",
    );
    // Written outside any turn, between turns 2 and 3 (the start of turn 3 records it).
    ws.write("scratch.txt", "my own note\n");
    exec_turn(
        &ws,
        "s1",
        "touch up the readme",
        "echo more >> readme.md; echo 1 > counter.txt",
    );
    exec_turn(
        &ws,
        "s2",
        "another agent's turn",
        "mkdir -p other && echo 2 > other/two.txt",
    );
    exec_turn(
        &ws,
        "s3",
        "generate many files",
        "for i in $(seq -w 1 600); do echo $i > many-$i.txt; done",
    );
    run_browser_tests("review.test.mjs", &ws, &daemon, &login_url(&ws));
}

/// Where the page is and what it says of a long timeline: session s1 has 30 turns (turn 1
/// writes the indented `code.py`, every turn appends to `log.txt`; turn 30 is undone), s2 two
/// and s3 one (writing `lone.txt`, one line of 400 characters; the pin `p1` between s2's turns, the workspace rolled back to it, then redone);
/// `log.txt` is restored to its first version. tests/ui/views.test.mjs says what is checked.
#[test]
fn the_review_page_keeps_its_place_and_speaks_as_the_cli() {
    if browser_tools().is_none() {
        return;
    }
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    exec_turn(
        &ws,
        "s1",
        "write the code",
        "printf 'def f():\\n    return 1\\n\\tif x:\\n\\t\\tpass\\n' > code.py; echo 1 > log.txt",
    );
    for n in 2..=30 {
        exec_turn(&ws, "s1", &format!("step {n}"), &format!("echo {n} >> log.txt"));
    }
    cli_state_ok(&ws, &["undo", "--session", "s1"]);
    exec_turn(&ws, "s2", "another agent's turn", "echo 2 > other.txt");
    cli_state_ok(&ws, &["pin", "p1"]);
    exec_turn(&ws, "s2", "after the pin", "echo late > late.txt");
    // One line of 400 characters with no space: the narrow window's test opens it.
    exec_turn(
        &ws,
        "s3",
        "a lone turn",
        "printf '3%.0s' $(seq 400) > lone.txt; echo >> lone.txt",
    );
    cli_state_ok(&ws, &["rollback", "--pin", "p1"]);
    cli_state_ok(&ws, &["redo", "--time"]);
    let history = cli_state_json(&ws, &["history", "log.txt", "--json"]);
    let first = history["versions"]
        .as_array()
        .and_then(|versions| versions.iter().map(|v| v["seq"].as_i64()).min().flatten())
        .expect("log.txt has versions");
    cli_state_ok(&ws, &["restore", "log.txt", "--seq", &first.to_string()]);
    run_browser_tests("views.test.mjs", &ws, &daemon, &login_url(&ws));
}
