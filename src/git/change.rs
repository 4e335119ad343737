//! What moved in git between two states, component by component (HEAD, each branch or tag,
//! the stash, the index): what a turn's listing names and what a rollback moves back.

use serde::{Deserialize, Serialize};

use super::{Head, Refs, StashEntry};
use crate::model::Hash;

/// The index as a state records it: its stored bytes and the digest of its entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexAt {
    pub hash: Hash,
    pub digest: Hash,
}

/// One component of git moving from one value to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Move {
    Head {
        from: Head,
        to: Head,
    },
    /// A branch or a tag: `None` is absent (created or deleted).
    Ref {
        name: String,
        from: Option<String>,
        to: Option<String>,
    },
    Stash {
        from: Vec<StashEntry>,
        to: Vec<StashEntry>,
    },
    Index {
        from: Option<IndexAt>,
        to: Option<IndexAt>,
    },
}

impl Move {
    /// The same move, the other way.
    pub fn reversed(&self) -> Self {
        match self.clone() {
            Self::Head { from, to } => Self::Head { from: to, to: from },
            Self::Ref { name, from, to } => Self::Ref {
                name,
                from: to,
                to: from,
            },
            Self::Stash { from, to } => Self::Stash { from: to, to: from },
            Self::Index { from, to } => Self::Index { from: to, to: from },
        }
    }

    /// How this move's component moved from where the move starts to its value in `now`;
    /// `None` when it is still there.
    pub fn since(&self, now: &Recorded) -> Option<Self> {
        self.to_value_in(now).moved()
    }

    /// How this move's component moved from its value in `before` to its value in `after`.
    pub fn between_states(&self, before: &Recorded, after: &Recorded) -> Option<Self> {
        self.to_value_in(before).reversed().to_value_in(after).moved()
    }

    /// The same component from where this move starts to its value in `state`.
    fn to_value_in(&self, state: &Recorded) -> Self {
        match self {
            Self::Head { from, .. } => Self::Head {
                from: from.clone(),
                to: state.refs.head.clone(),
            },
            Self::Ref { name, from, .. } => Self::Ref {
                name: name.clone(),
                from: from.clone(),
                to: state.refs.refs.get(name).cloned(),
            },
            Self::Stash { from, .. } => Self::Stash {
                from: from.clone(),
                to: state.refs.stash.clone(),
            },
            Self::Index { from, .. } => Self::Index {
                from: from.clone(),
                to: state.index.clone(),
            },
        }
    }

    /// `Some(self)` unless it goes nowhere (the index: by its entries).
    fn moved(self) -> Option<Self> {
        let still = match &self {
            Self::Head { from, to } => from == to,
            Self::Ref { from, to, .. } => from == to,
            Self::Stash { from, to } => from == to,
            Self::Index { from, to } => from.as_ref().map(|i| i.digest) == to.as_ref().map(|i| i.digest),
        };
        (!still).then_some(self)
    }

    /// Which component it moves: two moves of one component have the same key.
    pub fn key(&self) -> String {
        match self {
            Self::Head { .. } => "HEAD".to_string(),
            Self::Ref { name, .. } => name.clone(),
            Self::Stash { .. } => "stash".to_string(),
            Self::Index { .. } => "index".to_string(),
        }
    }
}

/// A state as compared: its refs, and its index's stored hash and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub refs: Refs,
    pub index: Option<IndexAt>,
}

/// Every component that differs from `before` to `after`, HEAD first.
pub fn between(before: &Recorded, after: &Recorded) -> Vec<Move> {
    let (b, a) = (&before.refs, &after.refs);
    let names: std::collections::BTreeSet<&String> = b.refs.keys().chain(a.refs.keys()).collect();
    let refs = names.into_iter().map(|name| Move::Ref {
        name: name.clone(),
        from: b.refs.get(name).cloned(),
        to: None,
    });
    let head = Move::Head {
        from: b.head.clone(),
        to: b.head.clone(),
    };
    let stash = Move::Stash {
        from: b.stash.clone(),
        to: Vec::new(),
    };
    let index = Move::Index {
        from: before.index.clone(),
        to: None,
    };
    let starts = std::iter::once(head).chain(refs).chain([stash, index]);
    starts
        .filter_map(|start| start.to_value_in(after).moved())
        .collect()
}

