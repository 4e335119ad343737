//! git, run as another process (as an agent's shell would): the clone in the workspace, its
//! commits, checkouts, and what git says each commit's tree and each step's diff is.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A path inside a tree, as git and the file system give it: raw bytes, `/`-separated.
pub type RawPath = Vec<u8>;

/// One file of a tree: git's mode (`100644`, `100755`, `120000`) and blob id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    pub mode: String,
    pub oid: String,
}

/// A whole tree as git stores it: every file with its mode and blob id, and every directory.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GitTree {
    pub files: BTreeMap<RawPath, Blob>,
    pub dirs: BTreeSet<RawPath>,
}

/// One line of `git diff --name-status --no-renames`: `A`, `D` or `M` (a type change, `T`, is
/// an `M`: the path is there before and after).
pub type FileChange = (char, String);

/// A git repository with a work tree: the workspace's clone.
pub struct Repo {
    root: PathBuf,
}

impl Repo {
    /// Clones `source` (a bundle or a repository) into `root`, an empty directory, without
    /// checking anything out; fetches `source`'s `HEAD` too when `tip` is on no branch.
    pub fn clone_into(source: &Path, root: &Path, tip: &str) -> Repo {
        let mut cmd = git_command(root.parent().unwrap());
        cmd.args(["clone", "--quiet", "--no-checkout"])
            .arg(source)
            .arg(root);
        run(cmd, "clone");
        let repo = Repo {
            root: root.to_path_buf(),
        };
        let commit = format!("{tip}^{{commit}}");
        if !repo.has(&commit) {
            let source = source.to_str().expect("a source path in UTF-8");
            repo.git(&["fetch", "--quiet", source, "HEAD"]);
            assert!(repo.has(&commit), "{tip} is not in the clone of {source}");
        }
        repo
    }

    fn has(&self, object: &str) -> bool {
        let mut cmd = git_command(&self.root);
        cmd.args(["cat-file", "-e", object]);
        cmd.output().is_ok_and(|out| out.status.success())
    }

    /// The first line of a commit's message.
    pub fn subject(&self, sha: &str) -> String {
        let out = self.git(&["log", "-1", "--format=%s", sha]);
        String::from_utf8_lossy(&out).trim().to_string()
    }

    /// Every commit reachable from `tip`, oldest first, parents before children.
    pub fn commits(&self, tip: &str) -> Vec<String> {
        let out = self.git(&["rev-list", "--reverse", "--topo-order", tip]);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `git checkout --force <sha>`: the work tree becomes the commit's tree, whatever was there.
    pub fn checkout(&self, sha: &str) {
        self.git(&["checkout", "--force", "--quiet", "--detach", sha]);
    }

    /// `git diff --name-status --no-renames A B`: the files that differ between two commits.
    pub fn diff(&self, from: &str, to: &str) -> BTreeSet<FileChange> {
        let out = self.git(&[
            "diff",
            "--name-status",
            "--no-renames",
            "--no-ext-diff",
            "-z",
            from,
            to,
        ]);
        let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
        let mut changes = BTreeSet::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            let status = match status {
                b"A" => 'A',
                b"D" => 'D',
                b"M" | b"T" => 'M',
                other => panic!(
                    "git diff {from} {to}: status {:?}",
                    String::from_utf8_lossy(other)
                ),
            };
            changes.insert((status, api_path(path)));
        }
        changes
    }

