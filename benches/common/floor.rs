//! The first index's floor on this machine, measured in the same run and cache state: list the
//! tree (`.git/` left out, as the daemon does), then read, BLAKE3-hash and zstd-1-compress every
//! file with 8 threads, storing nothing.
//! No index can be built faster than its content can be read and compressed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const READERS: usize = 8;

/// What the floor run did.
pub struct Floor {
    pub elapsed: Duration,
    pub files: usize,
    pub compressed: u64,
}

pub fn read_hash_compress(tree: &Path) -> Result<Floor, String> {
    let started = Instant::now();
    let mut files = Vec::new();
    list(tree, &mut files).map_err(|e| format!("listing {}: {e}", tree.display()))?;
    let next = AtomicUsize::new(0);
    let compressed = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..READERS {
            scope.spawn(|| {
                let Ok(mut zstd) = zstd::bulk::Compressor::new(1) else {
                    failed.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                while let Some(path) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let Ok(bytes) = std::fs::read(path) else {
                        failed.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    std::hint::black_box(blake3::hash(&bytes));
                    let stored = zstd
                        .compress(&bytes)
                        .map_or(bytes.len(), |z| z.len().min(bytes.len()));
                    compressed.fetch_add(stored, Ordering::Relaxed);
                }
            });
        }
    });
    match failed.into_inner() {
        0 => Ok(Floor {
            elapsed: started.elapsed(),
            files: files.len(),
            compressed: compressed.into_inner() as u64,
        }),
        n => Err(format!("the floor run could not read {n} files")),
    }
}

fn list(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() && entry.file_name() != ".git" {
            list(&entry.path(), files)?;
        } else if kind.is_file() {
            files.push(entry.path());
        }
    }
    Ok(())
}
