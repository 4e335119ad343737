//! What filewatchd costs the agent while it works: the agent's own commands timed in one tree
//! with the release daemon watching it, with a bare inotify watcher watching it (what any
//! inotify-based tool makes a command pay, before its own work) and with nothing watching it,
//! each first in turn, in one run (separate copies of a tree differ by more than the goal's
//! 5 % on this disk). Each watched command runs inside a turn whose end marker must list
//! exactly the files it changed (every write captured), and the marker's answer time is
//! reported beside it, with what an agent without filewatchd waits for instead: an
//! opencode-style shadow-git snapshot (`git add -A && git write-tree`) of the tree after the
//! same command unwatched. What counts is what the agent waits for, command and marker: both
//! are in the table.
//!
//! ```sh
//! cargo build --release
//! cargo bench --bench cost -- --quick          # 3 pairs per workload
//! cargo bench --bench cost -- --pairs 9        # the recorded run
//! ```
//!
//! Markdown on stdout, every sample on stderr.

mod common;
#[path = "cost/mod.rs"]
mod cost;

use std::time::Instant;

use common::stats::fmt_dur;

fn run() -> Result<i32, String> {
    let Some(o) = cost::opts::parse()? else {
        print!("{}", cost::opts::USAGE);
        return Ok(0);
    };
    let started = Instant::now();
    let load = common::sysinfo::loadavg();
    let mut bench = cost::setup::Bench::prepare(&o)?;
    let rows = cost::workloads::run_all(&mut bench, &o)?;
    let ok = rows.iter().all(|r| r.pass());
    bench.finish();
    cost::print::report(&o, &bench, &rows, started, &load);
    eprintln!("done in {}", fmt_dur(started.elapsed()));
    Ok(if o.strict && !ok { 1 } else { 0 })
}

fn main() {
    match run() {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("cost bench: {e}");
            std::process::exit(2);
        }
    }
}