    /// `git ls-tree -r -t <sha>`: the commit's files and directories.
    pub fn tree(&self, sha: &str) -> GitTree {
        let out = self.git(&["ls-tree", "-r", "-t", "-z", sha]);
        let mut tree = GitTree::default();
        for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
            let tab = entry.iter().position(|b| *b == b'\t').unwrap();
            let meta = String::from_utf8_lossy(&entry[..tab]).into_owned();
            let path = entry[tab + 1..].to_vec();
            let [mode, kind, oid] = meta.split(' ').collect::<Vec<_>>()[..] else {
                panic!("git ls-tree {sha}: entry {meta:?}");
            };
            match kind {
                "tree" => {
                    tree.dirs.insert(path);
                }
                "blob" => {
                    let blob = Blob {
                        mode: mode.to_string(),
                        oid: oid.to_string(),
                    };
                    tree.files.insert(path, blob);
                }
                other => panic!("git ls-tree {sha}: a {other} at {} is not replayed", show(&path)),
            }
        }
        tree
    }

    /// The blob ids of the given files of the work tree, hashed as they are on disk (no
    /// filter): one `git hash-object --stdin-paths` for all of them.
    pub fn hash_files(&self, paths: &[&RawPath]) -> Vec<String> {
        let mut input = Vec::new();
        for path in paths {
            input.extend_from_slice(&c_quoted(path));
            input.push(b'\n');
        }
        let out = self.git_with_input(&["hash-object", "--no-filters", "--stdin-paths"], &input);
        let oids: Vec<String> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(
            oids.len(),
            paths.len(),
            "git hash-object --stdin-paths: one id per path"
        );
        oids
    }

    /// The commit HEAD is at.
    pub fn head(&self) -> String {
        String::from_utf8(self.git(&["rev-parse", "HEAD"]))
            .unwrap()
            .trim()
            .to_string()
    }

    /// The blob id of some bytes (a symlink's target).
    pub fn hash_bytes(&self, bytes: &[u8]) -> String {
        let out = self.git_with_input(&["hash-object", "--stdin"], bytes);
        String::from_utf8(out).unwrap().trim().to_string()
    }

    fn git(&self, args: &[&str]) -> Vec<u8> {
        let mut cmd = git_command(&self.root);
        cmd.args(args);
        run(cmd, &args.join(" "))
    }

    fn git_with_input(&self, args: &[&str], input: &[u8]) -> Vec<u8> {
        let mut child = git_command(&self.root)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("git is needed for the replay tier");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        check(out, &args.join(" "))
    }
}

/// The commit `HEAD` names in `dir`'s repository, or why there is no full history to replay
/// there (not a repository, or a shallow clone).
pub fn head_of_full_history(dir: &Path) -> Result<String, String> {
    let out = git_command(dir)
        .args(["rev-parse", "--is-shallow-repository", "HEAD"])
        .output()
        .expect("git is needed for the replay tier");
    if !out.status.success() {
        return Err(format!("{} is not a git checkout", dir.display()));
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let [shallow, head] = text.lines().collect::<Vec<_>>()[..] else {
        return Err(format!("git rev-parse in {}: {text:?}", dir.display()));
    };
    if shallow == "true" {
        return Err(format!(
            "{} is a shallow clone (fetch its whole history)",
            dir.display()
        ));
    }
    Ok(head.to_string())
}

/// git with none of the user's configuration (no filters, no hooks, no advice).
fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args(["-c", "core.autocrlf=false", "-c", "core.fileMode=true"])
        .args(["-c", "core.symlinks=true", "-c", "advice.detachedHead=false"]);
    cmd
}

fn run(mut cmd: Command, what: &str) -> Vec<u8> {
    check(cmd.output().expect("git is needed for the replay tier"), what)
}

fn check(out: Output, what: &str) -> Vec<u8> {
    assert!(
        out.status.success(),
        "git {what} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A raw path as the API writes it (`\xNN` for bytes that are not UTF-8).
pub fn api_path(path: &[u8]) -> String {
    crate::common::api_name(OsStr::from_bytes(path))
}

/// A raw path for a message.
pub fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// A path as `git hash-object --stdin-paths` reads it: as is, or C-quoted when it holds a quote,
/// a backslash, or a control byte.
fn c_quoted(path: &[u8]) -> Vec<u8> {
    let plain = |b: &u8| *b >= 0x20 && *b != 0x7f && *b != b'"' && *b != b'\\';
    if path.iter().all(plain) {
        return path.to_vec();
    }
    let mut out = vec![b'"'];
    for b in path {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', *b]),
            b if plain(b) => out.push(*b),
            b => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
        }
    }
    out.push(b'"');
    out
}
