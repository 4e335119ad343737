//! G9: a file over `max_file_size` is recorded by size and hash only, and says so.

use crate::common::*;

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

/// Bytes the daemon has read through `read` and `pread` so far (`rchar` of `/proc/PID/io`).
fn bytes_read(daemon: &Daemon) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{}/io", daemon.pid)).expect("/proc/PID/io");
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rchar in {io}"))
}

/// G9: a file far over the cap is never read in full (a sparse 20 GiB file, 0 bytes on disk,
/// was hashed in full at the next turn end, which took 86 s): its print reads a bounded
/// sample, so the daemon's read counter grows by far less than the file's size. Its changes
/// (a new size, a new mtime) are still seen.
#[test]
fn a_file_far_over_the_cap_is_never_read_in_full() {
    const SPARSE: u64 = 2 << 30;
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "max_file_size = 1000000\n");
    let daemon = Daemon::start(&ws);

    let before = bytes_read(&daemon);
    daemon.turn_start("s", "a sparse file");
    let file = std::fs::File::create(ws.path("sparse.img")).expect("create");
    file.set_len(SPARSE).expect("truncate -s 2G");
    drop(file);
    let turn = daemon.turn_end("s");
    let read = bytes_read(&daemon) - before;
    let sparse = change(&turn, "sparse.img");
    assert_eq!(sparse["too_large"], true, "{sparse}");
    assert_eq!(sparse["size"], SPARSE, "{sparse}");
    assert!(
        read < SPARSE / 16,
        "the daemon read {read} bytes for a {SPARSE}-byte file over the cap"
    );

    // Grown, then only touched: each is a version, read as little.
    daemon.turn_start("s", "grown");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(ws.path("sparse.img"))
        .expect("open");
    file.set_len(SPARSE + 4096).expect("grow");
    drop(file);
    let grown = daemon.turn_end("s");
    assert_eq!(change(&grown, "sparse.img")["size"], SPARSE + 4096, "{grown:#}");
    daemon.turn_start("s", "touched");
    ws.sh("touch -d '2001-02-03 04:05:06' sparse.img");
    let touched = daemon.turn_end("s");
    assert_eq!(
        change(&touched, "sparse.img")["change"],
        "modified",
        "{touched:#}"
    );
    let read = bytes_read(&daemon) - before;
    assert!(read < SPARSE / 16, "the daemon read {read} bytes in all");
}
