//! Undo against `git restore` on each Linux file system. For every file system a
//! user may have (this machine's disk, and as root loop-mounted images of a journaled ext4 with
//! `mkfs` defaults, xfs and btrfs, and a tmpfs), a workspace of N files in 100 directories, its
//! state dir on the same file system, one turn rewriting every file; then, alternating which
//! side goes first, the undo of that turn (timed over HTTP, then redone untimed) and `git
//! restore -- .` of the same files in a copy with its own repository (timed, after the same
//! rewrite). Prints a Markdown table: medians of the pairs and the median of the pair-by-pair
//! ratios, and the daemon's own phase timings (its debug log) as the profile of where the
//! undo's time goes.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::daemon::Daemon;
use common::stats::{fmt_dur, median};
use common::sysinfo;

const USAGE: &str = "\
undo_fs: undo against `git restore`, per file system (issue 28.4)

    cargo build --release --locked && cargo bench --bench undo_fs -- [options]

Options:
  --files N,M   workspace sizes (default 1000,10000)
  --pairs N     undo / `git restore` pairs per row (default 5)
  --fs LIST     of disk,ext4,xfs,btrfs,tmpfs (default all; the images need root)
  --bin PATH    filewatchd binary (default target/release/filewatchd)
";

struct Opts {
    files: Vec<usize>,
    pairs: usize,
    kinds: Vec<String>,
    bin: PathBuf,
}

fn parse() -> Result<Option<Opts>, String> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut o = Opts {
        files: vec![1000, 10_000],
        pairs: 5,
        kinds: ["disk", "ext4", "xfs", "btrfs", "tmpfs"]
            .map(String::from)
            .to_vec(),
        bin: manifest.join("target/release/filewatchd"),
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--files" => {
                let list = value("--files")?;
                o.files = list
                    .split(',')
                    .map(|n| n.parse().map_err(|e| format!("--files: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "--pairs" => o.pairs = value("--pairs")?.parse().map_err(|e| format!("--pairs: {e}"))?,
            "--fs" => o.kinds = value("--fs")?.split(',').map(String::from).collect(),
            "--bin" => o.bin = PathBuf::from(value("--bin")?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Some(o))
}

/// A file system mounted for the bench (or a directory of this disk), unmounted on drop.
struct Place {
    dir: PathBuf,
    image: Option<PathBuf>,
    mounted: bool,
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!("{what}: {}", String::from_utf8_lossy(&out.stderr).trim()))
}

impl Place {
    fn new(kind: &str) -> Result<Place, String> {
        let dir = std::env::temp_dir().join(format!("fwd-undo-fs-{kind}-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let mut place = Place {
            dir: dir.clone(),
            image: None,
            mounted: false,
        };
        let mkfs: &[&str] = match kind {
            "disk" => return Ok(place),
            "tmpfs" => {
                run(
                    Command::new("mount")
                        .args(["-t", "tmpfs", "-o", "size=3g", "tmpfs"])
                        .arg(&dir),
                    "mount tmpfs",
                )?;
                place.mounted = true;
                return Ok(place);
            }
            "ext4" => &["mkfs.ext4", "-q", "-F"],
            "xfs" => &["mkfs.xfs", "-q", "-f"],
            "btrfs" => &["mkfs.btrfs", "-q", "-f"],
            other => return Err(format!("unknown file system {other}")),
        };
        let image = dir.with_extension("img");
        run(
            Command::new("truncate").args(["-s", "3G"]).arg(&image),
            "truncate",
        )?;
        place.image = Some(image.clone());
        run(Command::new(mkfs[0]).args(&mkfs[1..]).arg(&image), mkfs[0])?;
        run(
            Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&dir),
            "mount",
        )?;
        place.mounted = true;
        Ok(place)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.dir).status();
        }
        let _ = fs::remove_dir_all(&self.dir);
        if let Some(image) = &self.image {
            let _ = fs::remove_file(image);
        }
    }
}

fn file(i: usize) -> String {
    format!("d{:02}/f{i}.rs", i % 100)
}

