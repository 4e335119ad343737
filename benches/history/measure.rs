//! Each long-history goal timed as the median of several runs, its floor or peer beside it:
//! the turns listing, `log` (a terminal's page, and every entry), `history` of the busiest
//! path, a rollback of many files against `git restore` of the same files (alternating), and
//! a gc with capture probed all along (a write and a barrier, again and again).

use std::fs;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::Opts;
use super::generate::{HOT, Made, Setup, barrier, content, rollback_path, session_name, write};
use crate::common::daemon::Daemon;
use crate::common::shadow::run;
use crate::common::stats::{fmt_dur, fmt_ratio, median, pass, percentile};

pub const HEADER: &str = "| goal | filewatchd (median) | floor or peer (median) | ratio | goal | pass |\n|---|---|---|---|---|---|";

struct Line {
    goal: String,
    fw: Duration,
    floor: Option<(String, Duration)>,
    limit: Limit,
    note: String,
}

enum Limit {
    Time(Duration),
    Ratio(f64),
    None,
}

impl Line {
    fn render(&self) -> String {
        let (floor, ratio) = match &self.floor {
            Some((what, d)) => (
                format!("{} ({what})", fmt_dur(*d)),
                self.fw.as_secs_f64() / d.as_secs_f64().max(1e-9),
            ),
            None => ("–".into(), f64::NAN),
        };
        let (goal, ok) = match self.limit {
            Limit::Time(t) => (format!("≤ {}", fmt_dur(t)), Some(self.fw <= t)),
            Limit::Ratio(r) => (format!("≤ {r:.1}×"), Some(ratio <= r)),
            Limit::None => ("info".into(), None),
        };
        let fw = if self.note.is_empty() {
            fmt_dur(self.fw)
        } else {
            format!("{} ({})", fmt_dur(self.fw), self.note)
        };
        let ratio = if ratio.is_finite() {
            fmt_ratio(ratio)
        } else {
            "–".into()
        };
        let ok = ok.map_or("–", pass);
        format!("| {} | {fw} | {floor} | {ratio} | {goal} | {ok} |", self.goal)
    }
}

fn timed(runs: usize, mut f: impl FnMut() -> Result<(), String>) -> Result<Duration, String> {
    let mut samples = Vec::new();
    for _ in 0..runs {
        let t0 = Instant::now();
        f()?;
        samples.push(t0.elapsed());
    }
    Ok(median(&samples))
}

fn get_ok(d: &Daemon, path: &str) -> Result<(), String> {
    match d.get_text(path)? {
        (200, _) => Ok(()),
        (status, body) => Err(format!("GET {path}: HTTP {status}: {}", body.trim())),
    }
}

pub fn all(o: &Opts, s: &mut Setup, made: &Made) -> Result<Vec<String>, String> {
    let d = s.daemon();
    let session = session_name();
    // The floor of a read: an answer that reads almost nothing (`GET /v1/pins`, no pins).
    let floor = timed(o.runs, || get_ok(d, "/v1/pins"))?;
    let status_floor = Some(("`GET /v1/pins`".to_string(), floor));
    eprintln!("reads");
    let mut lines = vec![
        Line {
            goal: format!("`GET /v1/sessions/S/turns`, {} turns", made.turns),
            fw: timed(o.runs, || get_ok(d, &format!("/v1/sessions/{session}/turns")))?,
            floor: status_floor.clone(),
            limit: Limit::Time(Duration::from_millis(50)),
            note: String::new(),
        },
        Line {
            goal: "`log` (a terminal's page: `GET /v1/timeline?session=S&limit=50`)".into(),
            fw: timed(o.runs, || {
                get_ok(d, &format!("/v1/timeline?session={session}&limit=50"))
            })?,
            floor: status_floor.clone(),
            limit: Limit::Time(Duration::from_millis(100)),
            note: String::new(),
        },
        Line {
            goal: format!("`log` piped: every entry, pages of 1,000 ({} turns)", made.turns),
            fw: timed(o.runs.min(3), || whole_log(d, session))?,
            floor: status_floor.clone(),
            limit: Limit::None,
            note: String::new(),
        },
        Line {
            goal: format!("`history` of a path with {} versions", made.hot_versions),
            fw: timed(o.runs, || get_ok(d, &format!("/v1/history?path={HOT}")))?,
            floor: status_floor,
            limit: Limit::Time(Duration::from_millis(20)),
            note: String::new(),
        },
    ];
    eprintln!("rollback");
    lines.extend(rollback(o, s)?);
    // The listing again, now that the session has its rollbacks (each summarised in it).
    let d = s.daemon();
    lines.push(Line {
        goal: format!(
            "`GET /v1/sessions/S/turns`, {} turns, after the {} rollbacks of {} files",
            made.turns,
            2 * o.rollback_pairs,
            o.rollback_files
        ),
        fw: timed(o.runs, || get_ok(d, &format!("/v1/sessions/{session}/turns")))?,
        floor: Some(("`GET /v1/pins`".to_string(), floor)),
        limit: Limit::Time(Duration::from_millis(50)),
        note: String::new(),
    });
    eprintln!("gc");
    lines.extend(gc(o, s.daemon())?);
    Ok(lines.iter().map(Line::render).collect())
}

