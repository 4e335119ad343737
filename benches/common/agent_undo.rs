//! The agent-undo peer (`au`, crate agent-undo 0.0.3): installed by the bench itself from
//! crates.io into `<target>/bench-tools/agent-undo-0.0.3` (once, `cargo install --locked`;
//! later runs reuse it). When it cannot be installed or run, its rows say so instead of
//! failing the run.
//!
//! How it is driven (every call with cwd = the workspace: `au` finds its `.agent-undo/` state
//! dir there): `au init` (initial scan, timed as info), `au serve` as a child of the bench,
//! readiness = a probe file's event shows up in its timeline. A turn is a hook session:
//! `au hook pre` with `{"session_id":…}` on stdin, the workload, wait until the timeline
//! holds every changed file (polled with a deadline), `au hook post`; its undo is
//! `au restore --session <id>`, timed. The timeline is read directly from
//! `.agent-undo/timeline.db` (read-only: `au log` prints only text with 1 s timestamps).
//!
//! Two turns after filewatchd has stopped: W2's `sed -i` over the same 2,000 files, and the
//! W5 turn (a line appended to the same 1,000 files); for each: sed/append exit → every
//! changed file recorded with the BLAKE3 of its new bytes, then the undo: files back to their
//! exact pre-turn bytes, and how many other files it wrote.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::edits::{append_line, run_sed};
use super::report::Row;
use super::rollback::stat_tree;
use super::stats::{fmt_dur, fmt_int, fmt_ratio, ratio};

pub const VERSION: &str = "0.0.3";
/// How long to wait for the timeline to hold a turn's files.
const CAPTURE_DEADLINE: Duration = Duration::from_secs(120);
const READY_DEADLINE: Duration = Duration::from_secs(20);

/// The `au` binary, or why there is none.
pub struct Tool {
    pub bin: Option<PathBuf>,
    pub why: String,
}

impl Tool {
    pub fn skipped() -> Tool {
        Tool {
            bin: None,
            why: "skipped (--skip au)".into(),
        }
    }

    /// `--au-bin`, else `<target>/bench-tools/agent-undo-0.0.3/bin/au`, installing it there
    /// with `cargo install` if missing.
    pub fn find_or_install(given: Option<&Path>, manifest: &Path) -> Tool {
        if let Some(b) = given {
            return if b.is_file() {
                Tool {
                    bin: Some(b.to_path_buf()),
                    why: format!("`{}` (given with --au-bin)", b.display()),
                }
            } else {
                Tool {
                    bin: None,
                    why: format!("--au-bin {} does not exist", b.display()),
                }
            };
        }
        let root = tools_root(manifest);
        let bin = root.join("bin/au");
        if bin.is_file() {
            return Tool {
                bin: Some(bin),
                why: format!("{VERSION} (cached in `{}`)", root.display()),
            };
        }
        install(&root, &bin)
    }

    pub fn describe(&self) -> String {
        self.why.clone()
    }
}

/// Where the tool is cached: the target dir (`$CARGO_TARGET_DIR` if set) + `bench-tools/`.
fn tools_root(manifest: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_relative() { manifest.join(t) } else { t })
        .unwrap_or_else(|| manifest.join("target"));
    target.join(format!("bench-tools/agent-undo-{VERSION}"))
}

fn install(root: &Path, bin: &Path) -> Tool {
    eprintln!(
        "agent-undo: installing {VERSION} from crates.io into {} (once; ~13 minutes on 2 cores)...",
        root.display()
    );
    let t0 = Instant::now();
    let out = Command::new("cargo")
        .args([
            "install",
            "agent-undo",
            "--version",
            VERSION,
            "--locked",
            "--root",
        ])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match out {
        Ok(o) if o.status.success() && bin.is_file() => Tool {
            bin: Some(bin.to_path_buf()),
            why: format!(
                "{VERSION}, installed by this run in {} (`{}`)",
                fmt_dur(t0.elapsed()),
                root.display()
            ),
        },
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            Tool {
                bin: None,
                why: format!(
                    "not installed: `cargo install agent-undo --version {VERSION} --locked` failed ({}): {last}",
                    o.status
                ),
            }
        }
        Err(e) => Tool {
            bin: None,
            why: format!("not installed: cannot run cargo: {e}"),
        },
    }
}

