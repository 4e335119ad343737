//! Skipping a test that cannot run on this machine (no root, no tool, no FUSE): it says why
//! and returns; under `CI=true`, where everything must run, a skip is a failure. The line goes
//! to the process's stderr itself, past the harness's capture, so `cargo test` shows it beside
//! the test's `ok` (a captured `eprintln!` would vanish with a passing test's output).

/// Whether this is a CI run (`CI=true`), where nothing may skip.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Prints `skipped: TEST: WHY` (the test then returns), or fails under `CI=true`.
#[track_caller]
pub fn skip(why: &str) {
    assert!(!on_ci(), "CI=true: this test may not skip: {why}");
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    let line = format!("skipped: {test}: {why}\n");
    // `io::stderr()` written to directly is not captured, unlike `eprintln!`.
    use std::io::Write;
    let _ = std::io::stderr().write_all(line.as_bytes());
}
