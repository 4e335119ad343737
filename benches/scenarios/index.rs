//! W6 and the checks of the whole index: the first index against the shadow's first snapshot,
//! the daemon's RSS, the store's size, the restart after all workloads, and the verification
//! pass (`POST /v1/verify`).

use std::path::Path;
use std::time::Duration;

use super::run::{Run, tracked_text, u64_at};
use crate::common::daemon::Daemon;
use crate::common::report::Row;
use crate::common::stats::{fmt_bytes, fmt_dur, fmt_ratio, ratio};
use crate::common::{floor, gentree, restart, verify_pass};

/// The first index (W6): spawn → ready against the shadow's first snapshot.
pub fn first_index_row(
    r: &mut Run,
    d: &Daemon,
    (fw_first, shadow_first): (Duration, Duration),
    floor: &floor::Floor,
) -> Result<u64, String> {
    let st = d.status()?;
    let store = u64_at(&st, "/store_bytes").unwrap_or(0);
    let (ok, text) = tracked_text(&st, r.n);
    r.correct_ok &= ok;
    let q = ratio(fw_first, shadow_first);
    let mut row = Row::new("W6: first index: spawn → ready, vs first shadow snapshot");
    row.fw = fmt_dur(fw_first);
    row.shadow = fmt_dur(shadow_first);
    row.ratio = fmt_ratio(q);
    row.floor = format!(
        "{}: read + hash + zstd-1, 8 threads, nothing stored (measured just before, same cache state)",
        fmt_dur(floor.elapsed)
    );
    row.goal = "≤ 0.3×; cold ≤ 5 s, warm ≤ 2 s (t100k)".into();
    row.pass = Some(q <= 0.3);
    row.correct = text;
    r.push_verified(row, "the first index");
    Ok(store)
}

pub fn rss_row(r: &mut Run, d: &Daemon, rss_index: u64) -> Result<(), String> {
    let (rss_end, hwm) = d.rss();
    let st = d.status()?;
    let files_now = gentree::count_files(&r.tree).map_err(|e| format!("count files: {e}"))?;
    let (ok, text) = tracked_text(&st, files_now);
    r.correct_ok &= ok;
    let mut row = Row::new("W6: daemon RSS: after first index / at end (peak)");
    row.fw = format!(
        "{} / {} ({})",
        fmt_bytes(rss_index),
        fmt_bytes(rss_end),
        fmt_bytes(hwm)
    );
    row.goal = "peak ≤ 100 MB (perf. W6)".into();
    row.pass = Some(hwm <= 100_000_000);
    row.correct = format!("at end: {text}");
    r.rows.push(row);
    Ok(())
}

pub fn restart_row(r: &mut Run, d: Daemon, bin: &Path, log: &Path) -> Result<Daemon, String> {
    let (d2, out) = restart::run(r.name, d, bin, &r.tree, &r.state, log, r.tck)?;
    let row = restart::row(&out, r.g.bytes);
    r.correct_ok &= out.before == out.after;
    r.push_verified(row, "the restart");
    Ok(d2)
}

pub fn storage_rows(r: &mut Run, store_index: u64, store_end: u64, shadow: (u64, u64)) {
    let share = store_index as f64 / r.g.bytes as f64;
    let mut row = Row::new("W6: storage after the first index: `store_bytes` vs the shadow on disk");
    row.fw = format!("{} ({share:.2}× the tree)", fmt_bytes(store_index));
    row.shadow = format!(
        "{} ({:.2}× the tree)",
        fmt_bytes(shadow.0),
        shadow.0 as f64 / r.g.bytes as f64
    );
    row.ratio = fmt_ratio(store_index as f64 / shadow.0 as f64);
    row.goal = "≤ 0.35× the tree (perf. W6)".into();
    row.pass = Some(share <= 0.35);
    r.rows.push(row);
    let mut row = Row::new("storage at the end (all workloads recorded)");
    row.fw = fmt_bytes(store_end);
    row.shadow = fmt_bytes(shadow.1);
    row.ratio = fmt_ratio(store_end as f64 / shadow.1 as f64);
    row.goal = "info".into();
    r.rows.push(row);
}

/// The verification pass: the daemon re-checks its index against the disk.
pub fn verify_pass_row(r: &mut Run, d: &Daemon) -> Result<(), String> {
    eprintln!("[{}] verification pass (POST /v1/verify)...", r.name);
    let out = verify_pass::run(r.name, d, r.tck)?;
    r.push_verified(verify_pass::row(r.name, &out), "the verification passes");
    Ok(())
}
