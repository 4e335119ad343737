//! Directory trees as a rollback must restore them (G3): snapshots of kind, bytes, executable
//! bit and symlink target; stat marks that show whether a file was rewritten; and
//! `assert_tree_eq`, which lists only the entries that differ.

use std::collections::BTreeMap;
use std::path::Path;

use super::api_name;

/// One entry of a tree snapshot: what a rollback must restore exactly (G3).
#[derive(Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File { bytes: Vec<u8>, exec: bool },
    Symlink(Vec<u8>),
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Dir => write!(f, "dir"),
            Entry::File { bytes, exec } => {
                let head = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).into_owned();
                let x = if *exec { " +x" } else { "" };
                write!(f, "file {} bytes{x} {head:?}", bytes.len())
            }
            Entry::Symlink(target) => write!(f, "symlink -> {:?}", String::from_utf8_lossy(target)),
        }
    }
}

/// Every entry beneath a root (the root itself excluded), symlinks not followed, keyed by the
/// API form of its relative path.
pub type Tree = BTreeMap<String, Entry>;

/// Snapshots the tree beneath `root`: kind, bytes, executable bit, symlink target.
pub fn snapshot(root: &Path) -> Tree {
    let mut tree = Tree::new();
    walk_tree(root, root, &mut |rel, path, meta| {
        use std::os::unix::ffi::OsStringExt;
        use std::os::unix::fs::PermissionsExt;
        let kind = meta.file_type();
        let entry = if kind.is_symlink() {
            Entry::Symlink(std::fs::read_link(path).unwrap().into_os_string().into_vec())
        } else if kind.is_dir() {
            Entry::Dir
        } else {
            Entry::File {
                bytes: std::fs::read(path).unwrap(),
                exec: meta.permissions().mode() & 0o111 != 0,
            }
        };
        tree.insert(rel, entry);
    });
    tree
}

/// What identifies one on-disk file or symlink object and its last write: a rewrite (new inode,
/// new mtime) or a chmod (new ctime) changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

/// The marks of every file and symlink beneath `root` (directories change whenever an entry
/// is added to them, so they are left out).
pub fn marks(root: &Path) -> BTreeMap<String, Mark> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    walk_tree(root, root, &mut |rel, _, meta| {
        if meta.is_dir() {
            return;
        }
        let mark = Mark {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        };
        out.insert(rel, mark);
    });
    out
}

fn walk_tree(root: &Path, dir: &Path, visit: &mut dyn FnMut(String, &Path, &std::fs::Metadata)) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let rel = api_name(path.strip_prefix(root).unwrap().as_os_str());
        visit(rel, &path, &meta);
        if meta.is_dir() {
            walk_tree(root, &path, visit);
        }
    }
}

/// Asserts two snapshots are equal, listing only the entries that differ.
#[track_caller]
pub fn assert_tree_eq(expected: &Tree, actual: &Tree, what: &str) {
    let mut diffs = Vec::new();
    for (path, want) in expected {
        match actual.get(path) {
            None => diffs.push(format!("  missing  {path}: want {want:?}")),
            Some(got) if got != want => diffs.push(format!("  differs  {path}: want {want:?}, got {got:?}")),
            Some(_) => {}
        }
    }
    for (path, got) in actual {
        if !expected.contains_key(path) {
            diffs.push(format!("  extra    {path}: {got:?}"));
        }
    }
    if diffs.is_empty() {
        return;
    }
    let shown = diffs.len().min(40);
    panic!(
        "{what}: {} entries differ (first {shown}):\n{}",
        diffs.len(),
        diffs[..shown].join("\n")
    );
}
