//! What a turn marker pays for git (issue 49): in a repository of N files (100,000 by default,
//! an index of about 8 MB), the turn end after editing 5 files (git did not move: a few `stat`s)
//! and after `git add -A && git commit` of one file (the index moved: it is read, counted and
//! stored), beside what a user would run instead to keep the same state before an agent's turn:
//! `git stash create` (a commit of the index and the work tree, the ref not moved). The two sides
//! alternate round by round; the marker is timed from `filewatchd turn end` spawned to exit.
//!
//! `cargo bench --bench git_marker -- [--files N] [--rounds R]` (defaults 100000 and 15).
//! Prints p50 and p95 of each, and the median of the pairs' ratios.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_filewatchd");

fn main() {
    let (files, rounds) = (arg("--files", 100_000), arg("--rounds", 15));
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
    std::fs::create_dir_all(&home).expect("home");
    make_repo(&ws, files);
    let index = std::fs::metadata(ws.join(".git/index")).map_or(0, |m| m.len());
    filewatchd(&home, &ws, &["start", "--root", &ws.to_string_lossy()]);
    let (mut edits, mut commits, mut stash_edits, mut stash_commits) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        filewatchd(&home, &ws, &["turn", "start", "--session", "bench"]);
        for k in 0..5 {
            append(&ws.join(format!("d{k}/f0.txt")), round);
        }
        edits.push(time(|| {
            filewatchd(&home, &ws, &["turn", "end", "--session", "bench"])
        }));
        stash_edits.push(time(|| git(&ws, &["stash", "create"])));
        filewatchd(&home, &ws, &["turn", "start", "--session", "bench"]);
        append(&ws.join("d9/f9.txt"), round);
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", &format!("round {round}")]);
        commits.push(time(|| {
            filewatchd(&home, &ws, &["turn", "end", "--session", "bench"])
        }));
        append(&ws.join("d9/f9.txt"), round);
        stash_commits.push(time(|| git(&ws, &["stash", "create"])));
        git(&ws, &["checkout", "-q", "--", "d9/f9.txt"]);
    }
    filewatchd(&home, &ws, &["stop"]);
    println!(
        "{files} files, index {:.1} MB, {rounds} rounds",
        index as f64 / 1e6
    );
    println!("| marker after | filewatchd p50 / p95 | `git stash create` p50 / p95 | ÷ (median of pairs) |");
    println!("|---|---|---|---|");
    row("editing 5 files", &edits, &stash_edits);
    row("`git add -A && git commit` of one file", &commits, &stash_commits);
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// `files` small files in directories of 40, all committed.
fn make_repo(ws: &Path, files: usize) {
    for i in 0..files {
        let dir = ws.join(format!("d{}", i / 40));
        if i % 40 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("f{}.txt", i % 40)), format!("{i}\n")).expect("write");
    }
    git(ws, &["init", "-q", "-b", "main"]);
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-qm", "the tree"]);
}

fn append(path: &Path, round: usize) {
    let mut text = std::fs::read_to_string(path).expect("read");
    text.push_str(&format!("round {round}\n"));
    std::fs::write(path, text).expect("write");
}

fn git(ws: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "gc.auto=0", "-c", "user.name=bench", "-c", "user.email=b@e"])
        .args(args)
        .current_dir(ws)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

fn filewatchd(home: &Path, ws: &Path, args: &[&str]) {
    let out = Command::new(BIN)
        .args(args)
        .env("FILEWATCHD_HOME", home)
        .env("FILEWATCHD_AUTOSTART", "0")
        .env_remove("FILEWATCHD_URL")
        .env_remove("FILEWATCHD_TOKEN")
        .current_dir(ws)
        .output()
        .expect("filewatchd");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn time(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

fn row(what: &str, ours: &[Duration], theirs: &[Duration]) {
    let pct = |v: &[Duration], p: usize| {
        let mut v = v.to_vec();
        v.sort();
        v[(v.len() - 1) * p / 100]
    };
    let ratios: Vec<Duration> = ours
        .iter()
        .zip(theirs)
        .map(|(a, b)| Duration::from_secs_f64(a.as_secs_f64() / b.as_secs_f64().max(1e-9)))
        .collect();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!(
        "| {what} | {} / {} | {} / {} | {:.2}× |",
        ms(pct(ours, 50)),
        ms(pct(ours, 95)),
        ms(pct(theirs, 50)),
        ms(pct(theirs, 95)),
        pct(&ratios, 50).as_secs_f64()
    );
}
