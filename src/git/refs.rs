//! HEAD, the branches and tags, and the stash, read from the files git keeps them in: `HEAD`,
//! loose refs under `refs/`, `packed-refs` (a loose ref wins over its packed copy) and the
//! stash's reflog (each line one entry, the newest last).

use std::collections::BTreeMap;
use std::path::Path;

use super::{Head, StashEntry};

/// The stash's ref: its reflog holds the entries below the newest.
pub const STASH: &str = "refs/stash";

/// What is recorded of `refs/`: branches, tags and the stash. Remote-tracking refs move with
/// every fetch and are not the work a turn could lose.
const RECORDED: [&str; 3] = ["refs/heads/", "refs/tags/", STASH];

/// A file git writes small: a ref, HEAD, a `.git` file.
pub(super) fn small_text(path: &Path, limit: u64) -> std::io::Result<Option<String>> {
    match crate::bounded::read(path, limit) {
        Ok(Some((bytes, _))) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Ok(None) => Ok(None),
        Err(crate::bounded::Unread::Io(e)) => Err(e),
        Err(_) => Ok(None),
    }
}

pub(super) fn read_head(git_dir: &Path) -> std::io::Result<Option<Head>> {
    let Some(text) = small_text(&git_dir.join("HEAD"), 4096)? else {
        return Ok(None);
    };
    let text = text.trim();
    Ok(match text.strip_prefix("ref:") {
        Some(name) => Some(Head::Branch(name.trim().to_string())),
        None if is_oid(text) => Some(Head::Detached(text.to_string())),
        None => None,
    })
}

/// Every recorded ref by full name.
pub(super) fn read_refs(common_dir: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let mut refs = packed(common_dir)?;
    for top in ["refs/heads", "refs/tags"] {
        loose(common_dir, top, &mut refs)?;
    }
    if let Some(text) = small_text(&common_dir.join(STASH), 4096)? {
        let oid = text.trim();
        if is_oid(oid) {
            refs.insert(STASH.to_string(), oid.to_string());
        }
    }
    Ok(refs)
}

/// The refs `packed-refs` holds (its `^` lines are peeled tags, its `#` line a header).
fn packed(common_dir: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let mut refs = BTreeMap::new();
    let Some(text) = small_text(&common_dir.join("packed-refs"), 1 << 30)? else {
        return Ok(refs);
    };
    for line in text.lines().filter(|l| !l.starts_with(['#', '^'])) {
        if let Some((oid, name)) = line.split_once(' ')
            && is_oid(oid)
            && RECORDED.iter().any(|top| name.starts_with(top))
        {
            refs.insert(name.to_string(), oid.to_string());
        }
    }
    Ok(refs)
}

/// The loose refs under `common_dir/top`, over their packed copies.
fn loose(common_dir: &Path, top: &str, refs: &mut BTreeMap<String, String>) -> std::io::Result<()> {
    let mut dirs = vec![top.to_string()];
    while let Some(dir) = dirs.pop() {
        let entries = match std::fs::read_dir(common_dir.join(&dir)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(|n| format!("{dir}/{n}")) else {
                continue;
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(name);
            } else if kind.is_file()
                && !name.ends_with(".lock")
                && let Some(text) = small_text(&entry.path(), 4096)?
                && is_oid(text.trim())
            {
                refs.insert(name, text.trim().to_string());
            }
        }
    }
    Ok(())
}

/// The stash's entries, newest first: the reflog of `refs/stash`, or its one commit when it
/// has no reflog.
pub(super) fn read_stash(common_dir: &Path, top: Option<&String>) -> std::io::Result<Vec<StashEntry>> {
    let Some(top) = top else {
        return Ok(Vec::new());
    };
    let log = small_text(&common_dir.join("logs").join(STASH), 1 << 26)?.unwrap_or_default();
    let mut entries: Vec<StashEntry> = log.lines().filter_map(reflog_entry).collect();
    entries.reverse();
    if entries.first().is_none_or(|newest| &newest.oid != top) {
        entries = vec![StashEntry {
            oid: top.clone(),
            message: String::new(),
        }];
    }
    Ok(entries)
}

/// `OLD NEW NAME <EMAIL> TIME ZONE\tMESSAGE`: the entry's commit is NEW.
fn reflog_entry(line: &str) -> Option<StashEntry> {
    let (head, message) = line.split_once('\t').unwrap_or((line, ""));
    let oid = head.split(' ').nth(1)?;
    is_oid(oid).then(|| StashEntry {
        oid: oid.to_string(),
        message: message.to_string(),
    })
}

/// A full object id: 40 (SHA-1) or 64 (SHA-256) hex digits.
pub(super) fn is_oid(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Calls `add` with `dir` and every directory and file beneath it: a ref written (lock, then
/// rename) changes its directory's mtime.
pub(super) fn walk_dirs(dir: &Path, add: &mut impl FnMut(&Path)) {
    add(dir);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk_dirs(&path, add),
            Ok(_) => add(&path),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    #[test]
    fn a_loose_ref_wins_over_its_packed_copy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let packed = format!(
            "# pack-refs with: peeled fully-peeled sorted\n{A} refs/heads/main\n{A} refs/tags/v1\n^{B}\n{A} refs/remotes/origin/main\n"
        );
        std::fs::write(dir.path().join("packed-refs"), packed).expect("packed");
        std::fs::create_dir_all(dir.path().join("refs/heads/topic")).expect("mkdir");
        std::fs::write(dir.path().join("refs/heads/main"), format!("{B}\n")).expect("loose");
        std::fs::write(dir.path().join("refs/heads/topic/x"), format!("{A}\n")).expect("loose");
        let refs = read_refs(dir.path()).expect("refs");
        let names: Vec<(&str, &str)> = refs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            names,
            vec![
                ("refs/heads/main", B),
                ("refs/heads/topic/x", A),
                ("refs/tags/v1", A)
            ]
        );
    }

    #[test]
    fn the_stash_is_its_reflog_newest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("logs/refs")).expect("mkdir");
        let log = format!(
            "{z} {A} A U <a@u> 1 +0000\tWIP on main: one\n{A} {B} A U <a@u> 2 +0000\tOn main: two\n",
            z = "0".repeat(40)
        );
        std::fs::write(dir.path().join("logs/refs/stash"), log).expect("log");
        let stash = read_stash(dir.path(), Some(&B.to_string())).expect("stash");
        let oids: Vec<&str> = stash.iter().map(|e| e.oid.as_str()).collect();
        assert_eq!(oids, vec![B, A]);
        assert_eq!(stash[0].message, "On main: two");
    }
}
