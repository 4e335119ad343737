//! Scenario benchmark: filewatchd against the peers side by side in one run, on generated trees
//! (performance.md §3, §8): an opencode-style shadow git, Codex-style ghost commits in the tree
//! as a real repo, and agent-undo (`au`) where it can be installed. Workloads W1-W8 of
//! performance.md §8.3; each workload module under `benches/common/` runs one, and the driver
//! under `benches/scenarios/` runs them in order and builds their rows. Prints Markdown for
//! docs/benchmarks.md on stdout and progress on stderr. See `USAGE`.

mod common;
// This bench's own modules. A plain `mod scenarios;` would find this very file, and a
// `benches/NAME.rs` would be a bench target of its own: hence the path to a `mod.rs`.
#[path = "scenarios/mod.rs"]
mod scenarios;

use std::time::Instant;

use common::stats::fmt_dur;
use common::{agent_undo, daemon, sysinfo};
use scenarios::opts::{self, USAGE};
use scenarios::{print, setup, tree};

fn run() -> Result<i32, String> {
    let Some(o) = opts::parse_args()? else {
        print!("{USAGE}");
        return Ok(0);
    };
    let bin = match setup::find_binary(&o) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return Ok(1);
        }
    };
    setup::check_tools()?;
    let o = setup::with_tree_dir(o)?;
    let tck = daemon::clk_tck();
    let manifest = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let au = if o.runs("au") {
        agent_undo::Tool::find_or_install(o.au_bin.as_deref(), &manifest)
    } else {
        agent_undo::Tool::skipped()
    };
    eprintln!("filewatchd: {}", bin.display());
    let load_start = sysinfo::loadavg();
    let started = Instant::now();
    let mut results = Vec::new();
    for spec in tree::specs(&o) {
        results.push(tree::run_tree(&o, spec, &bin, tck, &au)?);
    }
    tree::add_flatness_row(&mut results);
    print::header(&o, started, &load_start, &au);
    let mut all_ok = true;
    for r in &results {
        print::table(r);
        all_ok &= r.correct_ok && r.rows.iter().all(|x| x.pass != Some(false));
    }
    eprintln!("done in {}", fmt_dur(started.elapsed()));
    Ok(if o.strict && !all_ok { 1 } else { 0 })
}

fn main() {
    let code = match run() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    };
    std::process::exit(code);
}
