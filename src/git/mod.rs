//! The workspace's git repository as a turn's state beside its files (docs/rollback.md, "Git"):
//! what git keeps outside the work tree, read from `.git` without running git (`refs`, `index`),
//! compared by what it means (`change`), and put back through git's own protocol (`write`:
//! `git update-ref` transactions that compare each ref's old value, `index.lock`).
//!
//! Only a repository whose top level is the workspace root is read: its `.git` is a directory,
//! or a file naming one (a linked worktree, a submodule's checkout). A workspace inside a
//! larger repository, `GIT_DIR` set elsewhere, or a reftable repository records no git state.

pub mod change;
pub mod index;
mod refs;
pub mod write;

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use index::Index;

/// Where a workspace's repository keeps its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The work tree: the workspace root.
    pub work_tree: PathBuf,
    /// This work tree's own directory: its `HEAD` and `index`.
    pub git_dir: PathBuf,
    /// The directory shared by all work trees: refs, `packed-refs`, logs, objects.
    pub common_dir: PathBuf,
}

impl Repo {
    /// The repository whose top level is `root`, when there is one filewatchd can read.
    pub fn at(root: &Path) -> Option<Self> {
        let dot_git = root.join(".git");
        let meta = std::fs::symlink_metadata(&dot_git).ok()?;
        let git_dir = if meta.is_dir() {
            dot_git
        } else if meta.is_file() {
            gitdir_of_file(&dot_git, root)?
        } else {
            return None;
        };
        let common_dir = match refs::small_text(&git_dir.join("commondir"), 4096) {
            Ok(Some(text)) => absolute(&git_dir, text.trim()),
            _ => git_dir.clone(),
        };
        // What git itself asks of a repository's directory: HEAD, objects/ and refs/.
        let is_repo = git_dir.join("HEAD").is_file()
            && common_dir.join("objects").is_dir()
            && common_dir.join("refs").is_dir();
        if !is_repo || common_dir.join("reftable").is_dir() {
            return None;
        }
        Some(Self {
            work_tree: root.to_path_buf(),
            git_dir,
            common_dir,
        })
    }

    /// What git keeps outside the work tree now. `None` when HEAD cannot be read (a
    /// repository being made or removed).
    pub fn read(&self) -> std::io::Result<Option<GitState>> {
        let Some(head) = refs::read_head(&self.git_dir)? else {
            return Ok(None);
        };
        let refs = refs::read_refs(&self.common_dir)?;
        let stash = refs::read_stash(&self.common_dir, refs.get(refs::STASH))?;
        let index = self.read_index()?;
        let mut refs = refs;
        refs.remove(refs::STASH);
        Ok(Some(GitState {
            refs: Refs { head, refs, stash },
            index,
        }))
    }

