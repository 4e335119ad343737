//! The verification pass's cost: `POST /v1/verify` on the tree as the
//! workloads left it, a few times; an info row. The pass is the stat walk of the whole tree
//! compared with the index that finds writes no event reported (mmap); with nothing changed it
//! records nothing, so this is its cost when it finds nothing, which is the usual case.

use std::time::Duration;

use super::daemon::Daemon;
use super::report::Row;
use super::stats::{fmt_bytes, fmt_dur, fmt_int, median};

const PASSES: usize = 3;

pub struct VerifyOut {
    /// Wall time of each `POST /v1/verify` (barrier included) and the daemon's own figure.
    pub wall: Vec<Duration>,
    pub pass_ms: Vec<u64>,
    pub walked: u64,
    pub changed: u64,
    /// Daemon CPU over all the passes.
    pub cpu: Duration,
    /// The daemon's peak RSS (VmHWM) before the passes and after them (the goal: ≤ 200 MB
    /// at every moment at t1m).
    pub peak_before: u64,
    pub peak_after: u64,
}

pub fn run(name: &str, d: &Daemon, tck: u64) -> Result<VerifyOut, String> {
    let mut out = VerifyOut {
        wall: Vec::new(),
        pass_ms: Vec::new(),
        walked: 0,
        changed: 0,
        cpu: Duration::ZERO,
        peak_before: d.rss().1,
        peak_after: 0,
    };
    let before = d.sample();
    for _ in 0..PASSES {
        let (dt, status, answer) = d.post_timed("/v1/verify", "{}")?;
        if status != 200 {
            return Err(format!("POST /v1/verify: HTTP {status}: {answer}"));
        }
        out.wall.push(dt);
        out.pass_ms.push(answer["duration_ms"].as_u64().unwrap_or(0));
        out.walked = answer["walked"].as_u64().unwrap_or(0);
        out.changed += answer["changed"].as_u64().unwrap_or(0);
        eprintln!(
            "[{name}]   verify pass: {} ({} paths)",
            fmt_dur(dt),
            fmt_int(out.walked)
        );
    }
    let ticks = d.sample().ticks.saturating_sub(before.ticks);
    out.cpu = Duration::from_secs_f64(ticks as f64 / tck.max(1) as f64);
    out.peak_after = d.rss().1;
    Ok(out)
}

pub fn row(name: &str, out: &VerifyOut) -> Row {
    let mut row = Row::new(format!(
        "verify pass at {name}: `POST /v1/verify`, nothing changed"
    ));
    let mut ms = out.pass_ms.clone();
    ms.sort_unstable();
    row.fw = format!(
        "{} (the pass itself {} ms; median of {PASSES}); daemon CPU {} per pass",
        fmt_dur(median(&out.wall)),
        ms.get(ms.len() / 2).copied().unwrap_or(0),
        fmt_dur(out.cpu / PASSES as u32)
    );
    row.goal = "info".into();
    row.correct = format!(
        "{} paths walked, {} versions recorded; peak RSS {} before the passes, {} after",
        fmt_int(out.walked),
        fmt_int(out.changed),
        fmt_bytes(out.peak_before),
        fmt_bytes(out.peak_after)
    );
    row
}
