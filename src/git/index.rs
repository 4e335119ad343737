//! git's index (what is staged), read from its file: versions 2, 3 and 4 of the format
//! (git's `Documentation/gitformat-index.txt`). Each entry's stat data is left out of what it
//! means: `git status` rewrites it without staging anything, so two indexes are the same when
//! their entries (path, mode, object id, stage) are.

/// An index file as read: its bytes (what a rollback writes back) and the digest of its
/// entries (what is compared).
#[derive(Debug, Clone)]
pub struct Index {
    pub bytes: Vec<u8>,
    pub digest: [u8; 32],
}

/// One staged path, borrowed from the index's bytes (a version 4 path, stored as a change of
/// the one before it, is owned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub path: std::borrow::Cow<'a, [u8]>,
    pub mode: u32,
    pub oid: &'a [u8],
    pub stage: u8,
}

impl Index {
    /// An index of unknown layout (a newer version, a split index) is compared by its bytes.
    pub fn parse(bytes: Vec<u8>) -> Self {
        let digest = match entries(&bytes) {
            Some(entries) => digest(&entries),
            None => *blake3::hash(&bytes).as_bytes(),
        };
        Self { bytes, digest }
    }
}

fn digest(entries: &[Entry<'_>]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    let mut one = Vec::with_capacity(256);
    for e in entries {
        one.clear();
        one.extend_from_slice(&(e.path.len() as u64).to_le_bytes());
        one.extend_from_slice(&e.path);
        one.extend_from_slice(&e.mode.to_le_bytes());
        one.extend_from_slice(e.oid);
        one.push(e.stage);
        hasher.update(&one);
    }
    *hasher.finalize().as_bytes()
}

/// The entries of an index file, or `None` when it is not one this reads (a split index's
/// entries live in another file).
pub fn entries(bytes: &[u8]) -> Option<Vec<Entry<'_>>> {
    let (version, count) = header(bytes)?;
    // A SHA-256 repository's object ids are 32 bytes: the one that parses to the end is right.
    [20, 32]
        .into_iter()
        .find_map(|oid_len| parse(bytes, version, count, oid_len))
}

fn header(bytes: &[u8]) -> Option<(u32, usize)> {
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(bytes, 4)?;
    let count = be32(bytes, 8)? as usize;
    matches!(version, 2..=4).then_some((version, count))
}

fn parse(bytes: &[u8], version: u32, count: usize, oid_len: usize) -> Option<Vec<Entry<'_>>> {
    let mut at = 12;
    let mut entries: Vec<Entry<'_>> = Vec::with_capacity(count.min(1 << 20));
    for _ in 0..count {
        let start = at;
        let mode = be32(bytes, at + 24)?;
        at += 40;
        let oid = bytes.get(at..at + oid_len)?;
        at += oid_len;
        let flags = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        // The flags' low 12 bits are the path's length, unless it is 0xfff or more.
        let length = usize::from(flags & 0xfff);
        let path = if version == 4 {
            // The previous path with its last `strip` bytes replaced by this one's suffix.
            let (strip, used) = varint(bytes.get(at..)?)?;
            at += used;
            let previous = entries.last().map_or(&[][..], |e| &e.path[..]);
            let keep = previous.len().checked_sub(strip)?;
            let end = path_end(bytes, at, length.checked_sub(keep))?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(&bytes[at..end]);
            at = end + 1;
            std::borrow::Cow::Owned(path)
        } else {
            let end = path_end(bytes, at, Some(length))?;
            let path = &bytes[at..end];
            // Padded with 1 to 8 NULs to a multiple of 8 bytes from the entry's start.
            at = start + (end - start + 8) / 8 * 8;
            std::borrow::Cow::Borrowed(path)
        };
        let stage = ((flags >> 12) & 3) as u8;
        entries.push(Entry {
            path,
            mode,
            oid,
            stage,
        });
    }
    // What follows is extensions and a checksum of the length of an object id.
    (bytes.len() >= at + oid_len).then_some(entries)
}

