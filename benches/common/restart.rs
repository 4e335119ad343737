//! W6, second half (performance.md §8.3): restart with an intact index.
//!
//! The running daemon is stopped (SIGTERM) after a barrier; a stat walk of the whole tree by
//! the bench is timed as the floor; then `filewatchd serve` is spawned again on the same state
//! dir and timed spawn → ready. "No re-hash": `latest_seq`, `store_bytes` and `tracked_files`
//! are unchanged; what the reconcile had to re-read by the daemon's own rule (stat differs from
//! the index, or recorded within 100 ms of its mtime) is computed from the index beforehand; and
//! the bytes the new daemon read through read(2) until ready (`rchar` of /proc/<pid>/io, its
//! index included) are shown. RSS after ready is reported too.

use std::path::Path;
use std::time::{Duration, Instant};

use filewatchd::model::{StatKey, State};
use filewatchd::store::{db, sql};

use serde_json::Value;

use super::daemon::Daemon;
use super::report::Row;
use super::rollback::stat_tree;
use super::stats::{fmt_bytes, fmt_dur, fmt_int, fmt_ratio, ratio};

#[derive(Default)]
pub struct RestartRun {
    /// The bench's own stat walk of the tree (the floor), and spawn → ready.
    pub stat_walk: Duration,
    pub ready: Duration,
    /// (latest_seq, store_bytes, tracked_files) before the stop and after the restart.
    pub before: [u64; 3],
    pub after: [u64; 3],
    /// Bytes the restarted daemon read until ready, and its CPU (user + sys).
    pub read: u64,
    pub cpu: Duration,
    pub rss: u64,
    pub stopped: String,
    /// Size of the index files (`index.sqlite` + WAL) at the restart: the integrity check
    /// at open reads them whole, so that much of `read` is not the tree.
    pub index_bytes: u64,
    /// What the reconcile must re-read by the daemon's own rule, from the index before the
    /// restart: files whose stat differs from the recorded one, and files recorded within
    /// 100 ms of their mtime ("racy": a stat cannot prove them unchanged). (files, bytes).
    pub stat_differs: Count,
    pub racy: Count,
}

impl RestartRun {
    /// Bytes read until ready beyond the index files.
    pub fn read_beyond_index(&self) -> u64 {
        self.read.saturating_sub(self.index_bytes)
    }

    /// Nothing recorded, and by the daemon's own rule less than a quarter of the tree's bytes
    /// to re-read. (`read` cannot tell: SQLite reads the index more than once while opening
    /// and querying it, so `read` − `index_bytes` only bounds the tree bytes read from above.)
    pub fn no_rehash(&self, tree_bytes: u64) -> bool {
        self.before == self.after && self.stat_differs.1 + self.racy.1 < tree_bytes / 4
    }
}

/// (files, bytes).
type Count = (usize, u64);

/// The daemon's "racy" window (`capture::rescan::RACY_NS`).
const RACY_NS: i64 = 100_000_000;

/// See `RestartRun::stat_differs` and `racy`.
fn forecast(tree: &Path, state: &Path) -> Result<(Count, Count), String> {
    let conn = db::open_reader(&state.join("index.sqlite")).map_err(|e| e.to_string())?;
    let (mut differs, mut racy) = ((0, 0), (0, 0));
    sql::each_present(&conn, None, |path, latest| {
        let State::File(f) = &latest.state else {
            return;
        };
        let abs = tree.join(String::from_utf8_lossy(path.as_bytes()).as_ref());
        let now = std::fs::symlink_metadata(&abs).map(|m| StatKey::from_metadata(&m));
        if now.as_ref().ok() != Some(&latest.stat) {
            differs = (differs.0 + 1, differs.1 + f.size);
        } else if latest.stat.mtime_ns + RACY_NS >= latest.checked_ns {
            racy = (racy.0 + 1, racy.1 + f.size);
        }
    })
    .map_err(|e| format!("query the index: {e}"))?;
    Ok((differs, racy))
}

