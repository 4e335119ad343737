//! The long session, made through the API: a tree of `pool` files, `rollback_files` more for
//! the rollback, then `turns` turns; each writes the busy path `hot.txt` twice (a barrier
//! between, so both are versions) and `per_turn - 2` files of the pool in rotation.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::Opts;
use crate::common::daemon::{Daemon, SESSION};

pub const HOT: &str = "hot.txt";

pub struct Setup {
    pub base: PathBuf,
    pub root: PathBuf,
    pub state: PathBuf,
    pub daemon: Option<Daemon>,
}

pub struct Made {
    pub took: Duration,
    pub turns: usize,
    pub versions: i64,
    pub hot_versions: usize,
}

impl Setup {
    pub fn new(o: &Opts) -> Result<Setup, String> {
        let base = o.dir.join(format!("fwd-history-{}", std::process::id()));
        let root = base.join("tree");
        fs::create_dir_all(&root).map_err(|e| format!("create {}: {e}", root.display()))?;
        Ok(Setup {
            state: base.join("state"),
            root,
            base,
            daemon: None,
        })
    }

    pub fn daemon(&self) -> &Daemon {
        self.daemon.as_ref().expect("the daemon runs")
    }

    pub fn remove(mut self) {
        if let Some(mut d) = self.daemon.take() {
            d.stop();
        }
        let _ = fs::remove_dir_all(&self.base);
    }
}

pub fn pool_path(i: usize) -> String {
    format!("src/d{:03}/f{i:05}.txt", i % 200)
}

pub fn rollback_path(i: usize) -> String {
    format!("rb/d{:02}/r{i:05}.txt", i % 100)
}

/// Some 200 bytes of text, different for every (turn, file).
pub fn content(turn: usize, file: usize) -> String {
    let line = format!(
        "turn {turn} file {file}: let value_{file} = {};\n",
        turn * 7 + file
    );
    line.repeat(200 / line.len() + 1)
}

pub fn write(root: &Path, rel: &str, text: &str) -> Result<(), String> {
    let path = root.join(rel);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    }
    fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))
}

/// The tree, the daemon (keeping all but the last `gc_turns` turns' history at gc), and the
/// turns.
pub fn session(o: &Opts, s: &mut Setup) -> Result<Made, String> {
    let keep = o.turns.saturating_sub(o.gc_turns).max(1);
    write(
        &s.root,
        ".filewatchd.toml",
        &format!("keep_days = 0\nkeep_turns = {keep}\n"),
    )?;
    write(&s.root, HOT, "hot 0\n")?;
    for i in 0..o.pool {
        write(&s.root, &pool_path(i), &content(0, i))?;
    }
    for i in 0..o.rollback_files {
        write(&s.root, &rollback_path(i), &content(0, 1_000_000 + i))?;
    }
    let log = s.base.join("daemon.log");
    let (daemon, _) = Daemon::spawn(&o.bin, &s.root, &s.state, &log, Duration::from_secs(600))?;
    s.daemon = Some(daemon);
    let d = s.daemon();
    let started = Instant::now();
    let others = o.per_turn - 2;
    for t in 1..=o.turns {
        d.turn_start()?;
        write(&s.root, HOT, &format!("hot {t} a\n"))?;
        barrier(d)?;
        write(&s.root, HOT, &format!("hot {t} b\n"))?;
        for j in 0..others {
            let i = (t * others + j) % o.pool;
            write(&s.root, &pool_path(i), &content(t, i))?;
        }
        d.turn_end()?;
        if t % 250 == 0 {
            eprintln!(
                "  {t} of {} turns ({})",
                o.turns,
                crate::common::stats::fmt_dur(started.elapsed())
            );
        }
    }
    let took = started.elapsed();
    let status = d.status()?;
    let history = d.get_json(&format!("/v1/history?path={HOT}"))?;
    Ok(Made {
        took,
        turns: o.turns,
        versions: status["latest_seq"].as_i64().unwrap_or(0),
        hot_versions: history["versions"].as_array().map_or(0, Vec::len),
    })
}

/// Every write made before it is recorded when it returns (`content` answers behind the
/// barrier).
pub fn barrier(d: &Daemon) -> Result<(), String> {
    let (status, _) = d.get_text(&format!("/v1/content?path={HOT}"))?;
    match status {
        200 => Ok(()),
        other => Err(format!("GET /v1/content: HTTP {other}")),
    }
}

/// The session's name, for the requests `measure` makes.
pub fn session_name() -> &'static str {
    SESSION
}
