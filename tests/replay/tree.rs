//! The workspace's tree in git's terms (mode, blob id, path; and the directories), read from
//! the disk, and its comparison with the tree git stores for a commit.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::git::{Blob, GitTree, RawPath, Repo, show};

/// Whether `path` names libfuse's `.fuse_hidden…` stand-in for a removed file still open.
pub fn is_fuse_stand_in(path: &[u8]) -> bool {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    name.starts_with(b".fuse_hidden")
}

/// The tree on disk beneath the repository's root, `.git` left out, as git would store it: a
/// file's mode is 100755 when its owner may execute it, a symlink's blob is its target.
pub fn on_disk(repo: &Repo, root: &Path) -> GitTree {
    let mut tree = GitTree::default();
    let mut files = Vec::new();
    let mut symlinks = Vec::new();
    walk(root, root, &mut |rel, meta| {
        let kind = meta.file_type();
        if kind.is_dir() {
            tree.dirs.insert(rel);
        } else if is_fuse_stand_in(&rel) {
            // Not hashed: it goes the moment its last reader closes it.
            let blob = Blob {
                mode: "(FUSE stand-in)".to_string(),
                oid: "(a removed file something still has open)".to_string(),
            };
            tree.files.insert(rel, blob);
        } else if kind.is_symlink() {
            symlinks.push(rel);
        } else if kind.is_file() {
            let exec = meta.permissions().mode() & 0o100 != 0;
            files.push((rel, if exec { "100755" } else { "100644" }));
        } else {
            let blob = Blob {
                mode: format!("{:?}", kind),
                oid: "(not a file, symlink or directory)".to_string(),
            };
            tree.files.insert(rel, blob);
        }
    });
    let paths: Vec<&RawPath> = files.iter().map(|(p, _)| p).collect();
    let oids = if paths.is_empty() {
        Vec::new()
    } else {
        repo.hash_files(&paths)
    };
    for ((path, mode), oid) in files.into_iter().zip(oids) {
        tree.files.insert(
            path,
            Blob {
                mode: mode.to_string(),
                oid,
            },
        );
    }
    for path in symlinks {
        let target = std::fs::read_link(root.join(Path::new(std::ffi::OsStr::from_bytes(&path)))).unwrap();
        let oid = repo.hash_bytes(target.as_os_str().as_bytes());
        tree.files.insert(
            path,
            Blob {
                mode: "120000".to_string(),
                oid,
            },
        );
    }
    tree
}

fn walk(root: &Path, dir: &Path, visit: &mut dyn FnMut(RawPath, &std::fs::Metadata)) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let rel = path.strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
        if rel == b".git" {
            continue;
        }
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            // A stand-in goes the moment its last reader closes it, listed or not.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && is_fuse_stand_in(&rel) => continue,
            Err(e) => panic!("lstat {}: {e}", path.display()),
        };
        visit(rel, &meta);
        if meta.is_dir() {
            walk(root, &path, visit);
        }
    }
}

/// Every difference between the tree git stores (`want`) and the one on disk (`found`), one
/// line per path: `path: want <what git has>, found <what the disk has>`.
pub fn differences(want: &GitTree, found: &GitTree) -> Vec<String> {
    let (want, found) = (nodes(want), nodes(found));
    let mut paths: Vec<&RawPath> = want.keys().chain(found.keys()).copied().collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| want.get(*p) != found.get(*p))
        .map(|p| {
            format!(
                "  {}: want {}, found {}",
                show(p),
                describe(want.get(p)),
                describe(found.get(p))
            )
        })
        .collect()
}

fn nodes(tree: &GitTree) -> BTreeMap<&RawPath, Option<&Blob>> {
    let dirs = tree.dirs.iter().map(|d| (d, None));
    dirs.chain(tree.files.iter().map(|(p, b)| (p, Some(b)))).collect()
}

fn describe(node: Option<&Option<&Blob>>) -> String {
    match node {
        None => "nothing".to_string(),
        Some(None) => "a directory".to_string(),
        Some(Some(blob)) => format!("{} {}", blob.mode, blob.oid),
    }
}
