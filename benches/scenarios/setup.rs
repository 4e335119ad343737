//! Before the first tree: the daemon binary to run (the bench builds nothing), the tools it
//! needs, the dir of the trees; and the page cache before each first index.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use super::opts::Opts;

/// The filewatchd binary: `--bin`, `$FILEWATCHD_BIN`, or the release build next to the bench.
pub fn find_binary(o: &Opts) -> Result<PathBuf, String> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = binary_candidates(o, &manifest);
    for c in &candidates {
        if c.is_file() {
            warn_if_stale(c, &manifest);
            return Ok(c.clone());
        }
    }
    Err(format!(
        "filewatchd binary not found (looked at {}).\n\
         The benchmark does not build the daemon: run `cargo build --release` first, i.e.\n\n    \
         cargo build --release && cargo bench --bench scenarios -- --quick\n",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn binary_candidates(o: &Opts, manifest: &Path) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(b) = &o.bin {
        candidates.push(b.clone());
    } else if let Some(b) = std::env::var_os("FILEWATCHD_BIN") {
        candidates.push(PathBuf::from(b));
    } else {
        if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            let t = PathBuf::from(t);
            let t = if t.is_relative() { manifest.join(t) } else { t };
            candidates.push(t.join("release/filewatchd"));
        }
        candidates.push(manifest.join("target/release/filewatchd"));
        // The bench runs from <target>/release/deps/scenarios-<hash>.
        if let Ok(exe) = std::env::current_exe()
            && let Some(rel) = exe.parent().and_then(Path::parent)
        {
            candidates.push(rel.join("filewatchd"));
        }
    }
    candidates.dedup();
    candidates
}

fn newest_mtime(p: &Path) -> Option<SystemTime> {
    let md = fs::metadata(p).ok()?;
    let mut best = md.modified().ok();
    if md.is_dir() {
        for e in fs::read_dir(p).ok()?.flatten() {
            if let Some(t) = newest_mtime(&e.path()) {
                best = best.max(Some(t));
            }
        }
    }
    best
}

fn warn_if_stale(bin: &Path, manifest: &Path) {
    let bin_t = fs::metadata(bin).and_then(|m| m.modified()).ok();
    let src_t = newest_mtime(&manifest.join("src")).max(newest_mtime(&manifest.join("Cargo.toml")));
    if let (Some(b), Some(s)) = (bin_t, src_t)
        && s > b
    {
        eprintln!(
            "warning: {} is older than src/ or Cargo.toml: run `cargo build --release` to measure the current code",
            bin.display()
        );
    }
}

pub fn check_tools() -> Result<(), String> {
    for tool in ["git", "sed", "xargs", "tar", "grep", "kill", "sync"] {
        let ok = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !ok {
            return Err(format!("`{tool}` is needed and was not found"));
        }
    }
    Ok(())
}

/// The options with `--dir` made (if missing) and canonical.
pub fn with_tree_dir(o: Opts) -> Result<Opts, String> {
    fs::create_dir_all(&o.dir).map_err(|e| format!("--dir {}: {e}", o.dir.display()))?;
    let dir = fs::canonicalize(&o.dir).map_err(|e| format!("--dir {}: {e}", o.dir.display()))?;
    Ok(Opts { dir, ..o })
}

/// `sync`, and with `--cold` drop the page cache. Returns false if dropping failed.
pub fn prepare_cache(cold: bool) -> bool {
    let _ = Command::new("sync").status();
    if !cold {
        return true;
    }
    fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}
