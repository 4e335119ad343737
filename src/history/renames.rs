//! Renames among a turn's net changes: a deleted and an added file with the same content and
//! bits (or symlinks with the same target) are one rename, and a deleted and an added
//! directory whose files moved between them are one too.
//!
//! A listing is a fact about a past turn, so the pairing depends on nothing but the changes,
//! taken in path order (a commit moving 226 paths, each crate holding the same
//! license files, listed differently at each call). Where several deleted files could be
//! the source of an added one, the rule is, in order: a content only one deleted and one added
//! file hold; then the directory most of the unambiguous moves went from to the added file's
//! directory; then the same file name; then the nearest path (most leading directories in
//! common); then the first path.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{Change, ChangeKind};
use crate::model::{Hash, State};
use crate::paths::RelPath;

#[derive(Hash, PartialEq, Eq)]
enum RenameKey {
    File(Hash, Option<u16>, bool),
    Symlink(Vec<u8>),
}

fn rename_key(state: &State) -> Option<RenameKey> {
    match state {
        State::File(f) => f.hash().map(|hash| RenameKey::File(hash, f.mode, f.executable)),
        State::Symlink { target } => Some(RenameKey::Symlink(target.clone())),
        State::Dir | State::Absent | State::Untracked => None,
    }
}

/// What a deleted path held last (an edit, then `mv`: what it held when it went).
fn gone_state(change: &Change) -> &State {
    change.last_present.as_ref().unwrap_or(&change.before)
}

/// The changes with renames paired: each added path paired with a deleted one becomes
/// `renamed` (its `before` and `from` taken from the deleted one, which leaves the list).
pub(super) fn pair_renames(changes: Vec<Change>) -> Vec<Change> {
    let mut from_of = pair_files(&changes);
    pair_directories(&changes, &mut from_of);
    let consumed: HashSet<usize> = from_of.values().copied().collect();
    let mut out = Vec::with_capacity(changes.len() - consumed.len());
    for (i, change) in changes.iter().enumerate() {
        if consumed.contains(&i) {
            continue;
        }
        let mut change = change.clone();
        if let Some(&from) = from_of.get(&i) {
            change.kind = ChangeKind::Renamed;
            change.before = changes[from].before.clone();
            change.from = Some(changes[from].path.clone());
            change.ambiguous |= changes[from].ambiguous;
        }
        out.push(change);
    }
    out
}

/// The deleted and added files of each content, each list in path order.
#[derive(Default)]
struct Candidates {
    deleted: Vec<usize>,
    added: Vec<usize>,
}

fn candidates(changes: &[Change]) -> Vec<Candidates> {
    let mut by_key: HashMap<RenameKey, usize> = HashMap::new();
    let mut groups: Vec<Candidates> = Vec::new();
    for (i, change) in changes.iter().enumerate() {
        let (side, state) = match change.kind {
            ChangeKind::Deleted => (true, gone_state(change)),
            ChangeKind::Added => (false, &change.after),
            _ => continue,
        };
        let Some(key) = rename_key(state) else { continue };
        let slot = *by_key.entry(key).or_insert_with(|| {
            groups.push(Candidates::default());
            groups.len() - 1
        });
        let group = &mut groups[slot];
        if side {
            group.deleted.push(i)
        } else {
            group.added.push(i)
        }
    }
    groups.retain(|g| !g.deleted.is_empty() && !g.added.is_empty());
    groups
}

/// Added file index -> deleted file index.
fn pair_files(changes: &[Change]) -> HashMap<usize, usize> {
    let mut groups = candidates(changes);
    let mut from_of = HashMap::new();
    for group in groups
        .iter_mut()
        .filter(|g| g.deleted.len() == 1 && g.added.len() == 1)
    {
        from_of.insert(group.added[0], group.deleted[0]);
        group.added.clear();
    }
    let votes = DirVotes::of(changes, &from_of);
    for group in &mut groups {
        let mut free: Vec<usize> = group.deleted.clone();
        for &to in &group.added {
            let Some(pos) = best_source(changes, &votes, to, &free) else {
                break;
            };
            from_of.insert(to, free.remove(pos));
        }
    }
    from_of
}

