//! The Codex-style "ghost commit" peer (performance.md §1.4, §8.2), in the tree made a real git
//! repo.
//!
//! Per turn, in the repo:
//! `git status --porcelain=2 -z --untracked-files=all`, then with `GIT_INDEX_FILE=<tmp>/index`:
//! `git read-tree HEAD`, `git add --all`, `git write-tree`, `git commit-tree <tree> -p HEAD -m
//! snap`. No ref is updated. The restore is `git restore --source <commit> --worktree --staged
//! -- .`, then the files created since the snapshot are deleted.
//!
//! Making the tree a repo is not timed: `git init`, the shadow's object store as an alternate,
//! and the shadow's index (same work tree, so its stat data is valid) as the repo's index; the
//! base commit is the shadow's tree. The daemon never records `.git/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::shadow::{Shadow, run};

pub struct Codex {
    pub work: PathBuf,
}

/// A fixed identity, as Codex uses, so no global config is needed.
const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "bench"),
    ("GIT_AUTHOR_EMAIL", "bench@localhost"),
    ("GIT_COMMITTER_NAME", "bench"),
    ("GIT_COMMITTER_EMAIL", "bench@localhost"),
];

impl Codex {
    /// Makes `work` a real repo on branch `main` whose HEAD is the shadow's latest snapshot
    /// (taken here), not timed. The shadow's index must describe the tree as it is now.
    pub fn init_from_shadow(sh: &Shadow) -> Result<Codex, String> {
        let work = sh.work.clone();
        run(
            Command::new("git").args(["init", "-q", "-b", "main"]).arg(&work),
            "git init",
        )?;
        let c = Codex { work };
        for (k, v) in [
            ("core.autocrlf", "false"),
            ("gc.auto", "0"),
            ("core.fsmonitor", "false"),
        ] {
            run(c.git().args(["config", k, v]), "git config")?;
        }
        let git_dir = c.work.join(".git");
        let alt = git_dir.join("objects/info/alternates");
        fs::write(&alt, format!("{}\n", sh.git_dir.join("objects").display()))
            .map_err(|e| format!("write {}: {e}", alt.display()))?;
        let (_, tree) = sh.snapshot()?;
        fs::copy(sh.git_dir.join("index"), git_dir.join("index"))
            .map_err(|e| format!("copy the shadow's index: {e}"))?;
        let commit = run(
            c.git().args(["commit-tree", &tree, "-m", "base"]),
            "git commit-tree (base)",
        )?;
        run(
            c.git().args(["update-ref", "refs/heads/main", &commit]),
            "git update-ref",
        )?;
        // Refresh the index's stat data once (untimed), as a user's repo would have it.
        // (`--refresh` exits 1 when some file differs from the index; that is fine here.)
        let _ = run(
            c.git().args(["update-index", "-q", "--refresh"]),
            "git update-index --refresh",
        );
        Ok(c)
    }

    pub fn git(&self) -> Command {
        let mut c = Command::new("git");
        c.current_dir(&self.work).envs(IDENTITY);
        c
    }

    fn git_idx(&self, index: &Path) -> Command {
        let mut c = self.git();
        c.env("GIT_INDEX_FILE", index);
        c
    }

    /// One ghost commit (see the module's doc), timed end to end, temp dir included.
    /// Returns (time, commit id).
    pub fn snapshot(&self) -> Result<(Duration, String), String> {
        let t0 = Instant::now();
        run(
            self.git()
                .args(["status", "--porcelain=2", "-z", "--untracked-files=all"]),
            "git status --porcelain=2",
        )?;
        let tmp = tempfile::Builder::new()
            .prefix("codex-index-")
            .tempdir()
            .map_err(|e| format!("temp dir for the ghost index: {e}"))?;
        let idx = tmp.path().join("index");
        run(
            self.git_idx(&idx).args(["read-tree", "HEAD"]),
            "git read-tree HEAD",
        )?;
        run(self.git_idx(&idx).args(["add", "--all"]), "git add --all")?;
        let tree = run(self.git_idx(&idx).arg("write-tree"), "git write-tree")?;
        let commit = run(
            self.git_idx(&idx)
                .args(["commit-tree", &tree, "-p", "HEAD", "-m", "snap"]),
            "git commit-tree",
        )?;
        drop(tmp);
        Ok((t0.elapsed(), commit))
    }

    /// `git restore --source <commit> --worktree --staged -- .`, then deletes `created` (files
    /// made since the snapshot, relative paths), timed end to end.
    pub fn restore(&self, commit: &str, created: &[String]) -> Result<Duration, String> {
        let t0 = Instant::now();
        run(
            self.git()
                .args(["restore", "--source", commit, "--worktree", "--staged", "--", "."]),
            "git restore --source --worktree --staged",
        )?;
        for rel in created {
            let p = self.work.join(rel);
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("remove {}: {e}", p.display())),
            }
        }
        Ok(t0.elapsed())
    }

    /// `git add -A && git commit -q -m MSG` in the real index (not timed): a clean HEAD.
    pub fn commit_all(&self, msg: &str) -> Result<String, String> {
        run(self.git().args(["add", "-A"]), "git add -A")?;
        run(
            self.git()
                .args(["commit", "-q", "--no-verify", "--allow-empty", "-m", msg]),
            "git commit",
        )?;
        run(self.git().args(["rev-parse", "HEAD"]), "git rev-parse HEAD")
    }
}
