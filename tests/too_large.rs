//! G9: a file over `max_file_size` is recorded by size and hash only, and says so.

mod common;

use common::*;

#[test]
fn file_over_max_file_size_is_marked_too_large() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "max_file_size = 1000\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("s1", "big file");
    ws.write("big.bin", vec![b'x'; 5000]);
    ws.write("small.txt", "fits\n");
    let turn = daemon.turn_end("s1");

    let big = change(&turn, "big.bin");
    assert_eq!(big["too_large"], true, "{big}");
    assert_eq!(big["size"], 5000, "{big}");
    assert!(is_hash(&big["hash"]), "{big}");
    let small = change(&turn, "small.txt");
    assert_ne!(small["too_large"], true, "{small}");

    let history = daemon.history("big.bin");
    let version = latest(&history);
    assert_eq!(version["too_large"], true, "{history:#}");
    assert!(is_hash(&version["hash"]), "{history:#}");
    assert_eq!(daemon.history("small.txt")["versions"][0]["too_large"], false);
}

fn is_hash(value: &serde_json::Value) -> bool {
    value
        .as_str()
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}
