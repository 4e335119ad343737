//! `filewatchd ui` (issue 18): the real binary asks the daemon for a one-time login link.

mod common;

use common::*;

#[test]
fn print_url_prints_one_link_that_logs_in_once() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let out = cli_state(&ws, &["ui", "--print-url"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout:?}");
    assert!(stdout.ends_with('\n'));
    let prefix = format!("http://127.0.0.1:{}", daemon.port);
    let path = lines[0].strip_prefix(&prefix).expect("the daemon's own origin");
    assert!(path.starts_with("/ui/login?code="), "{path}");
    assert!(!stdout.contains(&daemon.token));

    let host = daemon.host();
    let first = daemon.raw("GET", path, &[("Host", &host)], None);
    assert_eq!(first.status, 303);
    assert!(
        first
            .header("Set-Cookie")
            .is_some_and(|c| c.starts_with("filewatchd_ui="))
    );
    let again = daemon.raw("GET", path, &[("Host", &host)], None);
    assert_eq!(again.status, 403);
}

#[test]
fn without_a_daemon_it_says_what_to_do() {
    let ws = Workspace::new();
    let out = cli_state(&ws, &["ui", "--print-url"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("filewatchd serve") || stderr.contains("daemon"),
        "{stderr}"
    );
}
