//! Options of the agent-cost benchmark.

use std::path::PathBuf;

pub const USAGE: &str = "\
cargo bench --bench cost -- [OPTIONS]

The agent's own commands in one tree, with filewatchd watching it, with a bare inotify watcher
watching it (the kernel's cost of being watched at all) and with nothing watching it, each
first in turn (issues 19 and 32).

  --quick          3 rounds per workload (default 7)
  --pairs N        rounds per workload (each runs the command once for each side)
  --only LIST      comma-separated workloads: sed, checkout, codegen, npm, commit (default all)
  --files N        files in the generated tree (default 20000)
  --bin PATH       the daemon to measure (default target/release/filewatchd)
  --dir PATH       where the tree goes (default a temp dir, removed after)
  --strict         exit 1 when a goal or a capture check fails
";

pub const WORKLOADS: [&str; 5] = ["sed", "checkout", "codegen", "npm", "commit"];

pub struct Opts {
    pub pairs: usize,
    pub only: Vec<String>,
    pub files: usize,
    pub bin: PathBuf,
    pub dir: Option<PathBuf>,
    pub strict: bool,
}

impl Opts {
    pub fn runs(&self, workload: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| w == workload)
    }
}

/// `None` for `--help`.
pub fn parse() -> Result<Option<Opts>, String> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut o = Opts {
        pairs: 7,
        only: Vec::new(),
        files: 20_000,
        bin: manifest.join("target/release/filewatchd"),
        dir: None,
        strict: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => o.pairs = 3,
            "--pairs" => o.pairs = number(args.next(), "--pairs")?,
            "--files" => o.files = number(args.next(), "--files")?,
            "--only" => o.only = workloads(args.next())?,
            "--bin" => o.bin = PathBuf::from(args.next().ok_or("--bin needs a path")?),
            "--dir" => o.dir = Some(PathBuf::from(args.next().ok_or("--dir needs a path")?)),
            "--strict" => o.strict = true,
            "--bench" => {}
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
    }
    if !o.bin.is_file() {
        return Err(format!(
            "{} not found: run `cargo build --release` first, or pass --bin",
            o.bin.display()
        ));
    }
    Ok(Some(o))
}

fn number(v: Option<String>, what: &str) -> Result<usize, String> {
    v.and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .ok_or(format!("{what} needs a positive number"))
}

fn workloads(v: Option<String>) -> Result<Vec<String>, String> {
    let v = v.ok_or("--only needs a list, e.g. sed,npm")?;
    let list: Vec<String> = v.split(',').map(str::to_string).collect();
    match list.iter().find(|w| !WORKLOADS.contains(&w.as_str())) {
        Some(bad) => Err(format!(
            "--only: unknown workload {bad:?} (one of {})",
            WORKLOADS.join(", ")
        )),
        None => Ok(list),
    }
}
