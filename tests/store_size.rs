//! The store's size is a counter the blob rows' triggers keep: `status` and a
//! collection read one row instead of summing every blob. It follows every blob written and
//! collected, and a start finds and corrects a counter that drifted from the rows.

use crate::common::*;
use std::time::Duration;

use rusqlite::Connection;

fn blob_sum(ws: &Workspace) -> i64 {
    let index = Connection::open(ws.state_dir().join("index.sqlite")).expect("open the index");
    index
        .query_row("SELECT coalesce(sum(stored_size), 0) FROM blobs", [], |r| {
            r.get(0)
        })
        .expect("sum")
}

fn store_bytes(daemon: &Daemon) -> i64 {
    daemon.status()["store_bytes"].as_i64().expect("store_bytes")
}

#[test]
fn the_store_size_follows_writes_and_collections_and_a_start_corrects_a_drift() {
    let ws = Workspace::new();
    ws.write(".filewatchd.toml", "keep_days = 0\nkeep_turns = 1\n");
    for i in 0..20 {
        ws.write(format!("f/{i:02}.txt"), noise(i, 2_000));
    }
    let daemon = Daemon::start(&ws);
    for t in 1..=3u64 {
        daemon.turn_start("s1", &format!("turn {t}"));
        for i in 0..20 {
            ws.write(format!("f/{i:02}.txt"), noise(100 * t + i, 2_000));
        }
        daemon.turn_end("s1");
    }
    let written = store_bytes(&daemon);
    assert_eq!(written, blob_sum(&ws), "after the turns");
    let report = daemon.gc(false);
    assert!(report["blobs_removed"].as_i64().unwrap_or(0) > 0, "{report:#}");
    let collected = store_bytes(&daemon);
    assert_eq!(collected, blob_sum(&ws), "after the collection");
    assert_eq!(report["store_bytes_after"], collected, "{report:#}");
    assert!(collected < written, "{collected} < {written}");
    daemon.stop();

    let index = Connection::open(ws.state_dir().join("index.sqlite")).expect("open the index");
    index
        .execute("UPDATE store_size SET bytes = 12345", [])
        .expect("make the counter drift");
    drop(index);
    let daemon = Daemon::start(&ws);
    // Measured after the start, at idle priority: corrected once it is.
    let sum = blob_sum(&ws);
    let corrected = poll_until(Duration::from_secs(30), || {
        (store_bytes(&daemon) == sum).then_some(())
    });
    assert!(
        corrected.is_some(),
        "after a start: {} against {sum}",
        store_bytes(&daemon)
    );
    let log = daemon.stderr();
    assert!(log.contains("store size counter had drifted"), "{log}");
}