fn whole_log(d: &Daemon, session: &str) -> Result<(), String> {
    let mut before: Option<String> = None;
    loop {
        let mut path = format!("/v1/timeline?session={session}&limit=1000");
        if let Some(b) = &before {
            path.push_str(&format!("&before={b}"));
        }
        let page = d.get_json(&path)?;
        match page["next_before"].as_str() {
            Some(next) => before = Some(next.to_string()),
            None => return Ok(()),
        }
    }
}

fn write_all(root: &std::path::Path, n: usize, version: usize) -> Result<(), String> {
    for i in 0..n {
        write(root, &rollback_path(i), &content(version, 1_000_000 + i))?;
    }
    Ok(())
}

/// A turn rewrites the rollback's files; then, alternating, the undo of that turn (timed)
/// and its redo, and `git restore` of the same files in a copy with its own repository
/// (timed) and the rewrite back.
fn rollback(o: &Opts, s: &Setup) -> Result<Vec<Line>, String> {
    let d = s.daemon();
    let n = o.rollback_files;
    let peer = s.base.join("peer");
    fs::create_dir_all(&peer).map_err(|e| e.to_string())?;
    write_all(&peer, n, 0)?;
    let git = |args: &[&str], what: &str| run(Command::new("git").arg("-C").arg(&peer).args(args), what);
    git(&["init", "-q"], "git init")?;
    git(&["add", "-A"], "git add")?;
    git(
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "before",
        ],
        "git commit",
    )?;
    d.turn_start()?;
    write_all(&s.root, n, 1)?;
    d.turn_end()?;
    let (mut fw, mut peer_times) = (Vec::new(), Vec::new());
    for _ in 0..o.rollback_pairs {
        write_all(&peer, n, 1)?;
        let t0 = Instant::now();
        git(&["restore", "--", "."], "git restore")?;
        peer_times.push(t0.elapsed());
        let (took, status, answer) = d.undo()?;
        if status != 200 || answer["applied"] != true {
            return Err(format!("undo: HTTP {status}: {answer}"));
        }
        fw.push(took);
        check_content(&s.root.join(rollback_path(n - 1)), &content(0, 1_000_000 + n - 1))?;
        let (_, status, answer) = d.redo()?;
        if status != 200 || answer["applied"] != true {
            return Err(format!("redo: HTTP {status}: {answer}"));
        }
    }
    let _ = fs::remove_dir_all(&peer);
    Ok(vec![Line {
        goal: format!("rollback (undo) of {n} files"),
        fw: median(&fw),
        floor: Some((
            format!("`git restore` of the same {n} files"),
            median(&peer_times),
        )),
        limit: Limit::Ratio(1.0),
        note: String::new(),
    }])
}

fn check_content(path: &std::path::Path, want: &str) -> Result<(), String> {
    match fs::read_to_string(path) {
        Ok(text) if text == want => Ok(()),
        _ => Err(format!(
            "{} is not as before the turn after the undo",
            path.display()
        )),
    }
}

/// The gc, with a prober writing a file and waiting for it to be recorded, again and again,
/// until the gc answers: the longest wait is how long capture was held up at once. The
/// same probe on an idle daemon is the floor.
fn gc(o: &Opts, d: &Daemon) -> Result<Vec<Line>, String> {
    let status = d.status()?;
    let root = status["root"].as_str().unwrap_or(".").to_string();
    let probe = |i: usize| -> Result<Duration, String> {
        fs::write(format!("{root}/probe.txt"), format!("probe {i}\n")).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let (code, _) = d.get_text("/v1/content?path=probe.txt")?;
        if code != 200 {
            return Err(format!("probe: HTTP {code}"));
        }
        Ok(t0.elapsed())
    };
    let idle: Vec<Duration> = (0..o.runs * 3).map(probe).collect::<Result<_, _>>()?;
    let done = AtomicBool::new(false);
    let (report, probes) = std::thread::scope(|scope| {
        let prober = scope.spawn(|| {
            let mut waits = Vec::new();
            let mut i = 1_000;
            while !done.load(Ordering::Acquire) {
                waits.push(probe(i));
                i += 1;
            }
            waits
        });
        let t0 = Instant::now();
        let report = d.post_timed("/v1/gc", "{}");
        done.store(true, Ordering::Release);
        let probes: Vec<Duration> = prober.join().unwrap_or_default().into_iter().flatten().collect();
        (report.map(|(_, status, v)| (t0.elapsed(), status, v)), probes)
    });
    let (took, status, report) = report?;
    if status != 200 {
        return Err(format!("gc: HTTP {status}: {report}"));
    }
    barrier(d)?;
    let removed = report["versions_removed"].as_i64().unwrap_or(0);
    let worst = probes.iter().max().copied().unwrap_or_default();
    Ok(vec![
        Line {
            goal: format!("gc of {removed} versions: the whole collection"),
            fw: took,
            floor: None,
            limit: Limit::None,
            note: format!("{} probes answered meanwhile", probes.len()),
        },
        Line {
            goal: "gc: capture held up at most (longest probe: write, then barrier)".into(),
            fw: worst,
            floor: Some(("the probe on an idle daemon".into(), median(&idle))),
            limit: Limit::Time(Duration::from_millis(100)),
            note: format!("p95 {}", fmt_dur(percentile(&probes, 95.0))),
        },
    ])
}
