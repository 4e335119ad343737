//! The agent-cost table, with the machine and the command, for docs/benchmarks.md.

use std::time::Instant;

use super::opts::Opts;
use super::setup::Bench;
use super::workloads::Samples;
use crate::common::stats::{fmt_dur, fmt_int, fmt_med_p95, fmt_ratio, median, pass};
use crate::common::sysinfo;

pub fn report(o: &Opts, b: &Bench, rows: &[Samples], started: Instant, load_start: &str) {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    println!(
        "### The agent's own commands, watched and not, in one tree (`cargo bench --bench cost -- {}`)\n",
        args.join(" ")
    );
    let commit = sysinfo::project_commit(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    println!(
        "- {}; filewatchd {} ({}); machine: nproc {}, {}, {}, kernel {}; disk {}.",
        sysinfo::date(),
        commit.as_deref().unwrap_or("?"),
        b.bin.display(),
        sysinfo::nproc(),
        sysinfo::cpu_model(),
        sysinfo::mem_total(),
        sysinfo::kernel(),
        sysinfo::disk(&b.tree)
    );
    println!(
        "- Tree: {} files in {} dirs (t20k's generator, seed 1), made a git repo. Each round runs the \
         command three times in that one tree: the daemon watching it (the command in a turn), a bare \
         inotify watcher in the bench watching it (filewatchd's mask on the same directories, every \
         event read and dropped; the daemon stopped), and nothing (the daemon stopped; restarted, \
         untimed, before its next run). {} rounds per workload, each side first in turn; \
         `sync` before each timed command. Took {}; 1-min load {} at the start, {} at the end.\n",
        fmt_int(b.g.files.len() as u64),
        fmt_int(b.g.dirs as u64),
        o.pairs,
        fmt_dur(started.elapsed()),
        load_start,
        sysinfo::loadavg()
    );
    println!(
        "| command | with filewatchd | without | ratio (medians) | median of pair ratios | goal | bare inotify watcher ÷ without | filewatchd ÷ bare watcher | end marker after it | shadow snapshot after it, unwatched | marker ÷ shadow | command + marker ÷ command alone | pass | daemon CPU during it | captured |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for s in rows {
        println!("{}", line(s));
    }
    println!();
}

fn line(s: &Samples) -> String {
    let captured = match &s.first_bad {
        None => format!("exact in {}/{}", s.captured_ok, s.watched.len()),
        Some(bad) => format!("**{}/{} exact** (first: {bad})", s.captured_ok, s.watched.len()),
    };
    let marker_goal = s
        .kind
        .marker_goal()
        .map_or(String::new(), |g| format!(" (goal ≤ {g:.2}×)"));
    format!(
        "| {} | {} | {} | {} | {} | ≤ {:.2}× | {} ({}) | {} | {} | {} | {}{} | {} | {} | {} | {} |",
        s.kind.title(),
        fmt_med_p95(&s.watched),
        fmt_med_p95(&s.plain),
        fmt_ratio(s.ratio()),
        fmt_ratio(median_f64(&s.pair_ratios)),
        s.kind.goal(),
        fmt_ratio(s.bare_ratio()),
        fmt_med_p95(&s.bare),
        fmt_ratio(s.over_bare_ratio()),
        fmt_med_p95(&s.end),
        fmt_med_p95(&s.shadow),
        fmt_ratio(s.marker_ratio()),
        marker_goal,
        fmt_ratio(s.waited_ratio()),
        pass(s.pass()),
        fmt_dur(median(&s.daemon_cpu)),
        captured
    )
}

fn median_f64(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
