//! CLI conventions: a user's mistake is said once and plainly. A missing config file is
//! one line, not the OS error twice; a refused rollback, an unknown session or a bad ignore
//! line is INFO in the daemon's log, WARN and ERROR being kept for faults.

use crate::common::*;

#[test]
fn a_users_mistakes_are_info_not_warn_in_the_daemons_log() {
    let ws = Workspace::new();
    ws.write(".gitignore", "build/\n{unclosed\n");
    let daemon = Daemon::start_with_env(&ws, &[], &[("RUST_LOG", "filewatchd=info")]);
    daemon.turn_start("s", "one");
    ws.write("a.txt", "from the turn\n");
    daemon.turn_end("s");
    ws.write("a.txt", "from the user\n");

    // Refused because of conflicts, an unknown session, nothing to redo.
    assert_eq!(cli_state(&ws, &["undo", "--session", "s"]).status.code(), Some(3));
    assert_eq!(
        cli_state(&ws, &["undo", "--session", "nobody"]).status.code(),
        Some(1)
    );
    assert_eq!(cli_state(&ws, &["redo", "--session", "s"]).status.code(), Some(1));
    assert_eq!(
        cli_state(&ws, &["turn", "end", "--session", "nobody"])
            .status
            .code(),
        Some(1)
    );

    let log = daemon.stderr();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert!(
        warned.is_empty(),
        "a user's mistake logged as a fault:\n{}",
        warned.join("\n")
    );
    // Each is said, at INFO: the log was read and the refusals reached it.
    for said in [
        "rollback refused error=no session named \"nobody\"",
        "rollback refused error=session \"s\" has nothing to redo",
        "ignore file has bad lines",
    ] {
        assert!(
            log.lines().any(|l| l.contains(" INFO ") && l.contains(said)),
            "no INFO {said:?}:\n{log}"
        );
    }
}

#[test]
fn a_missing_config_file_is_said_once_and_a_config_that_is_no_file_is_never_read() {
    let ws = Workspace::new();
    let nope = ws.home().join("nope.toml");
    let nope = nope.to_str().unwrap();
    let state = ws.state_dir().to_str().unwrap();
    let runs: [&[&str]; 2] = [
        &["--config", nope, "--state-dir", state],
        &["serve", "--config", nope, "--state-dir", state],
    ];
    for args in runs {
        let out = ws.cli(".", args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.matches("no such file").count(), 1, "{args:?}: {stderr}");
        assert_eq!(stderr.matches(nope).count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("os error"), "{args:?}: {stderr}");
    }
    // A config that is not a regular file (a directory, a FIFO that would hang a reader,
    // a symlink to a device that never ends) is refused by name, once, without a read.
    let fifo = ws.home().join("config.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let endless = ws.home().join("endless.toml");
    std::os::unix::fs::symlink("/dev/zero", &endless).unwrap();
    for config in [ws.home(), fifo.as_path(), endless.as_path()] {
        let config = config.to_str().unwrap();
        let out = ws.cli(".", &["--config", config, "--state-dir", state]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.matches("is not a regular file").count(), 1, "{stderr}");
    }
}
