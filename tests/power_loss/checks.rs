//! What must hold after a power cut and a restart: every acknowledged turn listed with the
//! changes its end marker answered, every version the record lists reading back intact (its
//! bytes hash to its hash), the record equal to the disk, and no blob the index names missing.

use std::collections::BTreeSet;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

use crate::common::*;

/// A turn whose end marker was answered 200, with the changes it answered.
pub struct Acked {
    pub session: String,
    pub turn: u64,
    pub changes: BTreeSet<String>,
}

/// One change as the comparison sees it: path, change, kind and hash.
fn change_line(c: &Value) -> String {
    format!("{} {} {} {}", c["path"], c["change"], c["kind"], c["hash"])
}

impl Acked {
    pub fn of(session: &str, end: &Value) -> Acked {
        Acked {
            session: session.to_string(),
            turn: end["turn"]
                .as_u64()
                .unwrap_or_else(|| panic!("turn without a number: {end:#}")),
            changes: changes(end).iter().map(change_line).collect(),
        }
    }
}

/// Every acknowledged turn is listed, with the changes its end marker answered, and each
/// listed file version reads back as the bytes of its hash.
#[track_caller]
pub fn assert_turns_kept(d: &Daemon, acked: &[Acked], what: &str) {
    for a in acked {
        let turn = d.turn(&a.session, a.turn, false);
        let now: BTreeSet<String> = changes(&turn).iter().map(change_line).collect();
        assert_eq!(
            now, a.changes,
            "{what}: turn {} of {} as acknowledged",
            a.turn, a.session
        );
        for c in changes(&turn).iter().filter(|c| c["kind"] == "file") {
            let (Some(path), Some(hash)) = (c["path"].as_str(), c["hash"].as_str()) else {
                continue;
            };
            let query = format!(
                "/v1/content?path={}&session={}&after={}",
                percent_encode(path),
                a.session,
                a.turn
            );
            let (status, bytes) = d.get_bytes(&query);
            assert_eq!(
                status,
                200,
                "{what}: {query}: {}",
                String::from_utf8_lossy(&bytes)
            );
            assert_eq!(
                blake3_hex(&bytes),
                hash,
                "{what}: {path} after turn {} reads back",
                a.turn
            );
        }
    }
}

/// Every file version recorded for each of `paths` reads back intact. A state before the
/// retention horizon answers 410 `expired`: a version older than the horizon is read at the
/// horizon when it is the path's version there, and one wholly before it (a collection cut
/// short has not removed it yet) cannot be read through the API: `assert_blobs_intact`
/// checks its blob in the index.
#[track_caller]
pub fn assert_versions_intact(d: &Daemon, paths: &BTreeSet<String>, what: &str) {
    for path in paths {
        let history = d.history(path);
        let mut all: Vec<&Value> = versions(&history).iter().collect();
        all.sort_by_key(|v| v["seq"].as_u64());
        for (i, v) in all.iter().enumerate() {
            let (Some(seq), Some(hash)) = (v["seq"].as_u64(), v["hash"].as_str()) else {
                continue;
            };
            if v["kind"] != "file" {
                continue;
            }
            let at = |seq: Option<u64>| {
                let seq = seq.map_or_else(String::new, |s| format!("&seq={s}"));
                format!("/v1/content?path={}{seq}", percent_encode(path))
            };
            let (mut status, mut bytes) = d.get_bytes(&at(Some(seq)));
            if status == 410 {
                let horizon = all
                    .get(i + 1)
                    .and_then(|next| next["seq"].as_u64())
                    .map(|s| s - 1);
                (status, bytes) = d.get_bytes(&at(horizon));
                if status == 410 {
                    continue;
                }
            }
            assert_eq!(
                status,
                200,
                "{what}: {path} at {seq}: {}",
                String::from_utf8_lossy(&bytes)
            );
            assert_eq!(blake3_hex(&bytes), hash, "{what}: {path} at seq {seq} reads back");
        }
    }
}

/// The record equals the disk: a verification pass finds nothing, and every file on disk is
/// its latest recorded version, byte for byte.
#[track_caller]
pub fn assert_record_is_disk(d: &Daemon, root: &Path, what: &str) {
    let verify = expect(200, d.post("/v1/verify", json!({})));
    assert_eq!(
        verify["changed"], 0,
        "{what}: the verification pass found: {verify:#}"
    );
    for (path, entry) in snapshot(root) {
        let Entry::File { bytes, .. } = entry else {
            continue;
        };
        let history = d.history(&path);
        let latest = latest(&history);
        assert_eq!(latest["kind"], "file", "{what}: {path}: {latest:#}");
        assert_eq!(
            latest["hash"],
            blake3_hex(&bytes),
            "{what}: {path} on disk against its record"
        );
    }
}

/// Every path the record or the disk knows: the disk's files and every acknowledged change.
pub fn known_paths(root: &Path, acked: &[Acked], d: &Daemon) -> BTreeSet<String> {
    let mut paths: BTreeSet<String> = snapshot(root)
        .into_iter()
        .filter(|(_, e)| matches!(e, Entry::File { .. }))
        .map(|(p, _)| p)
        .collect();
    for a in acked {
        let turn = d.turn(&a.session, a.turn, false);
        paths.extend(
            changes(&turn)
                .iter()
                .filter_map(|c| c["path"].as_str().map(String::from)),
        );
    }
    paths
}

/// No version names a blob the index lacks, and every blob the index holds (inline or as a
/// file) is there and decodes to the bytes of its hash.
#[track_caller]
pub fn assert_blobs_intact(state: &Path, what: &str) {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY;
    let conn = Connection::open_with_flags(state.join("index.sqlite"), flags).expect("open the index");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity check");
    assert_eq!(check, "ok", "{what}");
    let unnamed: i64 = conn
        .query_row(
            "SELECT count(*) FROM versions v WHERE v.hash IS NOT NULL AND v.too_large = 0
               AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = v.hash)",
            [],
            |r| r.get(0),
        )
        .expect("versions without their blob");
    assert_eq!(unnamed, 0, "{what}: versions whose blob row is gone");
    let mut stmt = conn
        .prepare("SELECT lower(hex(hash)), codec, data FROM blobs")
        .expect("blobs");
    let blobs: Vec<(String, i64, Option<Vec<u8>>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("blobs")
        .map(|row| row.expect("row"))
        .collect();
    let damaged: Vec<String> = blobs
        .into_iter()
        .filter_map(|(hex, codec, data)| {
            blob_fault(state, &hex, codec, data).map(|why| format!("{hex}: {why}"))
        })
        .collect();
    assert!(damaged.is_empty(), "{what}: blobs the index names: {damaged:#?}");
}

/// What is wrong with one blob (inline `data`, else its file), if anything.
fn blob_fault(state: &Path, hex: &str, codec: i64, data: Option<Vec<u8>>) -> Option<String> {
    let stored = match data {
        Some(data) => data,
        None => match std::fs::read(state.join("blobs").join(&hex[..2]).join(&hex[2..])) {
            Ok(bytes) => bytes,
            Err(e) => return Some(format!("its file: {e}")),
        },
    };
    let raw = match codec {
        0 => stored,
        _ => match zstd::stream::decode_all(stored.as_slice()) {
            Ok(raw) => raw,
            Err(e) => return Some(format!("does not decode: {e}")),
        },
    };
    (blake3_hex(&raw) != hex).then(|| format!("holds {} bytes of other content", raw.len()))
}
