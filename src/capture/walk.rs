//! Walking the tracked tree (or one subtree) with the ignore rules: the first index, the
//! restart reconcile, rescans and new directories all start here. Symlinks are never
//! followed and ignored directories are never entered.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::model::StatKey;
use crate::paths::RelPath;
use crate::watch::filter::IgnoreRules;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Symlink,
    Dir,
}

#[derive(Debug)]
pub struct Entry {
    pub path: RelPath,
    pub kind: EntryKind,
    pub stat: StatKey,
}

/// Every tracked entry beneath `start` (the root when `None`), `start` itself excluded, in
/// parent-before-child order. Directories whose listing fails are skipped and counted.
/// `arm` is called for each directory below the root right before it is listed, so a file
/// created in it after the listing has its own event.
pub fn walk(
    root: &Path,
    start: Option<&RelPath>,
    rules: &mut IgnoreRules,
    mut arm: impl FnMut(&RelPath),
) -> (Vec<Entry>, usize) {
    let mut entries = Vec::new();
    let mut unreadable = 0;
    let mut stack: Vec<Option<RelPath>> = vec![start.cloned()];
    while let Some(dir) = stack.pop() {
        if let Some(dir) = &dir {
            arm(dir);
        }
        let abs = dir
            .as_ref()
            .map_or_else(|| root.to_path_buf(), |d| d.to_abs(root));
        let Ok(listing) = std::fs::read_dir(&abs) else {
            unreadable += 1;
            continue;
        };
        let children: Vec<_> = listing.flatten().collect();
        if children
            .iter()
            .any(|c| IgnoreRules::is_ignore_file(&rel_child(&dir, &c.file_name())))
        {
            rules.reload_dir(dir.as_ref());
        }
        for child in children {
            let path = rel_child(&dir, &child.file_name());
            // DirEntry::metadata is an fstatat(AT_SYMLINK_NOFOLLOW) on Linux: never follows.
            let Ok(meta) = child.metadata() else {
                continue;
            };
            let kind = match meta.file_type() {
                t if t.is_dir() => EntryKind::Dir,
                t if t.is_symlink() => EntryKind::Symlink,
                t if t.is_file() => EntryKind::File,
                _ => continue,
            };
            if rules.is_ignored(&path, kind == EntryKind::Dir) {
                continue;
            }
            if kind == EntryKind::Dir {
                stack.push(Some(path.clone()));
            }
            entries.push(Entry {
                path,
                kind,
                stat: StatKey::from_metadata(&meta),
            });
        }
    }
    (entries, unreadable)
}

fn rel_child(dir: &Option<RelPath>, name: &std::ffi::OsStr) -> RelPath {
    match dir {
        Some(d) => d.join(name.as_bytes()),
        None => RelPath::from_fs_bytes(name.as_bytes().to_vec()),
    }
}
