//! What the index knows of the paths a survey walks: the stat cache of every present path,
//! held as one 40-byte row a path (a 128-bit key: 32 bits of a hash of its directory, then 96
//! of hashes of its bytes; its stat print, its kind), sorted by key, and a 4-byte bucket start
//! a row. A directory's rows are side by side, so the lookups of the entries a walker lists one
//! directory after another touch the same few cache lines. The worker reads it while the walk
//! runs (`Pace::Fast`) or before (`Pace::Lean`); each walker then drops every entry the index
//! proves unchanged as soon as it has listed it, so a restart holds neither the index's side
//! as rows of paths nor the million unchanged entries of the walk, only what differs.
//!
//! Two paths have the same key with a chance of about n² / 2^97 (a million paths: 10^-17):
//! two paths of one directory share the directory's 32 bits, and 96 bits tell them apart. The
//! keys are SipHash keyed with the process's random keys (`RandomState`), so no file name can
//! be chosen to collide.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::platform::sys::fs::FileType;
use rusqlite::Connection;

use super::record::Walked;
use super::walk::{Entry, EntryKind};
use crate::model::{RACY_NS, StatPrint};
use crate::paths::RelPath;
use crate::store::cache::each_cached;
use crate::store::sql;

/// Rows read between two looks at `stop` (a yielding verification pass).
const STOP_EVERY: usize = 4096;

/// The index's side of a survey, and which of its paths the walk has found.
pub struct Known {
    keys: (RandomState, RandomState),
    rows: Vec<Row>,
    /// Where the rows of each bucket (the key's top `64 - shift` bits, at most 32: of the
    /// directory's hash) begin, and one past the last bucket's end: a lookup searches one
    /// directory's rows, where a binary search of a million rows missed the cache some 20 times
    /// (a tenth of a restart's CPU), and a key of the whole path missed it on every entry (8 %).
    buckets: Vec<u32>,
    shift: u32,
    /// One bit a row: the walk found its path (same or changed).
    found: Vec<AtomicU64>,
}

struct Row {
    key: [u64; 2],
    print: StatPrint,
    /// `None`: a type the walk never lists (a socket, a fifo): whatever is there differs.
    kind: Option<EntryKind>,
    /// The cache proves the stat current: it was checked later than `RACY_NS` after mtime.
    proven: bool,
}

// A restart holds one per recorded path: a million are 40 MB.
const _: () = assert!(std::mem::size_of::<Row>() <= 40);

/// What the index says of one walked entry.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Recorded, and its stat proves it unchanged: nothing to read.
    Unchanged,
    /// Recorded, and its stat or kind differs (or cannot prove it): re-read it.
    Differs,
    /// Never recorded: a new path.
    New,
}

impl Known {
    /// The stat cache beneath each start (`None`: the whole index); `None` when `stop` said so
    /// before it was read.
    pub fn read(
        conn: &Connection,
        starts: &[Option<RelPath>],
        stop: &(dyn Fn() -> bool + Sync),
    ) -> rusqlite::Result<Option<Self>> {
        let keys = (RandomState::new(), RandomState::new());
        let mut rows = Vec::new();
        let mut stopped = false;
        for start in starts {
            each_cached(conn, start.as_ref(), |path, cached| {
                if rows.len() % STOP_EVERY == 0 && stop() {
                    stopped = true;
                    return false;
                }
                let kind = match FileType::from_raw_mode(crate::platform::raw_mode(cached.stat.mode)) {
                    FileType::RegularFile => Some(EntryKind::File),
                    FileType::Symlink => Some(EntryKind::Symlink),
                    FileType::Directory => Some(EntryKind::Dir),
                    _ => None,
                };
                rows.push(Row {
                    key: key_of(&keys, path),
                    print: cached.stat.print(),
                    kind,
                    proven: cached.stat.mtime_ns + RACY_NS < cached.checked_ns,
                });
                true
            })?;
            if stopped {
                return Ok(None);
            }
        }
        Ok(Some(Self::of(keys, rows)))
    }

