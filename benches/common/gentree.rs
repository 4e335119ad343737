//! Deterministic synthetic source-like tree: a Rust port of `gentree.py`
//! (docs: shared/reference/performance.md §8.1).
//!
//! Same shape as the Python script (same parameters, same algorithm: `n / 14` dirs nested up to
//! 6 levels, lognormal sizes with σ 1.1 capped at 40× the mean, "word salad" lines), but with
//! our own PRNG (splitmix64), so the bytes differ from Python's `random.Random(seed)`.
//! For a given `(n, mean, seed)` the output is identical on every run and machine.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for test data.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..n (n > 0), multiply-shift (bias below 2^-64 · n: irrelevant here).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Standard normal (Box–Muller, one value per call).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.random(); // (0, 1]
        let u2 = self.random();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Like Python's `random.lognormvariate(mu, sigma)`.
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.normal()).exp()
    }
}

/// One generated file.
pub struct GenFile {
    /// Path relative to the root, `/`-separated.
    pub rel: String,
    pub size: u64,
    /// Whether the content contains "fn" (so `sed -i s/fn/fx/` really changes it).
    pub has_fn: bool,
}

/// A generated tree. `files` is sorted by path bytes (the order of `git ls-files`).
pub struct GenTree {
    pub root: PathBuf,
    pub files: Vec<GenFile>,
    pub dirs: usize,
    pub bytes: u64,
}

fn words() -> Vec<String> {
    let mut w: Vec<String> = [
        "fn", "let", "mut", "self", "return", "if", "else", "for", "while", "match", "impl", "struct", "pub",
        "use", "crate", "Result", "Option", "Some", "None", "Ok", "Err", "String", "Vec", "u64", "i32",
        "println!", "config", "path", "buffer", "index", "value", "error", "handle", "state", "count",
        "item", "node", "tree",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    w.extend((0..400).map(|i| format!("ident{i}")));
    w
}

fn contains_fn(data: &[u8]) -> bool {
    data.windows(2).any(|w| w == b"fn")
}

/// Generate `n` files of mean size `mean` bytes under `root` (created if missing).
pub fn generate(root: &Path, n: usize, mean: usize, seed: u64) -> io::Result<GenTree> {
    let mut rng = SplitMix64::new(seed);
    let words = words();

    // Directories: d0001.. each under a random earlier dir (80 %) or the root, at most 6 deep.
    let mut dirs: Vec<String> = vec![String::new()];
    for i in 1..std::cmp::max(1, n / 14) {
        let mut parent = if dirs.len() > 1 && rng.random() < 0.8 {
            dirs[rng.below(dirs.len())].clone()
        } else {
            String::new()
        };
        if parent.matches('/').count() >= 6 {
            parent.clear();
        }
        let name = format!("d{i:04}");
        dirs.push(if parent.is_empty() {
            name
        } else {
            format!("{parent}/{name}")
        });
    }
    fs::create_dir_all(root)?;
    for d in &dirs {
        fs::create_dir_all(root.join(d))?;
    }

    let mut files = Vec::with_capacity(n);
    let mut total = 0u64;
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    for i in 0..n {
        let raw = rng.lognormal(0.0, 1.1) * mean as f64 / 1.83;
        let size = raw.min(40.0 * mean as f64) as usize;
        buf.clear();
        while buf.len() < size {
            for _ in 0..rng.below(4) {
                buf.extend_from_slice(b"    ");
            }
            let nw = 2 + rng.below(10); // randrange(2, 12)
            for k in 0..nw {
                if k > 0 {
                    buf.push(b' ');
                }
                buf.extend_from_slice(words[rng.below(words.len())].as_bytes());
            }
            buf.extend_from_slice(b";\n");
        }
        let dir = &dirs[i % dirs.len()];
        let name = format!("f{i:06}.rs");
        let rel = if dir.is_empty() {
            name
        } else {
            format!("{dir}/{name}")
        };
        let mut f = fs::File::create(root.join(&rel))?;
        f.write_all(&buf)?;
        total += buf.len() as u64;
        files.push(GenFile {
            rel,
            size: buf.len() as u64,
            has_fn: contains_fn(&buf),
        });
    }
    files.sort_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
    Ok(GenTree {
        root: root.to_path_buf(),
        files,
        dirs: dirs.len(),
        bytes: total,
    })
}

/// Count regular files under `root`, skipping any `.git` directory (symlinks are not followed).
pub fn count_files(root: &Path) -> io::Result<usize> {
    let mut count = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let ft = entry.file_type()?;
            if ft.is_dir() {
                if entry.file_name() != ".git" {
                    stack.push(entry.path());
                }
            } else if ft.is_file() {
                count += 1;
            }
        }
    }
    Ok(count)
}

/// Disk usage (allocated blocks) of everything under `path`.
pub fn disk_usage(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(md) = fs::symlink_metadata(&p) else {
            continue;
        };
        total += md.blocks() * 512;
        if md.is_dir()
            && let Ok(rd) = fs::read_dir(&p)
        {
            stack.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()));
        }
    }
    total
}