/// Which of the `free` deleted files is the source of added file `to` (the module's rule).
fn best_source(changes: &[Change], votes: &DirVotes, to: usize, free: &[usize]) -> Option<usize> {
    let target = &changes[to].path;
    let voted = target.parent().and_then(|dir| votes.source_of(&dir));
    let rank = |&d: &usize| {
        let source = &changes[d].path;
        (
            voted.is_some() && source.parent().as_ref() == voted,
            source.file_name() == target.file_name(),
            common_dirs(source, target),
        )
    };
    // The first of the best: `max_by_key` keeps the last of equals, so compare reversed.
    (0..free.len()).min_by_key(|&pos| std::cmp::Reverse(rank(&free[pos])))
}

/// How many leading directories two paths share.
fn common_dirs(a: &RelPath, b: &RelPath) -> usize {
    let dirs = |p: &RelPath| {
        let bytes = p.as_bytes();
        let end = bytes.iter().rposition(|&c| c == b'/').unwrap_or(0);
        bytes[..end]
            .split(|&c| c == b'/')
            .map(<[u8]>::to_vec)
            .collect::<Vec<_>>()
    };
    dirs(a)
        .iter()
        .zip(dirs(b).iter())
        .take_while(|(x, y)| x == y)
        .count()
}

/// For each directory files moved into, how many moved there from each directory, counting
/// every ancestor pair a move implies (`a/x/f` from `b/x/f`: `a/x` from `b/x`, `a` from `b`).
struct DirVotes(HashMap<RelPath, BTreeMap<RelPath, usize>>);

impl DirVotes {
    fn of(changes: &[Change], from_of: &HashMap<usize, usize>) -> Self {
        let mut votes: HashMap<RelPath, BTreeMap<RelPath, usize>> = HashMap::new();
        for (&to, &from) in from_of {
            let (mut to_dir, mut from_dir) = (changes[to].path.parent(), changes[from].path.parent());
            while let (Some(t), Some(f)) = (to_dir, from_dir) {
                if t == f {
                    break;
                }
                (to_dir, from_dir) = (t.parent(), f.parent());
                *votes.entry(t).or_default().entry(f).or_default() += 1;
            }
        }
        Self(votes)
    }

    /// The directory most moves into `dir` came from (the first path among equals).
    fn source_of(&self, dir: &RelPath) -> Option<&RelPath> {
        let sources = self.0.get(dir)?;
        let most = sources.values().copied().max()?;
        sources.iter().find(|(_, n)| **n == most).map(|(from, _)| from)
    }
}

/// A deleted and an added directory are one rename when files moved from the one to the
/// other: each added directory takes the deleted one most of its moves came from, in path
/// order, each deleted directory at most once.
fn pair_directories(changes: &[Change], from_of: &mut HashMap<usize, usize>) {
    let votes = DirVotes::of(changes, from_of);
    // Deleted directories by path (a path may be listed twice: a directory deleted and a
    // file added in its place).
    let index: HashMap<&RelPath, usize> = changes
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == ChangeKind::Deleted && c.before.is_dir())
        .map(|(i, c)| (&c.path, i))
        .collect();
    let mut taken: HashSet<usize> = from_of.values().copied().collect();
    for (to_i, change) in changes.iter().enumerate() {
        if change.kind != ChangeKind::Added || !change.after.is_dir() || from_of.contains_key(&to_i) {
            continue;
        }
        let Some(sources) = votes.0.get(&change.path) else {
            continue;
        };
        let mut ranked: Vec<(&RelPath, usize)> = sources.iter().map(|(p, &n)| (p, n)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let source = ranked.into_iter().find_map(|(from, _)| {
            let &from_i = index.get(from)?;
            (!taken.contains(&from_i)).then_some(from_i)
        });
        if let Some(from_i) = source {
            taken.insert(from_i);
            from_of.insert(to_i, from_i);
        }
    }
}