/// Runs `au ARGS` in `tree` (stdin from `input`), failing on a non-zero exit.
fn au(bin: &Path, tree: &Path, args: &[&str], input: Option<&str>) -> Result<String, String> {
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(tree)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("au {}: {e}", args.join(" ")))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| format!("au {}: stdin: {e}", args.join(" ")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("au {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "au {}: {} {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `au serve`, a child of the bench.
struct Serve {
    child: Child,
}

impl Serve {
    fn start(bin: &Path, tree: &Path, log: &Path) -> Result<Serve, String> {
        let f = fs::File::create(log).map_err(|e| format!("create {}: {e}", log.display()))?;
        let f2 = f.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(bin)
            .arg("serve")
            .current_dir(tree)
            .stdin(Stdio::null())
            .stdout(f)
            .stderr(f2)
            .spawn()
            .map_err(|e| format!("au serve: {e}"))?;
        Ok(Serve { child })
    }

    fn rss(&self) -> u64 {
        let text = fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|k| k.parse::<u64>().ok())
            .map_or(0, |k| k * 1024)
    }

    /// SIGTERM, wait up to 10 s, then SIGKILL.
    fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn open_timeline(tree: &Path) -> Result<Connection, String> {
    let p = tree.join(".agent-undo/timeline.db");
    let c = Connection::open_with_flags(&p, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("open {}: {e}", p.display()))?;
    c.busy_timeout(Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    Ok(c)
}

fn max_id(c: &Connection) -> Result<i64, String> {
    c.query_row("SELECT coalesce(max(id), 0) FROM events", [], |r| r.get(0))
        .map_err(|e| format!("timeline: {e}"))
}

/// The latest `after_hash` of each path with an event after `since`.
fn latest_after(c: &Connection, since: i64) -> Result<HashMap<String, Option<String>>, String> {
    let mut st = c
        .prepare("SELECT path, after_hash FROM events WHERE id > ?1 ORDER BY id")
        .map_err(|e| format!("timeline: {e}"))?;
    let rows = st
        .query_map([since], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .map_err(|e| format!("timeline: {e}"))?;
    let mut out = HashMap::new();
    for row in rows {
        let (p, h) = row.map_err(|e| format!("timeline: {e}"))?;
        out.insert(p, h);
    }
    Ok(out)
}

/// Waits until `au serve` records a probe file (deadline 20 s); returns spawn → recorded.
fn wait_ready(tree: &Path, t0: Instant) -> Result<Duration, String> {
    let probe = tree.join("au-probe.txt");
    let mut n = 0u32;
    while t0.elapsed() < READY_DEADLINE {
        n += 1;
        fs::write(&probe, format!("probe {n}\n")).map_err(|e| format!("write probe: {e}"))?;
        let poll = Instant::now();
        while poll.elapsed() < Duration::from_millis(200) {
            let seen = open_timeline(tree)
                .and_then(|c| {
                    c.query_row(
                        "SELECT id FROM events WHERE path = 'au-probe.txt' LIMIT 1",
                        [],
                        |r| r.get::<_, i64>(0),
                    )
                    .optional()
                    .map_err(|e| e.to_string())
                })
                .ok()
                .flatten();
            if seen.is_some() {
                let ready = t0.elapsed();
                let _ = fs::remove_file(&probe);
                return Ok(ready);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let _ = fs::remove_file(&probe);
    Err("au serve recorded no probe within 20 s".into())
}

/// One turn's capture: time from the workload's exit until the timeline held every changed
/// file with the hash of its new bytes (or the deadline), and how many it held.
struct Capture {
    took: Duration,
    exact: usize,
    events: usize,
}

fn wait_captured(c: &Connection, since: i64, want: &HashMap<String, String>) -> Result<Capture, String> {
    let t0 = Instant::now();
    let mut last_count = 0;
    let mut last_change = Instant::now();
    loop {
        let seen = latest_after(c, since)?;
        let exact = want
            .iter()
            .filter(|(p, h)| seen.get(*p).and_then(|x| x.as_deref()) == Some(h.as_str()))
            .count();
        if seen.len() != last_count {
            last_count = seen.len();
            last_change = Instant::now();
        }
        let stalled = last_change.elapsed() > Duration::from_secs(10);
        if exact == want.len() || stalled || t0.elapsed() > CAPTURE_DEADLINE {
            let events = max_id(c)?.saturating_sub(since) as usize;
            return Ok(Capture {
                took: t0.elapsed(),
                exact,
                events,
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// BLAKE3 (hex) of each path's bytes on disk now, and the bytes.
fn snapshot(tree: &Path, paths: &[String]) -> Result<Vec<Vec<u8>>, String> {
    paths
        .iter()
        .map(|p| fs::read(tree.join(p)).map_err(|e| format!("read {p}: {e}")))
        .collect()
}

/// One turn measured: capture, then the undo with `au restore --session`.
#[derive(Default)]
pub struct AuTurn {
    pub changed: usize,
    pub capture: Duration,
    pub recorded: usize,
    pub events: usize,
    pub undo: Duration,
    pub restored_exact: usize,
    /// Other files the undo wrote ((inode, mtime) changed), `.agent-undo/` left out.
    pub others_written: usize,
    pub error: Option<String>,
}

/// Runs one turn: `mutate` changes `paths`; `changed` are those expected to differ after it.
fn turn(
    bin: &Path,
    tree: &Path,
    session: &str,
    paths: &[String],
    mutate: &dyn Fn() -> Result<(), String>,
) -> Result<AuTurn, String> {
    let before = snapshot(tree, paths)?;
    let c = open_timeline(tree)?;
    let hook = format!("{{\"session_id\":\"{session}\",\"tool_name\":\"Bash\"}}");
    au(bin, tree, &["hook", "pre"], Some(&hook))?;
    let since = max_id(&c)?;
    mutate()?;
    let after = snapshot(tree, paths)?;
    let want: HashMap<String, String> = paths
        .iter()
        .zip(before.iter().zip(&after))
        .filter(|(_, (b, a))| b != a)
        .map(|(p, (_, a))| (p.clone(), blake3::hash(a).to_hex().to_string()))
        .collect();
    let cap = wait_captured(&c, since, &want)?;
    au(bin, tree, &["hook", "post"], Some(&hook))?;
    let changed_paths: BTreeSet<&str> = want.keys().map(String::as_str).collect();
    let st0 = stat_tree(tree)?;
    let t0 = Instant::now();
    au(bin, tree, &["restore", "--session", session], None)?;
    let undo = t0.elapsed();
    let st1 = stat_tree(tree)?;
    let now = snapshot(tree, paths)?;
    let restored_exact = paths
        .iter()
        .zip(before.iter().zip(&now))
        .filter(|(p, (b, n))| changed_paths.contains(p.as_str()) && b == n)
        .count();
    let others_written = st0
        .iter()
        .filter(|(p, _)| !p.starts_with(".agent-undo/") && !changed_paths.contains(p.as_str()))
        .filter(|(p, s)| st1.get(*p) != Some(*s))
        .count();
    Ok(AuTurn {
        changed: want.len(),
        capture: cap.took,
        recorded: cap.exact,
        events: cap.events,
        undo,
        restored_exact,
        others_written,
        error: None,
    })
}

/// What the bench gives agent-undo: the tree, W2's files and next sed script, W5's files, and
/// filewatchd's medians of the same workloads for the ratio.
pub struct Inputs<'a> {
    pub tree: &'a Path,
    pub sed_files: Vec<String>,
    pub sed_script: String,
    pub undo_files: Vec<String>,
    pub fw_sed: Option<Duration>,
    pub fw_undo: Option<Duration>,
    /// Where `au serve`'s output goes (outside the tree).
    pub log: PathBuf,
}

/// Everything measured, or why not.
#[derive(Default)]
pub struct AuRun {
    pub init: Duration,
    pub ready: Duration,
    pub sed: Option<AuTurn>,
    pub append: Option<AuTurn>,
    pub rss: u64,
    pub store: u64,
    pub error: Option<String>,
}

fn measure(bin: &Path, inp: &Inputs) -> AuRun {
    let mut out = AuRun::default();
    let t0 = Instant::now();
    if let Err(e) = au(bin, inp.tree, &["init"], None) {
        out.error = Some(e);
        return out;
    }
    out.init = t0.elapsed();
    let serve = match Serve::start(bin, inp.tree, &inp.log) {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let t0 = Instant::now();
    let res = wait_ready(inp.tree, t0).and_then(|r| {
        out.ready = r;
        let tree = inp.tree;
        let sed_list: Vec<u8> = inp.sed_files.iter().flat_map(|f| f.bytes().chain([0])).collect();
        out.sed = Some(turn(bin, tree, "bench-au-sed", &inp.sed_files, &|| {
            run_sed(tree, &sed_list, &inp.sed_script)
        })?);
        out.append = Some(turn(bin, tree, "bench-au-append", &inp.undo_files, &|| {
            inp.undo_files
                .iter()
                .try_for_each(|f| append_line(&tree.join(f), "// agent-undo bench\n"))
        })?);
        Ok(())
    });
    out.rss = serve.rss();
    serve.stop();
    out.store = super::gentree::disk_usage(&inp.tree.join(".agent-undo"));
    if let Err(e) = res {
        out.error = Some(e);
    }
    out
}

pub fn not_measured(why: &str) -> Vec<Row> {
    let mut row = Row::new("agent-undo (`au` 0.0.3): W2 sed capture and W5 undo");
    row.au = format!("not measured: {why}");
    vec![row]
}

fn turn_rows(what: &str, t: &AuTurn, fw_capture: Option<Duration>, fw_undo: Option<Duration>) -> Vec<Row> {
    let mut cap = Row::new(format!(
        "agent-undo, {what}: command exit → every changed file in its timeline (hook session)"
    ));
    cap.au = format!("{} ({} events)", fmt_dur(t.capture), fmt_int(t.events as u64));
    if let Some(fw) = fw_capture {
        cap.fw = format!("{} (end marker, same workload above)", fmt_dur(fw));
        cap.ratio = fmt_ratio(ratio(fw, t.capture));
    }
    cap.goal = "info: 100 % recorded".into();
    cap.correct = format!(
        "recorded with the hash of the new bytes: {}/{}",
        fmt_int(t.recorded as u64),
        fmt_int(t.changed as u64)
    );
    if t.recorded != t.changed {
        cap.correct = format!("**{}**", cap.correct);
    }
    let mut undo = Row::new(format!(
        "agent-undo, undo of that turn: `au restore --session` ({what})"
    ));
    undo.au = fmt_dur(t.undo);
    if let Some(fw) = fw_undo {
        undo.fw = format!("{} (W5 undo above)", fmt_dur(fw));
        undo.ratio = fmt_ratio(ratio(fw, t.undo));
    }
    undo.goal = "info: exact pre-turn bytes, nothing else written".into();
    undo.correct = format!(
        "back to the exact pre-turn bytes: {}/{}; other files written: {}",
        fmt_int(t.restored_exact as u64),
        fmt_int(t.changed as u64),
        t.others_written
    );
    vec![cap, undo]
}

/// agent-undo's rows and notes for one tree (run after filewatchd has stopped, in the same
/// tree).
pub fn run(name: &str, tool: &Tool, inp: &Inputs) -> (Vec<Row>, Vec<String>) {
    let Some(bin) = &tool.bin else {
        return (not_measured(&tool.why), Vec::new());
    };
    eprintln!("[{name}] agent-undo: au init, au serve, a sed turn and an append turn, each undone");
    let r = measure(bin, inp);
    let mut rows = Vec::new();
    if let Some(t) = &r.sed {
        eprintln!(
            "[{name}]   sed: recorded {}/{} in {}, undo {} ({} exact)",
            t.recorded,
            t.changed,
            fmt_dur(t.capture),
            fmt_dur(t.undo),
            t.restored_exact
        );
        rows.extend(turn_rows(
            &format!("`sed -i` over {} files (W2)", fmt_int(inp.sed_files.len() as u64)),
            t,
            inp.fw_sed,
            None,
        ));
    }
    if let Some(t) = &r.append {
        eprintln!(
            "[{name}]   append: recorded {}/{} in {}, undo {} ({} exact)",
            t.recorded,
            t.changed,
            fmt_dur(t.capture),
            fmt_dur(t.undo),
            t.restored_exact
        );
        rows.extend(turn_rows(
            &format!(
                "a line appended to {} files (W5's turn)",
                fmt_int(inp.undo_files.len() as u64)
            ),
            t,
            None,
            inp.fw_undo,
        ));
    }
    if let Some(e) = &r.error {
        eprintln!("[{name}]   agent-undo failed: {e}");
        rows.extend(not_measured(e));
    }
    let notes = vec![format!(
        "agent-undo {}: run after filewatchd stopped, on a copy of the tree holding only the {} files of its two turns (same paths and bytes; its `au init` stores every file with one fsync each, ~50 s for all of t20k), with cwd = that copy: `au init` (its initial scan: {}), `au serve` as a child (ready — a probe file in its timeline — {} after spawn), each turn a hook session (`au hook pre`/`post` with a session id on stdin), capture read from `.agent-undo/timeline.db` (polled every 20 ms with a deadline), undo `au restore --session <id>`. Its state dir lives inside the tree (`.agent-undo/`, {} at the end; blobs raw, one file each); daemon RSS at the end {}. It does not honour `.gitignore` dir patterns in its watcher and reconciles nothing changed while it was down (agent-undo's own source).",
        tool.why,
        fmt_int((inp.sed_files.len() + inp.undo_files.len()) as u64),
        fmt_dur(r.init),
        fmt_dur(r.ready),
        super::stats::fmt_bytes(r.store),
        super::stats::fmt_bytes(r.rss)
    )];
    (rows, notes)
}