/// Where the NUL-terminated path starting at `at` ends: `length` bytes on when the NUL is
/// there (the flags gave the length), else at the first NUL (a path of 0xfff bytes or more).
fn path_end(bytes: &[u8], at: usize, length: Option<usize>) -> Option<usize> {
    match length {
        Some(n) if n < 0xfff && bytes.get(at + n) == Some(&0) => Some(at + n),
        _ => Some(at + bytes.get(at..)?.iter().position(|&b| b == 0)?),
    }
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// git's offset varint: seven bits a byte, each continuation adding one.
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut used = 0;
    let mut byte = *bytes.first()?;
    let mut value = usize::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        used += 1;
        byte = *bytes.get(used)?;
        value = ((value + 1) << 7) | usize::from(byte & 0x7f);
    }
    Some((value, used + 1))
}

/// How two indexes' entries differ: paths staged (added or changed) and paths removed. Both
/// lists are in the index's order (by path, then stage), so one walk compares them.
pub fn compare(before: &[Entry<'_>], after: &[Entry<'_>]) -> (usize, usize) {
    use std::cmp::Ordering;
    let (mut old, mut new) = (before.iter().peekable(), after.iter().peekable());
    let (mut staged, mut removed) = (0, 0);
    loop {
        let order = match (old.peek(), new.peek()) {
            (None, None) => return (staged, removed),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(o), Some(n)) => (&o.path[..], o.stage).cmp(&(&n.path[..], n.stage)),
        };
        match order {
            Ordering::Less => {
                removed += 1;
                old.next();
            }
            Ordering::Greater => {
                staged += 1;
                new.next();
            }
            Ordering::Equal => {
                staged += usize::from(old.next() != new.next());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index git itself wrote, in each version, reads as the same entries.
    #[test]
    fn every_version_git_writes_reads_the_same() {
        if std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: no git");
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .current_dir(dir.path())
                .args(args)
                .output()
                .expect("git");
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(dir.path().join("src/deep")).expect("mkdir");
        for name in [
            "a.txt",
            "src/b.rs",
            "src/deep/c.rs",
            "src/deep/d-with-a-longer-name.rs",
        ] {
            std::fs::write(dir.path().join(name), name).expect("write");
        }
        git(&["add", "-A"]);
        // A path of 0xfff bytes or more, whose length the flags cannot hold (staged without a
        // file: Linux opens no path that long), between two short ones.
        let long = format!("{}end.txt", "long-directory-name/".repeat(210));
        std::fs::write(dir.path().join("empty"), "").expect("write");
        git(&["add", "empty"]);
        let empty_blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{empty_blob},{long}"),
        ]);
        let mut seen = Vec::new();
        for version in ["2", "3", "4"] {
            git(&["update-index", "--index-version", version]);
            let bytes = std::fs::read(dir.path().join(".git/index")).expect("index");
            let entries = entries(&bytes).expect("parsed");
            let paths: Vec<&[u8]> = entries.iter().map(|e| &e.path[..]).collect();
            assert_eq!(
                paths,
                vec![
                    &b"a.txt"[..],
                    b"empty",
                    long.as_bytes(),
                    b"src/b.rs",
                    b"src/deep/c.rs",
                    b"src/deep/d-with-a-longer-name.rs"
                ]
            );
            seen.push(Index::parse(bytes).digest);
        }
        assert!(
            seen.windows(2).all(|w| w[0] == w[1]),
            "one digest for every version"
        );
    }

    #[test]
    fn staged_and_removed_paths_are_counted_in_one_walk() {
        let entry = |path: &'static str, oid: &'static [u8]| Entry {
            path: std::borrow::Cow::Borrowed(path.as_bytes()),
            mode: 0o100644,
            oid,
            stage: 0,
        };
        let before = [entry("a", b"1"), entry("b", b"1"), entry("d", b"1")];
        let after = [entry("a", b"1"), entry("b", b"2"), entry("c", b"1")];
        assert_eq!(
            compare(&before, &after),
            (2, 1),
            "b changed and c added; d removed"
        );
        assert_eq!(compare(&after, &after), (0, 0));
    }

    #[test]
    fn not_an_index_is_compared_by_its_bytes() {
        let index = Index::parse(b"not an index".to_vec());
        assert_eq!(index.digest, *blake3::hash(b"not an index").as_bytes());
    }
}