fn write_all(root: &Path, n: usize, version: usize) -> Result<(), String> {
    for i in 0..n {
        let path = root.join(file(i));
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let line = format!("// version {version} of file {i}: some source text to make it look like code\n");
        fs::write(&path, line.repeat(24)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args);
    run(&mut cmd, &format!("git {}", args.join(" ")))
}

/// The `key_ms=N` fields of the daemon's last rollback log lines.
fn phases(log: &Path) -> BTreeMap<String, u64> {
    let text = fs::read_to_string(log).unwrap_or_default();
    let mut found = BTreeMap::new();
    let Some(start) = text.rfind("rollback plan timings") else {
        return found;
    };
    let tail = &text[text[..start].rfind('\n').map_or(0, |i| i + 1)..];
    for word in tail.split_whitespace() {
        if let Some((key, value)) = word.split_once("_ms=")
            && let Ok(ms) = value.trim_end_matches(|c: char| !c.is_ascii_digit()).parse()
        {
            found
                .entry(
                    key.trim_start_matches(|c: char| !c.is_ascii_alphabetic())
                        .to_string(),
                )
                .or_insert(ms);
        }
    }
    found
}

struct Measured {
    undo: Vec<Duration>,
    git: Vec<Duration>,
    ratios: Vec<f64>,
    phases: BTreeMap<String, Vec<u64>>,
}

fn measure(o: &Opts, place: &Place, n: usize) -> Result<Measured, String> {
    let base = place.dir.join(format!("n{n}"));
    let (root, state, peer) = (base.join("ws"), base.join("state"), base.join("peer"));
    write_all(&root, n, 0)?;
    write_all(&peer, n, 0)?;
    git(&peer, &["init", "-q"])?;
    git(&peer, &["add", "-A"])?;
    git(&peer, &["commit", "-qm", "before"])?;
    let log = base.join("daemon.log");
    let wrapper = ["env", "RUST_LOG=filewatchd=debug"];
    let (d, _) = Daemon::spawn_via(&wrapper, &o.bin, &root, &state, &log, Duration::from_secs(300))?;
    d.turn_start()?;
    write_all(&root, n, 1)?;
    d.turn_end()?;
    let mut m = Measured {
        undo: vec![],
        git: vec![],
        ratios: vec![],
        phases: BTreeMap::new(),
    };
    for pair in 0..o.pairs {
        let undo = || -> Result<Duration, String> {
            let (took, status, answer) = d.undo()?;
            if status != 200 || answer["applied"] != true {
                return Err(format!("undo: HTTP {status}: {answer}"));
            }
            Ok(took)
        };
        let restore = || -> Result<Duration, String> {
            write_all(&peer, n, 1)?;
            let t0 = Instant::now();
            git(&peer, &["restore", "--", "."])?;
            Ok(t0.elapsed())
        };
        let (u, g) = if pair % 2 == 0 {
            let u = undo()?;
            (u, restore()?)
        } else {
            let g = restore()?;
            (undo()?, g)
        };
        for (key, ms) in phases(&log) {
            m.phases.entry(key).or_default().push(ms);
        }
        let (_, status, answer) = d.redo()?;
        if status != 200 {
            return Err(format!("redo: HTTP {status}: {answer}"));
        }
        m.ratios.push(u.as_secs_f64() / g.as_secs_f64());
        m.undo.push(u);
        m.git.push(g);
    }
    drop(d);
    let _ = fs::remove_dir_all(&base);
    Ok(m)
}

fn median_f(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn row(kind: &str, n: usize, m: &Measured) -> String {
    let ratios: Vec<String> = m.ratios.iter().map(|r| format!("{r:.2}")).collect();
    let profile: Vec<String> = m
        .phases
        .iter()
        .map(|(k, v)| {
            let mut v = v.clone();
            v.sort_unstable();
            format!("{k} {}", v[v.len() / 2])
        })
        .collect();
    format!(
        "| {kind} | {n} | {} | {} | **{:.2}×** ({}) | {} |",
        fmt_dur(median(&m.undo)),
        fmt_dur(median(&m.git)),
        median_f(&m.ratios),
        ratios.join(", "),
        profile.join(", ")
    )
}

fn main() {
    let o = match parse() {
        Ok(Some(o)) => o,
        Ok(None) => return print!("{USAGE}"),
        Err(e) => {
            eprintln!("undo_fs: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    println!(
        "undo_fs: {} cores, {}, {}, kernel {}, load {}, {}",
        sysinfo::nproc(),
        sysinfo::cpu_model(),
        sysinfo::mem_total(),
        sysinfo::kernel(),
        sysinfo::loadavg(),
        sysinfo::date()
    );
    println!(
        "\n| file system | files | undo (median) | `git restore` (median) | ratio (pairs) | the undo's phases, ms (median) |"
    );
    println!("|---|---|---|---|---|---|");
    for kind in &o.kinds {
        let place = match Place::new(kind) {
            Ok(place) => place,
            Err(e) => {
                println!("| {kind} | – | not measured: {e} | | | |");
                continue;
            }
        };
        for &n in &o.files {
            match measure(&o, &place, n) {
                Ok(m) => println!("{}", row(kind, n, &m)),
                Err(e) => println!("| {kind} | {n} | failed: {e} | | | |"),
            }
        }
    }
}
