//! Moves git's components through git's own protocol: branches and tags in one `git update-ref
//! --stdin` transaction that checks each ref's old value, HEAD with `git symbolic-ref` or
//! `update-ref --no-deref`, the stash rebuilt with `git stash store`, the index written to
//! `index.lock` and renamed over (what git itself does). Hooks are not run.
//!
//! Each component is moved only from the value the move starts at: one already at its goal is
//! left, one holding anything else stops the rest (`WriteError::Moved`). Running the moves
//! again, or their reverse to put them back, therefore finishes what was started.
//!
//! Nothing is lost: every commit a move takes a branch, a tag or a stash entry away from, that
//! the branch's new commit does not contain, is kept by a ref of filewatchd's own,
//! `refs/filewatchd/<rollback>/<name>` (`git log --all` shows it; `git update-ref -d` drops it).

use crate::platform::ext::OpenExt;
use std::io::Write;
use std::process::{Command, Stdio};

use super::change::Move;
use super::{Head, Repo, StashEntry};
use crate::model::Hash;

/// Where the refs keeping what a rollback moved away from live.
pub const KEPT: &str = "refs/filewatchd";

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{what} was moved while the rollback ran ({moved})")]
    Moved { what: String, moved: String },
    #[error("a git command is running in the repository ({0} exists): retry once it ends")]
    Locked(String),
    #[error("`git {args}` failed: {message}")]
    Git { args: String, message: String },
    #[error("the repository cannot be read or written: {0}")]
    Io(#[from] std::io::Error),
}

/// One rollback's moves: what it says in the reflog, and where it keeps what it moves away
/// from.
pub struct Moves<'a> {
    pub repo: &'a Repo,
    pub moves: &'a [Move],
    /// The rollback's id: its kept refs are `refs/filewatchd/<id>/…`.
    pub rollback_id: i64,
    pub message: String,
}

