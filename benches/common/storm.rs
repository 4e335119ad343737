//! W7 (performance.md §8.3): a read storm over the tree while the daemon idles:
//! `tar cf - .` (its archive drained through a pipe: GNU tar skips reading file data when the
//! archive is /dev/null itself) and `grep -r zzzz .`.
//!
//! Measured: path hints the daemon registered during the storm (the `watcher.hints` counter,
//! read across a barrier, minus what one barrier costs on its own: its cookie file's events),
//! rescans and overflows (deltas), versions recorded (`latest_seq` delta: must be 0) and the
//! daemon's CPU (utime + stime) as a share of the storm's wall time.

use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::daemon::Daemon;
use super::report::Row;
use super::stats::{fmt_bytes, fmt_dur, ratio};

#[derive(Default)]
pub struct StormRun {
    pub tar: Duration,
    pub grep: Duration,
    pub tar_bytes: u64,
    /// Hints during the storm (barrier's own subtracted), rescans, overflows, versions.
    pub hints: i64,
    pub barrier_hints: u64,
    pub rescans: u64,
    pub overflows: u64,
    pub versions: u64,
    pub cpu: Duration,
}

impl StormRun {
    pub fn wall(&self) -> Duration {
        self.tar + self.grep
    }

    pub fn cpu_share(&self) -> f64 {
        ratio(self.cpu, self.wall())
    }
}

fn counters(d: &Daemon) -> Result<[u64; 4], String> {
    let st = d.status()?;
    let g = |p: &str| st.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Ok([
        g("/watcher/hints"),
        g("/watcher/rescans"),
        g("/watcher/overflows"),
        g("/latest_seq"),
    ])
}

fn tar(tree: &Path) -> Result<u64, String> {
    let mut child = Command::new("tar")
        .args(["cf", "-", "."])
        .current_dir(tree)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("tar: {e}"))?;
    let mut out = child.stdout.take().ok_or("no stdout from tar")?;
    let n = io::copy(&mut out, &mut io::sink()).map_err(|e| format!("reading tar's output: {e}"))?;
    let st = child.wait().map_err(|e| format!("tar: {e}"))?;
    // 1 = "some files differ" (files changed while being read): not expected, but harmless here.
    if !st.success() && st.code() != Some(1) {
        return Err(format!("tar cf - .: {st}"));
    }
    Ok(n)
}

fn grep(tree: &Path) -> Result<(), String> {
    let st = Command::new("grep")
        .args(["-r", "zzzz", "."])
        .current_dir(tree)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("grep: {e}"))?;
    // 0 = found, 1 = not found; 2 = trouble.
    if st.code() == Some(2) || st.code().is_none() {
        return Err(format!("grep -r zzzz .: {st}"));
    }
    Ok(())
}

/// W7: see the module's doc.
pub fn run(name: &str, d: &Daemon, tree: &Path, tck: u64) -> Result<StormRun, String> {
    d.sync()?;
    let a = counters(d)?;
    d.sync()?;
    let b = counters(d)?;
    let mut out = StormRun {
        barrier_hints: b[0] - a[0],
        ..Default::default()
    };
    let cpu0 = d.sample();
    let t0 = Instant::now();
    out.tar_bytes = tar(tree)?;
    out.tar = t0.elapsed();
    let t1 = Instant::now();
    grep(tree)?;
    out.grep = t1.elapsed();
    let cpu1 = d.sample();
    d.sync()?;
    let c = counters(d)?;
    out.hints = c[0] as i64 - b[0] as i64 - out.barrier_hints as i64;
    out.rescans = c[1] - b[1];
    out.overflows = c[2] - b[2];
    out.versions = c[3] - b[3];
    out.cpu = Duration::from_secs_f64((cpu1.ticks - cpu0.ticks) as f64 / tck as f64);
    eprintln!(
        "[{name}] W7 read storm: tar {} ({} MB), grep -r {} | hints {} (a barrier alone: {}), rescans {}, overflows {}, versions {}, daemon CPU {}",
        fmt_dur(out.tar),
        out.tar_bytes / 1_000_000,
        fmt_dur(out.grep),
        out.hints,
        out.barrier_hints,
        out.rescans,
        out.overflows,
        out.versions,
        fmt_dur(out.cpu)
    );
    Ok(out)
}

/// The W7 row (without the disk-vs-index text, which the caller appends).
pub fn row(r: &StormRun) -> Row {
    let share = r.cpu_share() * 100.0;
    let mut row = Row::new(format!(
        "W7: read storm while idle: `tar cf - .` ({} through a pipe) + `grep -r zzzz .`",
        fmt_bytes(r.tar_bytes)
    ));
    row.fw = format!(
        "{} events, {} rescans; daemon CPU {} = {share:.2} % of the storm's {}",
        r.hints,
        r.rescans,
        fmt_dur(r.cpu),
        fmt_dur(r.wall())
    );
    row.floor = "0 events".into();
    row.goal = "0 events, 0 rescans, CPU < 2 %".into();
    row.pass = Some(r.hints <= 0 && r.rescans == 0 && r.overflows == 0 && share < 2.0);
    row.correct = format!(
        "hints during the storm {} (`watcher.hints` across a barrier, minus the {} a barrier alone makes); overflows {}; versions recorded {}",
        r.hints, r.barrier_hints, r.overflows, r.versions
    );
    row
}