/// A ref's name as people say it: `main` for a branch, `tag v1` for a tag.
pub fn short_name(name: &str) -> String {
    if let Some(branch) = name.strip_prefix("refs/heads/") {
        branch.to_string()
    } else if let Some(tag) = name.strip_prefix("refs/tags/") {
        format!("tag {tag}")
    } else {
        name.to_string()
    }
}

/// An object id as `git log --oneline` shows it.
pub fn short_oid(oid: &str) -> &str {
    oid.get(..7).unwrap_or(oid)
}

fn head_words(head: &Head) -> String {
    match head {
        Head::Branch(name) => short_name(name),
        Head::Detached(oid) => format!("detached at {}", short_oid(oid)),
    }
}

/// One move in words: `main 1a2b3c4 → 9f8e7d6`, `HEAD main → feature`, `stash +1`; the
/// index's words need both indexes' entries (`index_words`).
pub fn words(change: &Move) -> String {
    match change {
        Move::Head { from, to } => format!("HEAD {} → {}", head_words(from), head_words(to)),
        Move::Ref { name, from, to } => match (from, to) {
            (Some(from), Some(to)) => format!("{} {} → {}", short_name(name), short_oid(from), short_oid(to)),
            (None, Some(to)) => format!("{} created at {}", short_name(name), short_oid(to)),
            (Some(from), None) => format!("{} deleted (was {})", short_name(name), short_oid(from)),
            (None, None) => short_name(name),
        },
        Move::Stash { from, to } => stash_words(from, to),
        Move::Index { .. } => "index changed".to_string(),
    }
}

fn stash_words(from: &[StashEntry], to: &[StashEntry]) -> String {
    use std::cmp::Ordering;
    match to.len().cmp(&from.len()) {
        Ordering::Greater => format!("stash +{}", to.len() - from.len()),
        Ordering::Less => format!("stash -{}", from.len() - to.len()),
        Ordering::Equal => "stash changed".to_string(),
    }
}

/// The index's move in words, from the two indexes' entries: `index: 2 paths staged, 1
/// removed`.
pub fn index_words(staged: usize, removed: usize) -> String {
    let paths = |n: usize| {
        if n == 1 {
            "1 path".to_string()
        } else {
            format!("{n} paths")
        }
    };
    match (staged, removed) {
        (0, 0) => "index: entries reordered".to_string(),
        (s, 0) => format!("index: {} staged", paths(s)),
        (0, r) => format!("index: {} removed", paths(r)),
        (s, r) => format!("index: {} staged, {r} removed", paths(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(head: &str, pairs: &[(&str, &str)]) -> Recorded {
        Recorded {
            refs: Refs {
                head: Head::Branch(head.to_string()),
                refs: pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                stash: Vec::new(),
            },
            index: None,
        }
    }

    #[test]
    fn a_commit_on_a_new_branch_reads_as_it_happened() {
        let a = "1a2b3c4".repeat(6);
        let b = "9f8e7d6".repeat(6);
        let before = refs("refs/heads/main", &[("refs/heads/main", &a[..40])]);
        let after = refs(
            "refs/heads/feature",
            &[("refs/heads/main", &a[..40]), ("refs/heads/feature", &b[..40])],
        );
        let said: Vec<String> = between(&before, &after).iter().map(words).collect();
        assert_eq!(said, vec!["HEAD main → feature", "feature created at 9f8e7d6"]);
        let back: Vec<String> = between(&after, &before).iter().map(words).collect();
        assert_eq!(back, vec!["HEAD feature → main", "feature deleted (was 9f8e7d6)"]);
    }
}