fn counts(d: &Daemon) -> Result<[u64; 3], String> {
    let st = d.status()?;
    let g = |p: &str| st.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Ok([g("/latest_seq"), g("/store_bytes"), g("/tracked_files")])
}

/// Stops `d`, restarts the daemon on the same root and state dir (log: `log`), returns the new
/// daemon and the measurements.
pub fn run(
    name: &str,
    mut d: Daemon,
    bin: &Path,
    tree: &Path,
    state: &Path,
    log: &Path,
    tck: u64,
) -> Result<(Daemon, RestartRun), String> {
    let mut out = RestartRun::default();
    d.sync()?;
    out.before = counts(&d)?;
    out.stopped = d.stop();
    out.index_bytes = ["index.sqlite", "index.sqlite-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(state.join(f)).ok())
        .map(|m| m.len())
        .sum();
    (out.stat_differs, out.racy) = forecast(tree, state)?;
    let t0 = Instant::now();
    let n = stat_tree(tree)?.len();
    out.stat_walk = t0.elapsed();
    let (d2, ready) = Daemon::spawn(bin, tree, state, log, Duration::from_secs(1800))?;
    out.ready = ready;
    out.read = d2.read_chars();
    out.cpu = Duration::from_secs_f64(d2.sample().ticks as f64 / tck as f64);
    out.rss = d2.rss().0;
    out.after = counts(&d2)?;
    eprintln!(
        "[{name}] W6 restart: stat walk of {n} files {} | spawn → ready {} (read {}, CPU {}, RSS {}) | seq {} → {}, store {} → {}",
        fmt_dur(out.stat_walk),
        fmt_dur(out.ready),
        fmt_bytes(out.read),
        fmt_dur(out.cpu),
        fmt_bytes(out.rss),
        out.before[0],
        out.after[0],
        out.before[1],
        out.after[1]
    );
    Ok((d2, out))
}

/// The W6 restart row (without the disk-vs-index text, which the caller appends).
pub fn row(r: &RestartRun, tree_bytes: u64) -> Row {
    let mut row = Row::new(
        "W6 restart with an intact index: spawn → ready (reconciled), vs the bench's own stat walk of the tree",
    );
    row.fw = format!(
        "{} ({}× the stat walk; CPU {}, RSS {})",
        fmt_dur(r.ready),
        fmt_ratio(ratio(r.ready, r.stat_walk)),
        fmt_dur(r.cpu),
        fmt_bytes(r.rss)
    );
    row.floor = format!("stat walk {}", fmt_dur(r.stat_walk));
    row.goal = "≤ 1 s warm; no re-hash of unchanged files; RSS ≤ 100 MB".into();
    row.pass = Some(r.no_rehash(tree_bytes) && r.ready <= Duration::from_secs(1) && r.rss <= 100_000_000);
    let same = |i: usize| {
        if r.before[i] == r.after[i] {
            format!("{} (unchanged)", fmt_int(r.after[i]))
        } else {
            format!("**{} → {}**", fmt_int(r.before[i]), fmt_int(r.after[i]))
        }
    };
    row.correct = format!(
        "latest_seq {}, store_bytes {}, tracked_files {}; read {} until ready, the index files being {} (SQLite reads them more than once: at most {} of it can be the tree's {}); by the daemon's rule it had to re-read {} files whose stat differs from the index ({}) and {} \"racy\" files recorded within 100 ms of their mtime ({})",
        same(0),
        same(1),
        same(2),
        fmt_bytes(r.read),
        fmt_bytes(r.index_bytes),
        fmt_bytes(r.read_beyond_index()),
        fmt_bytes(tree_bytes),
        fmt_int(r.stat_differs.0 as u64),
        fmt_bytes(r.stat_differs.1),
        fmt_int(r.racy.0 as u64),
        fmt_bytes(r.racy.1)
    );
    row
}
