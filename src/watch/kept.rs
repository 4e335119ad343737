//! Ignored files that are a person's work (docs/tracking.md, "Ignored files"): a file a
//! `.gitignore` (or `.git/info/exclude`) rule ignores by its own name (`.env`, `*.pem`, a local
//! config), outside any ignored directory, is recorded like a tracked file, so that `git clean
//! -fdx` or an `rm` of it can be undone. Up to a size and a count (`[ignored_files]` in the
//! config): a build's outputs that a file rule ignores (`*.o` beside the sources) are not a
//! cost without bound. The contents of ignored directories (`build/`, `node_modules/`) are
//! never recorded: nothing beneath them is even watched.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ignore::gitignore::Glob;

use crate::config::IgnoredFiles;
use crate::paths::RelPath;

/// Which ignored files are recorded: shared by every clone of the rules (a path kept stays
/// kept, so its removal is recorded too).
#[derive(Debug, Clone, Default)]
pub struct Kept {
    limits: Option<IgnoredFiles>,
    paths: Arc<Mutex<HashSet<RelPath>>>,
}

impl Kept {
    pub fn new(limits: IgnoredFiles) -> Self {
        Self {
            limits: limits.record.then_some(limits),
            paths: Arc::default(),
        }
    }

    /// Whether the file `path` (at `abs`), which `glob` ignores, is recorded all the same.
    pub fn keeps(&self, path: &RelPath, abs: &Path, glob: &Glob) -> bool {
        let Some(limits) = &self.limits else {
            return false;
        };
        if glob.is_only_dir() || !from_git(glob) {
            return false;
        }
        let Ok(mut kept) = self.paths.lock() else {
            return false;
        };
        if kept.contains(path) {
            return true;
        }
        let small = std::fs::symlink_metadata(abs).is_ok_and(|m| m.is_file() && m.len() <= limits.max_size);
        if !small {
            return false;
        }
        if kept.len() >= limits.max_files {
            if kept.len() == limits.max_files {
                tracing::info!(
                    max_files = limits.max_files,
                    "more ignored files than [ignored_files] max_files: the rest are not recorded"
                );
                // Said once: the set grows past the limit by this marker only.
                kept.insert(RelPath::from_fs_bytes(b"\0said".to_vec()));
            }
            return false;
        }
        kept.insert(path.clone());
        true
    }
}

/// A rule from a `.gitignore` or `.git/info/exclude`: git's, whose files `git clean -X`
/// removes. The config's `ignore` and `.filewatchdignore` say "do not record" and are obeyed.
fn from_git(glob: &Glob) -> bool {
    glob.from().is_some_and(|file| {
        file.file_name().is_some_and(|n| n == ".gitignore") || file.ends_with("info/exclude")
    })
}
