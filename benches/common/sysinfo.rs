//! Machine description for the report header.

use std::fs;
use std::path::Path;
use std::process::Command;

fn cmd(prog: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(prog).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn nproc() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

pub fn mem_total() -> String {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .map(|l| l.to_string())
        })
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
        .unwrap_or_else(|| "?".into())
}

pub fn kernel() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .ok()
        .or_else(|| cmd("uname", &["-r"]))
        .unwrap_or_else(|| "?".into())
}

/// The `df -hT` line of the filesystem holding `dir`: "device type size used avail use% mount".
pub fn disk(dir: &Path) -> String {
    cmd("df", &["-hT", &dir.to_string_lossy()])
        .and_then(|t| {
            t.lines()
                .last()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .unwrap_or_else(|| "?".into())
}

pub fn date() -> String {
    cmd("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "?".into())
}

pub fn project_commit(manifest_dir: &Path) -> Option<String> {
    cmd(
        "git",
        &[
            "-C",
            &manifest_dir.to_string_lossy(),
            "rev-parse",
            "--short",
            "HEAD",
        ],
    )
}

/// The 1-minute load average (/proc/loadavg), to show whether something else was running.
pub fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
