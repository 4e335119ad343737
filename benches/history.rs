//! Long-history benchmark: one session of 5,000 turns over 1,000,000 versions,
//! generated through the API (turn markers over HTTP, files written between them, one path
//! written twice a turn so that it has 10,000 versions), then each goal timed as the median
//! of several runs with its floor or peer beside it: the turns listing, `log`, `history` of
//! the busiest path, a rollback of 10,000 files against `git restore` of the same files
//! (alternating), and a gc of some 100,000 versions with capture probed all along. Prints a
//! Markdown table on stdout, progress on stderr.

mod common;
#[path = "history/mod.rs"]
mod history;

use std::path::PathBuf;
use std::time::Instant;

use common::stats::fmt_dur;
use common::sysinfo;
use history::{Opts, generate, measure};

const USAGE: &str = "\
history: filewatchd on a long history (issue 19.3)

The bench builds nothing: it runs the release binary. Build it first:

    cargo build --release --locked && cargo bench --bench history -- [--quick]

Options:
  --quick       500 turns x 200 files (100,000 versions), a 2,000-file rollback, 3 runs each
                (default: 5,000 turns x 200 files = 1,000,000 versions, 10,000-file rollback,
                7 runs of each read, 5 rollback pairs; about 15-25 minutes on 2 cores)
  --turns N     turns of the session (200 versions each)
  --runs N      runs of each read (the median is reported)
  --rollback-files N
                files of the rollback timed against `git restore` (default 10,000; quick 2,000)
  --pairs N     undo and `git restore` pairs of that row (default 5; quick 3)
  --dir PATH    where the tree, the state and the shadow git go (default: /tmp)
  --bin PATH    filewatchd binary (default: $FILEWATCHD_BIN, else target/release/filewatchd)
  --keep        keep the tree and the state (prints where)
  -h, --help    this text
";

fn parse() -> Result<Option<Opts>, String> {
    let mut o = Opts::full();
    let mut args = std::env::args().skip(1);
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    o.bin = std::env::var_os("FILEWATCHD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/release/filewatchd"));
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--quick" => {
                o = Opts {
                    bin: o.bin,
                    dir: o.dir,
                    keep: o.keep,
                    ..Opts::quick()
                }
            }
            "--turns" => o.turns = value("--turns")?.parse().map_err(|e| format!("--turns: {e}"))?,
            "--runs" => o.runs = value("--runs")?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--rollback-files" => {
                o.rollback_files =
                    (value("--rollback-files")?.parse()).map_err(|e| format!("--rollback-files: {e}"))?
            }
            "--pairs" => o.rollback_pairs = value("--pairs")?.parse().map_err(|e| format!("--pairs: {e}"))?,
            "--dir" => o.dir = PathBuf::from(value("--dir")?),
            "--bin" => o.bin = PathBuf::from(value("--bin")?),
            "--keep" => o.keep = true,
            "--bench" => {} // cargo bench passes it
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown option {other:?}\n\n{USAGE}")),
        }
    }
    Ok(Some(o))
}

fn run() -> Result<(), String> {
    let Some(o) = parse()? else {
        print!("{USAGE}");
        return Ok(());
    };
    if !o.bin.exists() {
        return Err(format!(
            "no binary at {}: run `cargo build --release --locked` first",
            o.bin.display()
        ));
    }
    let started = Instant::now();
    let load_start = sysinfo::loadavg();
    let mut setup = generate::Setup::new(&o)?;
    let made = generate::session(&o, &mut setup)?;
    let rows = measure::all(&o, &mut setup, &made)?;
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    println!("### Issue 19: long histories");
    println!();
    println!(
        "Machine: {} cores, {}, {}, Linux {}; {}; commit {}; load average {} at the start, {} at the end; \
         generation {} ({} turns, {} versions, the busiest path {} versions), whole run {}.",
        sysinfo::nproc(),
        sysinfo::cpu_model(),
        sysinfo::mem_total(),
        sysinfo::kernel(),
        sysinfo::date(),
        sysinfo::project_commit(&manifest).unwrap_or_else(|| "?".into()),
        load_start,
        sysinfo::loadavg(),
        fmt_dur(made.took),
        made.turns,
        made.versions,
        made.hot_versions,
        fmt_dur(started.elapsed()),
    );
    println!();
    println!("{}", measure::HEADER);
    for row in rows {
        println!("{row}");
    }
    if o.keep {
        eprintln!("kept: {}", setup.base.display());
    } else {
        setup.remove();
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("history: {e}");
        std::process::exit(1);
    }
}
