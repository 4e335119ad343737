//! The opencode-style shadow git peer (performance.md §1.1, §8.2):
//! `git --git-dir=$SHADOW --work-tree=. -c core.autocrlf=false add -A . &&
//!  git --git-dir=$SHADOW --work-tree=. write-tree`, run in the tree.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Shadow {
    pub git_dir: PathBuf,
    pub work: PathBuf,
}

/// Runs a git command to completion: its trimmed stdout, or what failed.
pub fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what}: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl Shadow {
    /// `git init --bare -q $SHADOW` (not timed).
    pub fn init(git_dir: &Path, work: &Path) -> Result<Shadow, String> {
        run(
            Command::new("git").args(["init", "--bare", "-q"]).arg(git_dir),
            "git init --bare",
        )?;
        Ok(Shadow {
            git_dir: git_dir.to_path_buf(),
            work: work.to_path_buf(),
        })
    }

    fn git(&self) -> Command {
        let mut c = Command::new("git");
        c.arg(format!("--git-dir={}", self.git_dir.display()))
            .arg("--work-tree=.")
            .current_dir(&self.work);
        c
    }

    /// One snapshot (`add -A .` then `write-tree`), timed end to end. Returns (time, tree id).
    pub fn snapshot(&self) -> Result<(Duration, String), String> {
        let t0 = Instant::now();
        run(
            self.git().args(["-c", "core.autocrlf=false", "add", "-A", "."]),
            "git add -A",
        )?;
        let tree = run(self.git().arg("write-tree"), "git write-tree")?;
        Ok((t0.elapsed(), tree))
    }
}

impl Shadow {
    /// `git --git-dir=$SHADOW --work-tree=. restore --source <tree> --worktree -- .`, run in the
    /// work tree, timed end to end: the Codex-style rollback (performance.md §8.2) from the
    /// shadow. Git compares the source tree with the shadow's index and rewrites only the paths
    /// whose content or stat differ (unlink + create: the same inode number may come back).
    pub fn restore(&self, tree: &str) -> Result<Duration, String> {
        let t0 = Instant::now();
        run(
            self.git()
                .args(["restore", "--source", tree, "--worktree", "--", "."]),
            "git restore --source",
        )?;
        Ok(t0.elapsed())
    }
}

pub fn git_version() -> String {
    Command::new("git")
        .arg("--version")
        .output()
        .ok()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .trim_start_matches("git version ")
                .to_string()
        })
        .unwrap_or_else(|| "?".into())
}
