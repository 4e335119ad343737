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

#[test]
fn without_print_url_it_asks_xdg_open_and_prints_the_link() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let bin = tempfile::tempdir().expect("tempdir");
    let seen = bin.path().join("seen");
    let opener = bin.path().join("xdg-open");
    std::fs::write(
        &opener,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > {}.tmp && mv {0}.tmp {0}\n",
            seen.display()
        ),
    )
    .expect("write the stand-in opener");
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = cli_state_with_env(&ws, &["ui"], &[("PATH", &path), ("NO_COLOR", "1")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        stdout.starts_with("Asked xdg-open to open the review page"),
        "{stdout}"
    );
    let opened = poll_until(std::time::Duration::from_secs(10), || {
        std::fs::read_to_string(&seen).ok()
    })
    .expect("xdg-open was run");
    assert!(stdout.contains(&format!("  {opened}\n")), "{stdout} / {opened}");
    let path = opened
        .strip_prefix(&format!("http://127.0.0.1:{}", daemon.port))
        .expect("the daemon's origin");
    let host = daemon.host();
    assert_eq!(daemon.raw("GET", path, &[("Host", &host)], None).status, 303);
}
