//! The Markdown on stdout: the run's header (machine, date, build, how each figure was taken),
//! then one table per tree with its notes.

use std::path::PathBuf;
use std::time::Instant;

use super::opts::Opts;
use super::tree::TreeResult;
use crate::common::stats::{fmt_bytes, fmt_dur, fmt_int};
use crate::common::{agent_undo, report, shadow, sysinfo};

pub fn table(t: &TreeResult) {
    println!(
        "### {}: {} files in {} dirs, {} (mean {} B, seed {})\n",
        t.spec.name,
        fmt_int(t.spec.n as u64),
        fmt_int(t.dirs as u64),
        fmt_bytes(t.bytes),
        fmt_int(t.spec.mean as u64),
        t.spec.seed
    );
    println!("{}", report::HEADER);
    for r in &t.rows {
        println!("{}", report::line(r));
    }
    println!();
    for n in &t.notes {
        println!("- {n}");
    }
    println!();
}

pub fn header(o: &Opts, started: Instant, load_start: &str, au: &agent_undo::Tool) {
    println!("## Scenario benchmark: filewatchd vs opencode shadow git, Codex ghost commits, agent-undo\n");
    machine_lines(o, au);
    run_line(o, started, load_start);
    method_lines(o);
}

/// Date, build, machine and disk.
fn machine_lines(o: &Opts, au: &agent_undo::Tool) {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    println!(
        "- Date: {}; filewatchd commit {}; git {}; agent-undo: {}.",
        sysinfo::date(),
        sysinfo::project_commit(&manifest).unwrap_or_else(|| "(none)".into()),
        shadow::git_version(),
        au.describe()
    );
    println!(
        "- Machine: nproc {}, {}; MemTotal {}; kernel {}.",
        sysinfo::nproc(),
        sysinfo::cpu_model(),
        sysinfo::mem_total(),
        sysinfo::kernel()
    );
    println!(
        "- Disk of the trees (`df -hT {}`): {}.",
        o.dir.display(),
        sysinfo::disk(&o.dir)
    );
}

/// The command line, the repetitions, what was skipped, the time and the load.
fn run_line(o: &Opts, started: Instant, load_start: &str) {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let args = if args.is_empty() {
        String::new()
    } else {
        format!(" -- {}", args.join(" "))
    };
    let skipped = if o.skip.is_empty() {
        String::new()
    } else {
        format!(
            "; skipped: {}",
            o.skip.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    println!(
        "- Run: `cargo bench --bench scenarios{args}`; per tree: turns × {}, sed runs × {}, rollbacks × {}, Codex snapshots in W1/W2 × {}, checkout pairs × {}, burst pairs × {}{skipped}; took {}; 1-min load average {} at the start, {} at the end (anything above ~0.1 before the start means something else was running).",
        o.reps,
        o.sed_reps,
        o.rollback_reps,
        o.codex_reps,
        o.checkout_reps,
        o.burst_reps,
        fmt_dur(started.elapsed()),
        load_start,
        sysinfo::loadavg()
    );
}

/// How the first index, the peers, the turns and the checks were measured.
fn method_lines(o: &Opts) {
    println!(
        "- First index: {}. filewatchd = spawn of `filewatchd serve` until `daemon.json` exists and `GET /v1/status` answers 200; shadow = the first `git --git-dir=$SHADOW --work-tree=. -c core.autocrlf=false add -A . && git ... write-tree` into an empty `git init --bare` dir outside the tree.",
        if o.cold {
            "page cache dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before each"
        } else {
            "warm (trees just generated; `sync` before each)"
        }
    );
    println!(
        "- Peers: **opencode shadow** = `git --git-dir=$SHADOW --work-tree=. add -A . && … write-tree` (performance.md §1.1); **codex ghost** = in the tree made a real repo (untimed: `git init`, the shadow's objects as an alternate, its index, base commit = its tree): `git status --porcelain=2 -z --untracked-files=all`, then with `GIT_INDEX_FILE=<tmp>/index` `git read-tree HEAD`, `git add --all`, `git write-tree`, `git commit-tree <tree> -p HEAD -m snap` (§1.4); **agent-undo** = `au` 0.0.3 from crates.io (its own row group below the table's filewatchd rows)."
    );
    println!(
        "- Turns: start marker (untimed), the workload, then the end marker `POST /v1/sessions/bench/turns/current/end`, timed (its barrier covers every write before it). The peers' snapshots of the same state run right after the end marker has returned, with the daemon alive but idle, so they never compete for the 2 cores. Ratio = filewatchd's median / the best peer's median; p95 is the nearest-rank 95th percentile."
    );
    println!(
        "- Correctness: the end markers' `changes` against the exact set of files changed, `tracked_files` against the files in the tree, and after each workload **disk = index**: every tracked file on disk hashed with BLAKE3 by the bench and compared with the latest version the daemon recorded for it (read from `<state>/index.sqlite` through the crate's own `store::sql::each_present`, on a read-only connection: the HTTP API has no call that lists every path's latest hash), plus recorded-but-gone paths.\n"
    );
}