impl Moves<'_> {
    /// Applies every move not yet at its goal; `index_bytes` gives a stored index's bytes.
    /// Returns how many components it moved.
    pub fn apply(&self, index_bytes: &dyn Fn(Hash) -> std::io::Result<Vec<u8>>) -> Result<usize, WriteError> {
        let Some(now) = self.repo.read()? else {
            return Err(WriteError::Io(std::io::Error::other("HEAD cannot be read")));
        };
        let pending = self.pending(&now.as_recorded())?;
        let mut kept = Vec::new();
        for change in &pending {
            kept.extend(self.kept_by(change));
        }
        let mut moved = 0;
        for change in &pending {
            if let Move::Head { to, .. } = change {
                self.head(to)?;
                moved += 1;
            }
        }
        let refs: Vec<&Move> = pending
            .iter()
            .copied()
            .filter(|m| matches!(m, Move::Ref { .. }))
            .collect();
        moved += self.transaction(&refs, &kept)?;
        for change in &pending {
            match change {
                Move::Stash { to, .. } => self.stash(&now.refs.stash, to)?,
                Move::Index { to, .. } => write_index(
                    self.repo,
                    to.as_ref().map(|i| index_bytes(i.hash)).transpose()?.as_deref(),
                )?,
                _ => continue,
            }
            moved += 1;
        }
        Ok(moved)
    }

    /// The moves whose component is where they start: one already at its goal is done; one
    /// anywhere else was moved by someone while the rollback ran, and stops them all.
    fn pending(&self, now: &super::change::Recorded) -> Result<Vec<&Move>, WriteError> {
        let mut pending = Vec::new();
        for change in self.moves {
            if change.reversed().since(now).is_none() {
                continue;
            }
            if let Some(moved) = change.since(now) {
                return Err(WriteError::Moved {
                    what: path_words(change),
                    moved: super::change::words(&moved),
                });
            }
            pending.push(change);
        }
        Ok(pending)
    }

    /// The refs keeping what `change` moves a branch, tag or stash entry away from.
    fn kept_by(&self, change: &Move) -> Vec<(String, String)> {
        match change {
            Move::Ref {
                name,
                from: Some(from),
                to,
            } if !self.contained(from, to.as_deref()) => {
                vec![(
                    format!("{KEPT}/{}/{}", self.rollback_id, strip(name)),
                    from.clone(),
                )]
            }
            Move::Stash { from, to } => from
                .iter()
                .enumerate()
                .filter(|(_, e)| !to.contains(e))
                .map(|(i, e)| (format!("{KEPT}/{}/stash/{i}", self.rollback_id), e.oid.clone()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether `to` contains the commit `from` (the branch moved forward): nothing to keep.
    fn contained(&self, from: &str, to: Option<&str>) -> bool {
        let Some(to) = to else {
            return false;
        };
        let status = self
            .git(&["merge-base", "--is-ancestor", from, to])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        status.is_ok_and(|s| s.success())
    }

    fn head(&self, to: &Head) -> Result<(), WriteError> {
        match to {
            Head::Branch(name) => self.run(&["symbolic-ref", "-m", &self.message, "HEAD", name], None),
            Head::Detached(oid) => self.run(
                &["update-ref", "--no-deref", "-m", &self.message, "HEAD", oid],
                None,
            ),
        }
    }

    /// Every branch and tag move, and every kept ref, in one transaction: each ref is checked
    /// against the value it is moved from, and either all move or none.
    fn transaction(&self, refs: &[&Move], kept: &[(String, String)]) -> Result<usize, WriteError> {
        if refs.is_empty() && kept.is_empty() {
            return Ok(0);
        }
        let mut script = String::from("start\n");
        for (name, oid) in kept {
            script.push_str(&format!("update {name} {oid}\n"));
        }
        for change in refs {
            if let Move::Ref { name, from, to } = change {
                let line = match (from, to) {
                    (Some(from), Some(to)) => format!("update {name} {to} {from}\n"),
                    (None, Some(to)) => format!("create {name} {to}\n"),
                    (Some(from), None) => format!("delete {name} {from}\n"),
                    (None, None) => continue,
                };
                script.push_str(&line);
            }
        }
        script.push_str("prepare\ncommit\n");
        self.run(&["update-ref", "-m", &self.message, "--stdin"], Some(&script))?;
        Ok(refs.len())
    }

    /// The stash rebuilt as `to`: dropped whole, then each entry stored, oldest first.
    fn stash(&self, now: &[StashEntry], to: &[StashEntry]) -> Result<(), WriteError> {
        if let Some(top) = now.first() {
            self.run(
                &[
                    "update-ref",
                    "-m",
                    &self.message,
                    "-d",
                    super::refs::STASH,
                    &top.oid,
                ],
                None,
            )?;
        }
        for entry in to.iter().rev() {
            let message = if entry.message.is_empty() {
                &self.message
            } else {
                &entry.message
            };
            self.run(&["stash", "store", "-m", message, &entry.oid], None)?;
        }
        Ok(())
    }

    fn git(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_COMMON_DIR",
            "GIT_OBJECT_DIRECTORY",
        ] {
            command.env_remove(var);
        }
        command
            .arg("--git-dir")
            .arg(&self.repo.git_dir)
            .arg("--work-tree")
            .arg(&self.repo.work_tree)
            .args(["-c", "core.hooksPath=/dev/null"])
            .args(args)
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str], input: Option<&str>) -> Result<(), WriteError> {
        let mut command = self.git(args);
        command.stdout(Stdio::null()).stderr(Stdio::piped());
        if input.is_some() {
            command.stdin(Stdio::piped());
        }
        let failed = |message: String| WriteError::Git {
            args: args.join(" "),
            message,
        };
        let mut child = command
            .spawn()
            .map_err(|e| failed(format!("git cannot run: {e}")))?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(input.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        if out.status.success() {
            return Ok(());
        }
        Err(failed(String::from_utf8_lossy(&out.stderr).trim().to_string()))
    }
}

/// Where git keeps `change`'s component, as an error names it.
fn path_words(change: &Move) -> String {
    match change {
        Move::Ref { name, .. } => super::change::short_name(name),
        other => other.key(),
    }
}

fn strip(name: &str) -> &str {
    name.strip_prefix("refs/").unwrap_or(name)
}

/// Writes the index as git does: `index.lock` created exclusively (a running git command holds
/// it), written and synced, then renamed over `index`. `None`: the index is removed.
fn write_index(repo: &Repo, bytes: Option<&[u8]>) -> Result<(), WriteError> {
    let index = repo.index_path();
    let lock = repo.git_dir.join("index.lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .permission_bits(0o644)
        .open(&lock);
    let mut file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(WriteError::Locked(lock.display().to_string()));
        }
        Err(e) => return Err(e.into()),
    };
    let written = match bytes {
        Some(bytes) => file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&lock, &index)),
        None => std::fs::remove_file(&index).and_then(|()| std::fs::remove_file(&lock)),
    };
    if let Err(e) = written {
        let _ = std::fs::remove_file(&lock);
        return Err(e.into());
    }
    crate::platform::ext::sync_dir(&repo.git_dir)?;
    Ok(())
}