    fn of(keys: (RandomState, RandomState), mut rows: Vec<Row>) -> Self {
        rows.sort_unstable_by_key(|row| row.key);
        rows.shrink_to_fit();
        // About one row a bucket: 4 bytes a row more.
        let bits = rows.len().max(2).ilog2().min(32);
        let shift = 64 - bits;
        let mut buckets = vec![0u32; (1 << bits) + 1];
        for row in &rows {
            buckets[(row.key[0] >> shift) as usize + 1] += 1;
        }
        for at in 1..buckets.len() {
            buckets[at] += buckets[at - 1];
        }
        let found = (0..rows.len().div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        Self {
            keys,
            rows,
            buckets,
            shift,
            found,
        }
    }

    /// The row of `path`, if the index has it.
    fn position(&self, path: &[u8]) -> Option<usize> {
        let key = key_of(&self.keys, path);
        let bucket = (key[0] >> self.shift) as usize;
        let (from, to) = (self.buckets[bucket] as usize, self.buckets[bucket + 1] as usize);
        self.rows[from..to]
            .binary_search_by_key(&key, |row| row.key)
            .ok()
            .map(|at| from + at)
    }

    /// Whether the walk must keep `entry` (it is not proven unchanged); a walker asks as it
    /// lists. Marks the entry's row found.
    pub fn keeps(&self, entry: &Entry) -> bool {
        self.verdict(entry) != Verdict::Unchanged
    }

    fn verdict(&self, entry: &Entry) -> Verdict {
        let Some(at) = self.position(entry.path.as_bytes()) else {
            return Verdict::New;
        };
        self.found[at / 64].fetch_or(1 << (at % 64), Ordering::Relaxed);
        let row = &self.rows[at];
        let unchanged = row.kind == Some(entry.kind)
            // A directory's own stat changes with every entry; its children are checked anyway.
            && (entry.kind == EntryKind::Dir
                || (row.proven && entry.stat == Some(row.print)));
        if unchanged {
            Verdict::Unchanged
        } else {
            Verdict::Differs
        }
    }

    /// The walk's kept entries against the index: the work, in path order (a new directory
    /// before what it holds), with the latest version of each recorded path that differs or
    /// is gone. The gone are read again from the index, beneath `starts`, only if any is.
    pub fn merge(
        &self,
        conn: &Connection,
        starts: &[Option<RelPath>],
        entries: Vec<Entry>,
    ) -> rusqlite::Result<Vec<Walked>> {
        let mut work: Vec<(Walked, bool)> = Vec::new();
        for entry in entries {
            match self.verdict(&entry) {
                Verdict::Unchanged => {}
                Verdict::Differs => work.push((as_work(entry), true)),
                Verdict::New => work.push((as_work(entry), false)),
            }
        }
        if self.unfound() > 0 {
            self.each_gone(conn, starts, |path| work.push((gone_work(path), true)))?;
        }
        work.sort_unstable_by(|(a, _), (b, _)| a.path.cmp(&b.path));
        work.into_iter()
            .map(|(mut walked, recorded)| {
                if recorded {
                    walked.latest = sql::latest(conn, &walked.path)?.map(Box::new);
                }
                Ok(walked)
            })
            .collect()
    }

    /// Rows whose path the walk did not find.
    fn unfound(&self) -> usize {
        let found: usize = self
            .found
            .iter()
            .map(|bits| bits.load(Ordering::Relaxed).count_ones() as usize)
            .sum();
        self.rows.len() - found
    }

    fn each_gone(
        &self,
        conn: &Connection,
        starts: &[Option<RelPath>],
        mut each: impl FnMut(RelPath),
    ) -> rusqlite::Result<()> {
        for start in starts {
            each_cached(conn, start.as_ref(), |path, _| {
                let at = self.position(path);
                if at.is_some_and(|at| self.found[at / 64].load(Ordering::Relaxed) & (1 << (at % 64)) == 0) {
                    each(RelPath::from_fs_bytes(path.to_vec()));
                }
                true
            })?;
        }
        Ok(())
    }
}

/// The top 32 bits of a hash of the path's directory (the bytes before its last `/`; what a
/// bucket is chosen by), 32 bits of one of the path, then 64 of another. The first hash goes
/// on from the directory's to the whole path's: two passes over the bytes, not three.
fn key_of(keys: &(RandomState, RandomState), path: &[u8]) -> [u64; 2] {
    let cut = path.iter().rposition(|&b| b == b'/').unwrap_or(0);
    let mut hasher = keys.0.build_hasher();
    hasher.write(&path[..cut]);
    let high = hasher.clone().finish() & !u64::from(u32::MAX);
    hasher.write(&path[cut..]);
    [high | (hasher.finish() >> 32), keys.1.hash_one(path)]
}

/// A walked entry as work.
pub fn as_work(entry: Entry) -> Walked {
    Walked {
        file: entry.kind == EntryKind::File,
        path: entry.path,
        latest: None,
    }
}

fn gone_work(path: RelPath) -> Walked {
    Walked {
        path,
        latest: None,
        file: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StatKey;

    fn stat(ino: u64) -> StatKey {
        StatKey {
            dev: 1,
            ino,
            size: 10,
            mtime_ns: 1_000,
            ctime_ns: 1_000,
            mode: 0o100644,
        }
    }

    fn on_disk(text: &str, ino: u64) -> Entry {
        Entry {
            path: RelPath::parse(text).expect("a valid path"),
            kind: EntryKind::File,
            stat: Some(stat(ino).print()),
        }
    }

    fn recorded(keys: &(RandomState, RandomState), text: &str, ino: u64, checked_ns: i64) -> Row {
        Row {
            key: key_of(keys, text.as_bytes()),
            print: stat(ino).print(),
            kind: Some(EntryKind::File),
            proven: 1_000 + RACY_NS < checked_ns,
        }
    }

    #[test]
    fn the_walk_keeps_new_edited_and_unproven_paths_and_the_rest_are_gone() {
        let keys = (RandomState::new(), RandomState::new());
        let late = 1_000 + RACY_NS + 1;
        let rows = vec![
            recorded(&keys, "a-gone", 1, late),
            recorded(&keys, "d/edited", 3, late),
            recorded(&keys, "d/racy", 7, 1_000),
            recorded(&keys, "d/same", 2, late),
        ];
        let known = Known::of(keys, rows);
        let walked = [("d/same", 2), ("d/new", 9), ("d/edited", 4), ("d/racy", 7)];
        let kept: Vec<&str> = walked
            .iter()
            .filter(|(path, ino)| known.keeps(&on_disk(path, *ino)))
            .map(|(path, _)| *path)
            .collect();
        assert_eq!(kept, ["d/new", "d/edited", "d/racy"]);
        assert_eq!(known.unfound(), 1, "a-gone was never walked");
        let verdicts: Vec<Verdict> = kept
            .iter()
            .zip([9, 4, 7])
            .map(|(path, ino)| known.verdict(&on_disk(path, ino)))
            .collect();
        assert_eq!(verdicts, [Verdict::New, Verdict::Differs, Verdict::Differs]);
    }

    #[test]
    fn the_paths_of_one_directory_share_their_keys_bucket_bits_and_differ_below() {
        let keys = (RandomState::new(), RandomState::new());
        let key = |path: &str| key_of(&keys, path.as_bytes());
        let top = |path: &str| key(path)[0] >> 32;
        assert_eq!(top("d/a"), top("d/b"));
        assert_eq!(top("a"), top("b"), "the root's own entries: one directory");
        assert_ne!(key("d/a"), key("d/b"));
        // Different directories are told apart by these bits but for a chance of 2^-32.
        assert_ne!(top("d/a"), top("e/a"));
    }

    #[test]
    fn every_recorded_path_is_found_in_its_bucket() {
        let keys = (RandomState::new(), RandomState::new());
        let late = 1_000 + RACY_NS + 1;
        // Directories of ~70 entries, one of 3,000 (a single bucket), and the root's own.
        let mut paths: Vec<String> = (0..5_000).map(|i| format!("d{}/f{i}", i % 70)).collect();
        paths.extend((0..3_000).map(|i| format!("big/f{i}")));
        paths.extend((0..50).map(|i| format!("top{i}")));
        let rows = paths.iter().map(|p| recorded(&keys, p, 2, late)).collect();
        let known = Known::of(keys, rows);
        assert!(
            paths.iter().all(|p| !known.keeps(&on_disk(p, 2))),
            "each unchanged"
        );
        assert_eq!(known.unfound(), 0);
        assert_eq!(known.verdict(&on_disk("d0/never", 2)), Verdict::New);
        assert_eq!(known.verdict(&on_disk("big/never", 2)), Verdict::New);
        assert_eq!(known.verdict(&on_disk("never", 2)), Verdict::New);
    }
}
