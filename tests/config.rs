//! `.filewatchd.toml`: mistakes are errors that name the key.

use crate::common::*;

#[track_caller]
fn assert_refused_naming(ws: &Workspace, key: &str) {
    let (status, stderr) = ws.serve_expecting_exit(&[]);
    assert!(!status.success(), "daemon accepted the config; stderr:\n{stderr}");
    assert!(stderr.contains(key), "{key} not named:\n{stderr}");
}

#[test]
fn unknown_key_is_refused_by_name() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "colour = \"red\"\n");
    assert_refused_naming(&ws, "colour");
}

#[test]
fn bad_value_is_refused_by_name() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "max_file_size = \"big\"\n");
    assert_refused_naming(&ws, "max_file_size");
}

#[test]
fn port_from_the_config_is_used() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", format!("port = {port}\n"));
    let daemon = Daemon::start(&ws);
    assert_eq!(daemon.port, port);
}
