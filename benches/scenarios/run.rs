//! What one tree's run shares between its workloads (`Run`: the tree, its peers, the rows so
//! far), and the small readings and cells that several workloads' rows use.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::opts::Opts;
use crate::common::codex::Codex;
use crate::common::daemon::Daemon;
use crate::common::gentree::GenTree;
use crate::common::report::Row;
use crate::common::shadow::Shadow;
use crate::common::stats::{fmt_int, fmt_med_p95};
use crate::common::{checkout, verify};

pub fn u64_at(v: &Value, ptr: &str) -> Option<u64> {
    v.pointer(ptr).and_then(Value::as_u64)
}

pub fn tracked_text(st: &Value, n: usize) -> (bool, String) {
    match u64_at(st, "/tracked_files") {
        Some(t) if t as usize == n => (true, format!("tracked {}/{}", fmt_int(t), fmt_int(n as u64))),
        Some(t) => (
            false,
            format!("**tracked {} ≠ {} files**", fmt_int(t), fmt_int(n as u64)),
        ),
        None => (false, "**status has no tracked_files**".into()),
    }
}

pub fn ticks_to_dur(ticks: u64, tck: u64) -> Duration {
    Duration::from_secs_f64(ticks as f64 / tck as f64)
}

/// What one tree's run shares between its workloads.
pub struct Run<'a> {
    pub o: &'a Opts,
    pub name: &'static str,
    pub tree: PathBuf,
    pub state: PathBuf,
    pub sh: Shadow,
    /// The tree as a real repo (Codex peer and W4), unless both are skipped.
    pub codex: Option<Codex>,
    pub g: GenTree,
    /// Files in the tree as generated.
    pub n: usize,
    pub tck: u64,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    pub correct_ok: bool,
    /// Daemon CPU while the peers snapshotted (they run with the daemon idle).
    pub peer_daemon_ticks: u64,
    pub peer_runs: usize,
    /// filewatchd's medians of W2's capture and W5's undo, for agent-undo's ratios.
    pub fw_sed: Option<Duration>,
    pub fw_undo: Option<Duration>,
    /// W4's result, for the "checkout without the daemon" row at the end.
    pub checkout: Option<checkout::CheckoutRun>,
    /// W3a's burst with the daemon stopped: the W3b burst's baseline.
    pub burst_stopped: Option<Duration>,
}

impl Run<'_> {
    /// The correctness check of `verify` (the index against a fresh hash of the disk), added to
    /// `correct_ok`; returns its text for the row.
    pub fn verify(&mut self, what: &str) -> String {
        let c = verify::check(&self.tree, &self.state, &["node_modules"]);
        eprintln!("{}", verify::progress(self.name, what, &c));
        self.correct_ok &= c.ok();
        c.text()
    }

    /// Appends a row whose `correct` gets the verification after `what`.
    pub fn push_verified(&mut self, mut row: Row, what: &str) {
        let v = self.verify(what);
        row.correct = if row.correct.is_empty() {
            v
        } else {
            format!("{}; {v}", row.correct)
        };
        self.rows.push(row);
    }

    /// The Codex peer, when it runs.
    pub fn codex_peer(&self) -> Option<&Codex> {
        self.codex.as_ref().filter(|_| self.o.runs("codex"))
    }

    /// Times `f` (a peer's snapshot) and adds the daemon's CPU meanwhile to the tally.
    pub fn peer<T>(&mut self, d: &Daemon, f: impl FnOnce(&Self) -> Result<T, String>) -> Result<T, String> {
        let before = d.sample();
        let out = f(self)?;
        self.peer_daemon_ticks += d.sample().ticks - before.ticks;
        self.peer_runs += 1;
        Ok(out)
    }
}

/// The Codex ghost commit of repetition `rep`, timed, if the peer runs and `rep` is among the
/// first `--codex-reps`.
pub fn codex_turn(r: &mut Run, d: &Daemon, rep: usize) -> Result<Option<Duration>, String> {
    if r.codex_peer().is_none() || rep >= r.o.codex_reps {
        return Ok(None);
    }
    let (dt, _) = r.peer(d, |r| {
        r.codex_peer().ok_or("no Codex repo".to_string())?.snapshot()
    })?;
    Ok(Some(dt))
}

/// "1.47 s (p95 1.52 s, n=5)" or "not run".
pub fn peer_cell(samples: &[Duration]) -> String {
    if samples.is_empty() {
        return "not run".into();
    }
    format!("{} n={}", fmt_med_p95(samples), samples.len())
}
