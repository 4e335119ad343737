//! The review page in a real browser (issue 18): headless Chromium driven by playwright-core
//! under node's test runner (tests/ui/*.test.mjs), against this very daemon binary, in a
//! workspace whose turns are real bash commands run by `filewatchd exec`. Skipped, saying why,
//! when Chromium or tests/ui/node_modules is missing (`.ci/run` installs both).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

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

#[test]
fn the_review_page_works_in_a_browser() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(chromium) = chromium() else {
        eprintln!("skipped: no Chromium (apt-get install chromium; .ci/run does)");
        return;
    };
    if !repo.join("tests/ui/node_modules/playwright-core").is_dir() {
        eprintln!("skipped: tests/ui/node_modules is missing (run `npm ci` in tests/ui; .ci/run does)");
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
    let out = cli_state(&ws, &["ui", "--print-url"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let out = Command::new("node")
        .args(["--test", "--test-concurrency=1", "tests/ui/review.test.mjs"])
        .current_dir(repo)
        .env("FILEWATCHD_UI_LOGIN_URL", &url)
        .env("FILEWATCHD_UI_ROOT", ws.root())
        .env("FILEWATCHD_UI_API", &daemon.url)
        .env("FILEWATCHD_UI_TOKEN", &daemon.token)
        .env("FILEWATCHD_CHROMIUM", &chromium)
        .output()
        .expect("node is needed for the browser tests (Node.js 20 or later)");
    // What node ran and skipped, shown with `--nocapture`.
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "node --test tests/ui/review.test.mjs failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
