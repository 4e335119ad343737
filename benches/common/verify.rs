//! The correctness column: the daemon's latest recorded tree against a fresh BLAKE3 hash of every
//! file on disk (performance.md §8.3, "0 mismatches").
//!
//! The HTTP API has no call that lists every path's latest hash (`/v1/history` is one path per
//! request), so the index is read directly through the library's own query,
//! `store::sql::each_present`, on a read-only connection to `<state>/index.sqlite` beside the
//! running daemon (WAL: readers never block the writer). Call it right after a barrier (an end
//! marker), so every write before it is in the index.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use filewatchd::model::State;
use filewatchd::store::{db, sql};

use super::stats::{fmt_dur, fmt_int};

/// What the comparison found.
#[derive(Debug, Default, Clone)]
pub struct Check {
    /// Regular files on disk (tracked ones: `.git/`, `ignored` and `.filewatchd-*` left out).
    pub disk_files: usize,
    /// On disk, not in the index as a present file.
    pub missing: usize,
    /// In the index as a present file, not on disk.
    pub stale: usize,
    /// In both, with a different hash.
    pub wrong: usize,
    /// Up to 3 example paths of each kind of mismatch.
    pub examples: Vec<String>,
    pub took: Duration,
    /// Set when the check itself could not run.
    pub error: Option<String>,
}

impl Check {
    pub fn mismatches(&self) -> usize {
        self.missing + self.stale + self.wrong
    }

    pub fn ok(&self) -> bool {
        self.error.is_none() && self.mismatches() == 0
    }

    /// "disk = index: 20,000 files, 0 mismatches" or what differed.
    pub fn text(&self) -> String {
        if let Some(e) = &self.error {
            return format!("**disk vs index not checked: {e}**");
        }
        if self.ok() {
            return format!(
                "disk = index: {} files hashed, 0 mismatches",
                fmt_int(self.disk_files as u64)
            );
        }
        format!(
            "**disk ≠ index: {} mismatches of {} files ({} not recorded, {} recorded but gone, {} wrong hash; e.g. {})**",
            fmt_int(self.mismatches() as u64),
            fmt_int(self.disk_files as u64),
            self.missing,
            self.stale,
            self.wrong,
            self.examples.join(", ")
        )
    }
}

/// Every tracked regular file under `root` by relative path (bytes), skipping `.git`,
/// `.filewatchd-*` and the relative paths in `ignored` (directories, with everything below).
pub fn disk_files(root: &Path, ignored: &[&str]) -> Result<Vec<(Vec<u8>, PathBuf)>, String> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), Vec::<u8>::new())];
    while let Some((dir, rel)) = stack.pop() {
        let rd = fs::read_dir(&dir).map_err(|e| format!("read_dir {}: {e}", dir.display()))?;
        for entry in rd {
            let entry = entry.map_err(|e| format!("read_dir {}: {e}", dir.display()))?;
            let name = entry.file_name();
            let nb = name.as_bytes();
            if nb == b".git" || nb.starts_with(b".filewatchd-") {
                continue;
            }
            let mut child = rel.clone();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(nb);
            if ignored.iter().any(|i| i.as_bytes() == child.as_slice()) {
                continue;
            }
            let ft = entry
                .file_type()
                .map_err(|e| format!("stat {}: {e}", entry.path().display()))?;
            if ft.is_dir() {
                stack.push((entry.path(), child));
            } else if ft.is_file() {
                out.push((child, entry.path()));
            }
        }
    }
    Ok(out)
}

/// BLAKE3 of each file, on two threads; `None` where the read failed.
fn hash_all(files: &[(Vec<u8>, PathBuf)]) -> Vec<Option<[u8; 32]>> {
    let half = files.len().div_ceil(2).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = files
            .chunks(half)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|(_, p)| fs::read(p).ok().map(|b| *blake3::hash(&b).as_bytes()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// The latest recorded hash of every present regular file the daemon could read.
fn index_files(state: &Path) -> Result<HashMap<Vec<u8>, [u8; 32]>, String> {
    let db_path = state.join("index.sqlite");
    let conn = db::open_reader(&db_path).map_err(|e| format!("{e}"))?;
    let mut files = HashMap::new();
    sql::each_present(&conn, None, |path, latest| {
        if let State::File(f) = latest.state
            && let Some(hash) = f.hash()
        {
            files.insert(path.as_bytes().to_vec(), hash.0);
        }
    })
    .map_err(|e| format!("query the index: {e}"))?;
    Ok(files)
}

/// Compares the index in `state` with the disk under `root` (see the module's doc).
pub fn check(root: &Path, state: &Path, ignored: &[&str]) -> Check {
    let t0 = Instant::now();
    let mut c = Check::default();
    let (files, index) = match (disk_files(root, ignored), index_files(state)) {
        (Ok(f), Ok(i)) => (f, i),
        (Err(e), _) | (_, Err(e)) => {
            c.error = Some(e);
            return c;
        }
    };
    let hashes = hash_all(&files);
    c.disk_files = files.len();
    let mut seen = HashSet::with_capacity(files.len());
    let example = |c: &mut Check, kind: &str, p: &[u8]| {
        if c.examples.len() < 3 {
            c.examples
                .push(format!("`{}` ({kind})", String::from_utf8_lossy(p)));
        }
    };
    for ((rel, _), h) in files.iter().zip(&hashes) {
        seen.insert(rel.as_slice());
        match index.get(rel) {
            None => {
                c.missing += 1;
                example(&mut c, "not recorded", rel);
            }
            Some(want) if Some(want) != h.as_ref() => {
                c.wrong += 1;
                example(&mut c, "wrong hash", rel);
            }
            Some(_) => {}
        }
    }
    for rel in index.keys() {
        if !seen.contains(rel.as_slice()) {
            c.stale += 1;
            example(&mut c, "recorded, gone", rel);
        }
    }
    c.took = t0.elapsed();
    c
}

/// Progress line for stderr.
pub fn progress(name: &str, what: &str, c: &Check) -> String {
    format!(
        "[{name}]   verify after {what}: {} ({})",
        c.text(),
        fmt_dur(c.took)
    )
}
