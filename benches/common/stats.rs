//! Small statistics and formatting helpers.

use std::time::Duration;

/// Nearest-rank percentile (p in 0..=100) of durations; zero for an empty slice.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut v = samples.to_vec();
    v.sort();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Median (mean of the two middle values for an even count).
pub fn median(samples: &[Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut v = samples.to_vec();
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

pub fn fmt_dur(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.01 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        "–".into()
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else if r >= 0.1 {
        format!("{r:.2}")
    } else if r >= 0.001 {
        format!("{r:.3}")
    } else {
        format!("{r:.1e}")
    }
}

pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

/// 20000 -> "20,000"
pub fn fmt_int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "12.3 ms (p95 15.0 ms)"
pub fn fmt_med_p95(samples: &[Duration]) -> String {
    if samples.len() < 2 {
        return fmt_dur(median(samples));
    }
    format!(
        "{} (p95 {})",
        fmt_dur(median(samples)),
        fmt_dur(percentile(samples, 95.0))
    )
}

pub fn pass(ok: bool) -> &'static str {
    if ok { "yes" } else { "**NO**" }
}

/// `a / b` in seconds; a zero `b` counts as a nanosecond, so the ratio stays finite.
pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
