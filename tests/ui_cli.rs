//! `filewatchd ui`: the real binary asks the daemon for a one-time login link.

use crate::common::*;

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

/// No other local user may catch the login code: the opener runs with the page's path, never
/// the code (which any local user reads in `/proc/PID/cmdline` or `environ` while it runs); the
/// page it gets, readable by this user only, leads to a link that logs in.
#[test]
fn without_print_url_the_opener_gets_a_private_page_and_never_the_code() {
    let ws = Workspace::new();
    let daemon = Daemon::start(&ws);
    let bin = tempfile::tempdir().expect("tempdir");
    let seen = bin.path().join("seen");
    let opener = bin.path().join("xdg-open");
    // Its arguments, then its whole environment, recorded once complete.
    let record = format!(
        "#!/bin/sh\n{{ printf '%s\\n' \"$@\"; echo --env--; env; }} > {0}.tmp && mv {0}.tmp {0}\n",
        seen.display()
    );
    std::fs::write(&opener, record).expect("write the stand-in opener");
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
    let recorded = poll_until(std::time::Duration::from_secs(10), || {
        std::fs::read_to_string(&seen).ok()
    })
    .expect("xdg-open was run");
    assert!(
        !recorded.contains("code="),
        "the link reached the opener: {recorded}"
    );
    let (argv, _env) = recorded.split_once("--env--\n").expect("argv, then env");
    let page = std::path::PathBuf::from(argv.trim_end());
    assert!(
        stdout.contains(&format!("  file://{}\n", page.display())),
        "{stdout}"
    );
    let meta = std::fs::symlink_metadata(&page).expect("the page");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
        0o600
    );
    let dir_mode = std::fs::metadata(page.parent().expect("its directory"))
        .expect("stat")
        .permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&dir_mode) & 0o777, 0o700);

    let html = std::fs::read_to_string(&page).expect("read the page");
    let prefix = format!("url=http://127.0.0.1:{}", daemon.port);
    let link = html
        .split(&prefix)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a refresh to the daemon's origin")
        .replace("&amp;", "&");
    let code = link.split("code=").nth(1).expect("a code in the link");
    assert_eq!(code.len(), 64, "{link}");
    assert!(
        !recorded.contains(code),
        "the code reached the opener: {recorded}"
    );
    assert!(!stdout.contains(code), "{stdout}");
    let host = daemon.host();
    let login = daemon.raw("GET", &link, &[("Host", &host)], None);
    assert_eq!(login.status, 303, "the page's link does not log in");
}