    fn read_index(&self) -> std::io::Result<Option<Index>> {
        match std::fs::read(self.index_path()) {
            Ok(bytes) => Ok(Some(Index::parse(bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn index_path(&self) -> PathBuf {
        self.git_dir.join("index")
    }

    /// The stat data of every file git changes when HEAD, a ref, the stash or the index
    /// moves: equal to the last one read, nothing moved (a few `stat`s, no read).
    pub fn fingerprint(&self) -> Fingerprint {
        let mut hasher = blake3::Hasher::new();
        let mut add = |path: &Path| {
            if let Ok(stat) = crate::platform::sys::fs::lstat(path) {
                let stat = crate::model::StatKey::from_rustix(&stat);
                for n in [stat.ino, stat.size, stat.mtime_ns as u64, stat.ctime_ns as u64] {
                    hasher.update(&n.to_le_bytes());
                }
            }
            hasher.update(path.as_os_str().as_encoded_bytes());
        };
        add(&self.git_dir.join("HEAD"));
        add(&self.index_path());
        add(&self.common_dir.join("packed-refs"));
        add(&self.common_dir.join("logs/refs/stash"));
        add(&self.common_dir.join(refs::STASH));
        for dir in ["refs/heads", "refs/tags"] {
            refs::walk_dirs(&self.common_dir.join(dir), &mut add);
        }
        Fingerprint(*hasher.finalize().as_bytes())
    }

    /// A git operation left half done (a rebase, merge or cherry-pick stopped at a conflict,
    /// `git am`): its own files are not recorded, so nothing of git is put back under it.
    pub fn in_progress(&self) -> Option<&'static str> {
        const STOPPED: [(&str, &str); 6] = [
            ("rebase-merge", "a rebase"),
            ("rebase-apply", "a rebase or `git am`"),
            ("MERGE_HEAD", "a merge"),
            ("CHERRY_PICK_HEAD", "a cherry-pick"),
            ("REVERT_HEAD", "a revert"),
            ("BISECT_LOG", "a bisect"),
        ];
        STOPPED
            .iter()
            .find(|(name, _)| self.git_dir.join(name).exists())
            .map(|(_, what)| *what)
    }
}

/// The workspace's repository as the daemon watches it: where it is, the stat data it was last
/// looked at with, and what was last recorded of it.
#[derive(Debug, Default)]
pub struct Observed {
    repo: Option<Repo>,
    looked: Option<Fingerprint>,
    recorded: Option<change::Recorded>,
    /// The bytes of the index last recorded, when this process recorded it: the next change
    /// is counted against them without reading the store.
    index: Option<Vec<u8>>,
}

impl Observed {
    pub fn new(root: &Path, recorded: Option<change::Recorded>) -> Self {
        Self {
            repo: Repo::at(root),
            looked: None,
            recorded,
            index: None,
        }
    }

    /// Something else recorded the repository's state (a rollback that moved it).
    pub fn forget(&mut self, recorded: Option<change::Recorded>) {
        self.looked = None;
        self.recorded = recorded;
        self.index = None;
    }

    /// The bytes of the index last recorded, if this process still has them.
    pub fn last_index(&self) -> Option<&[u8]> {
        self.index.as_deref()
    }

    /// The repository's state now, with the stat data it was read at, unless those show that
    /// nothing moved since the last look (or there is no repository to read).
    pub fn look(&mut self, root: &Path) -> Option<(GitState, Fingerprint)> {
        if self.repo.is_none() {
            self.repo = Repo::at(root);
        }
        let repo = self.repo.as_ref()?;
        let looked = repo.fingerprint();
        if self.looked == Some(looked) {
            return None;
        }
        match repo.read() {
            Ok(state) => state.map(|state| (state, looked)),
            Err(err) => {
                tracing::debug!(error = %err, "the repository cannot be read: its state is not recorded");
                self.repo = None;
                None
            }
        }
    }

    /// `state` is the one last recorded: nothing to record.
    pub fn unchanged(&self, state: &GitState) -> bool {
        self.recorded.as_ref().is_some_and(|last| {
            let digest = last.index.as_ref().map(|i| i.digest.0);
            state.same_as(&last.refs, digest.as_ref())
        })
    }

    /// The state read at `looked` is recorded: as it was (`None`), or as a new state, read
    /// with the index `state`.
    pub fn seen(&mut self, looked: Fingerprint, recorded: Option<(change::Recorded, GitState)>) {
        self.looked = Some(looked);
        if let Some((recorded, state)) = recorded {
            self.recorded = Some(recorded);
            self.index = state.index.map(|i| i.bytes);
        }
    }
}

/// The stat data `Repo::fingerprint` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

/// The directory a `.git` file names (`gitdir: PATH`), relative to the file's directory.
fn gitdir_of_file(dot_git: &Path, root: &Path) -> Option<PathBuf> {
    let text = refs::small_text(dot_git, 4096).ok()??;
    let named = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let dir = absolute(root, named);
    dir.is_dir().then_some(dir)
}

fn absolute(base: &Path, named: &str) -> PathBuf {
    let path = Path::new(named);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// Where HEAD points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Head {
    /// A branch (its full name, `refs/heads/main`), born or not.
    Branch(String),
    /// A commit, detached.
    Detached(String),
}

/// One stash entry: its commit and its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StashEntry {
    pub oid: String,
    pub message: String,
}

/// HEAD, the branches and tags, and the stash: what a turn's git commands move besides the
/// index. Stored as JSON with the state (`crate::store::git`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refs {
    pub head: Head,
    /// Every branch and tag (`refs/heads/…`, `refs/tags/…`) by full name, to its object id.
    pub refs: BTreeMap<String, String>,
    /// Newest first: `stash@{0}` is the first.
    pub stash: Vec<StashEntry>,
}

/// What git keeps outside the work tree at one moment.
#[derive(Debug, Clone)]
pub struct GitState {
    pub refs: Refs,
    /// `None`: the repository has no index yet.
    pub index: Option<Index>,
}

impl GitState {
    /// The same refs and the same staged entries (the index's stat data aside: `git status`
    /// rewrites it without staging anything).
    pub fn same_as(&self, refs: &Refs, index_digest: Option<&[u8; 32]>) -> bool {
        self.refs == *refs && self.index.as_ref().map(|i| &i.digest) == index_digest
    }

    /// As a recorded state compares: its index by the digest of its entries alone (its bytes
    /// are not stored, so the digest stands for their hash too).
    pub fn as_recorded(&self) -> change::Recorded {
        let index = self.index.as_ref().map(|i| change::IndexAt {
            hash: crate::model::Hash(i.digest),
            digest: crate::model::Hash(i.digest),
        });
        change::Recorded {
            refs: self.refs.clone(),
            index,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_file_names_the_work_trees_directory() {
        let tree = tempfile::tempdir().expect("tempdir");
        let real = tree.path().join("elsewhere/worktrees/wt");
        std::fs::create_dir_all(&real).expect("mkdir");
        std::fs::write(real.join("HEAD"), "ref: refs/heads/wt\n").expect("HEAD");
        std::fs::write(real.join("commondir"), "../..\n").expect("commondir");
        for dir in ["objects", "refs"] {
            std::fs::create_dir_all(tree.path().join("elsewhere").join(dir)).expect("mkdir");
        }
        let work = tree.path().join("wt");
        std::fs::create_dir(&work).expect("mkdir");
        std::fs::write(work.join(".git"), format!("gitdir: {}\n", real.display())).expect(".git");
        let repo = Repo::at(&work).expect("a repository");
        assert_eq!(repo.git_dir, real);
        assert_eq!(repo.common_dir, real.join("../.."));
    }

    #[test]
    fn no_git_no_repository() {
        let tree = tempfile::tempdir().expect("tempdir");
        assert_eq!(Repo::at(tree.path()), None);
    }
}
