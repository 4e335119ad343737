//! Which paths are tracked (docs/tracking.md): `.git/` never, the store never, libfuse's
//! `.fuse_hidden…` stand-ins never, then the config's `ignore` globs, `.gitignore` and
//! `.filewatchdignore` files (deepest first), and `.git/info/exclude`. Ignore files are re-read
//! when they change. A file a git rule ignores by its own name is recorded all the same, up to
//! caps (`super::kept`: `.env`, `*.pem`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::bounded::Unread;
use crate::fs::cookie::{cookie_instance, cookie_instance_of};
use crate::paths::RelPath;

/// Files whose content are ignore rules for their directory.
pub const IGNORE_FILES: [&str; 2] = [".gitignore", ".filewatchdignore"];

/// Cloned when an ignore file changes: what the rules were is how a rescan tells a path
/// coming into view from one written now (`capture::tracked::RulesChanged`).
#[derive(Clone, Debug)]
pub struct IgnoreRules {
    root: PathBuf,
    /// The state directory when it lies inside the root.
    state_dir: Option<RelPath>,
    config: Gitignore,
    exclude: Gitignore,
    /// Rules of each directory holding an ignore file; the root's key is empty.
    per_dir: HashMap<Vec<u8>, Gitignore>,
    /// Ignore files found not applied since `take_refusals` was last asked (what `status`
    /// names, once each).
    refusals: Vec<String>,
    /// The ignored files recorded all the same (`super::kept`).
    kept: super::kept::Kept,
}

impl IgnoreRules {
    pub fn new(root: &Path, state_dir: &Path, config_globs: &[String]) -> Result<Self, ignore::Error> {
        let mut builder = GitignoreBuilder::new(root);
        for glob in config_globs {
            builder.add_line(None, glob)?;
        }
        let config = builder.build()?;
        let (exclude, _) = Gitignore::new(root.join(".git/info/exclude"));
        let mut rules = Self {
            root: root.to_path_buf(),
            state_dir: RelPath::from_abs(root, state_dir),
            config,
            exclude,
            per_dir: HashMap::new(),
            refusals: Vec::new(),
            kept: super::kept::Kept::default(),
        };
        rules.reload_dir(None);
        Ok(rules)
    }

    /// Records the ignored files `limits` allows (`super::kept`).
    pub fn keeping(self, limits: crate::config::IgnoredFiles) -> Self {
        Self {
            kept: super::kept::Kept::new(limits),
            ..self
        }
    }

    /// Re-reads the ignore files of one directory (`None`: the root). An ignore file that is
    /// not a regular file, or is larger than `IGNORE_FILE_LIMIT` or has more than
    /// `IGNORE_RULES_LIMIT` rules, is not applied (what it would ignore is recorded): the
    /// refusal, naming it, is logged and kept for `take_refusals`.
    pub fn reload_dir(&mut self, dir: Option<&RelPath>) {
        let abs = dir.map_or_else(|| self.root.clone(), |d| d.to_abs(&self.root));
        let key = dir.map_or_else(Vec::new, |d| d.as_bytes().to_vec());
        let mut builder = GitignoreBuilder::new(&abs);
        let mut any = false;
        for name in IGNORE_FILES {
            let file = abs.join(name);
            match read_ignore_file(&file) {
                Ok(None) => {}
                Ok(Some(text)) => {
                    any = true;
                    add_lines(&mut builder, &file, &text);
                }
                Err(refusal) => {
                    // Logged as `status` gets it (`capture::Context::said_refusals`).
                    if !self.refusals.contains(&refusal) {
                        self.refusals.push(refusal);
                    }
                }
            }
        }
        match builder.build() {
            Ok(gitignore) if any => {
                self.per_dir.insert(key, gitignore);
            }
            _ => {
                self.per_dir.remove(&key);
            }
        }
    }

    /// The ignore files found not applied since the last call.
    pub fn take_refusals(&mut self) -> Vec<String> {
        std::mem::take(&mut self.refusals)
    }

    /// True when `path` is an ignore file whose change must reload the rules.
    pub fn is_ignore_file(path: &RelPath) -> bool {
        Self::is_ignore_name(path.file_name())
    }

    /// True when a file named `name` holds ignore rules for its directory.
    pub fn is_ignore_name(name: &[u8]) -> bool {
        IGNORE_FILES.iter().any(|file| name == file.as_bytes())
    }

    /// Whether `path` is one of this process's cookies (only those are not tracked).
    pub fn is_cookie(path: &RelPath) -> bool {
        !path.as_bytes().contains(&b'/')
            && cookie_instance_of(path.as_bytes()) == Some(cookie_instance().as_bytes())
    }

    /// Whether `path` (whose ancestors are tracked) is excluded from tracking.
    pub fn is_ignored(&self, path: &RelPath, is_dir: bool) -> bool {
        self.verdict(path, is_dir).is_some()
    }

    /// What excludes `path` (whose ancestors are tracked) from tracking, if anything does.
    fn verdict(&self, path: &RelPath, is_dir: bool) -> Option<Verdict<'_>> {
        if path.as_bytes().split(|&b| b == b'/').any(|c| c == b".git") {
            return Some(Verdict::Git);
        }
        if Self::is_cookie(path) || self.state_dir.as_ref().is_some_and(|s| path.starts_with(s)) {
            return Some(Verdict::Own);
        }
        // A walk that listed one would record it, and a rollback bring it back as a real file.
        if crate::fs::fuse::is_stand_in(path.file_name()) {
            return Some(Verdict::FuseHidden);
        }
        // Made only when a rule is there to match it: a walk asks for every entry it lists.
        let abs = std::cell::OnceCell::new();
        let abs = || abs.get_or_init(|| path.to_abs(&self.root));
        if !self.config.is_empty()
            && let Match::Ignore(glob) = self.config.matched(abs(), is_dir)
        {
            return Some(Verdict::Rule(glob));
        }
        for dir in ancestors(path) {
            let Some(rules) = self.per_dir.get(dir) else {
                continue;
            };
            match rules.matched(abs(), is_dir) {
                Match::Ignore(glob) if !is_dir && self.kept.keeps(path, abs(), glob) => return None,
                Match::Ignore(glob) => return Some(Verdict::Rule(glob)),
                Match::Whitelist(_) => return None,
                Match::None => {}
            }
        }
        if self.exclude.is_empty() {
            return None;
        }
        match self.exclude.matched(abs(), is_dir) {
            Match::Ignore(glob) if !is_dir && self.kept.keeps(path, abs(), glob) => None,
            Match::Ignore(glob) => Some(Verdict::Rule(glob)),
            _ => None,
        }
    }

    /// Why `path` is not tracked: the first of it and its ancestors (from the root down)
    /// that a rule excludes, with the rule. `is_dir` says what `path` itself is.
    pub fn explain(&self, path: &RelPath, is_dir: bool) -> Option<Ignored> {
        let mut dirs: Vec<&[u8]> = ancestors(path).filter(|d| !d.is_empty()).collect();
        dirs.reverse();
        let candidates = dirs
            .into_iter()
            .map(|dir| (RelPath::from_fs_bytes(dir.to_vec()), true))
            .chain(std::iter::once((path.clone(), is_dir)));
        for (candidate, is_dir) in candidates {
            if let Some(verdict) = self.verdict(&candidate, is_dir) {
                return Some(Ignored {
                    path: path.clone(),
                    by: IgnoredBy::of(verdict, &self.root),
                    through: (candidate != *path).then_some(candidate),
                });
            }
        }
        None
    }
}

/// What excludes a path, as `IgnoreRules::verdict` finds it.
enum Verdict<'a> {
    Git,
    /// filewatchd's own: its state directory, the barrier's cookies.
    Own,
    FuseHidden,
    Rule(&'a ignore::gitignore::Glob),
}

/// A path that is not tracked, and why (`IgnoreRules::explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    pub path: RelPath,
    pub by: IgnoredBy,
    /// The ancestor directory the rule excludes, when it is not `path` itself.
    pub through: Option<RelPath>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoredBy {
    /// `.git/` is never tracked.
    Git,
    /// filewatchd's own state directory (or a barrier cookie).
    Own,
    /// libfuse's stand-in for a removed file still open (`.fuse_hidden…`).
    FuseHidden,
    /// An ignore rule, as written, and where: an ignore file relative to the root (or as
    /// given when outside it) with its line, or the config's `ignore` list (`source` `None`).
    Rule {
        glob: String,
        source: Option<String>,
        line: Option<usize>,
    },
}

impl IgnoredBy {
    fn of(verdict: Verdict<'_>, root: &Path) -> Self {
        match verdict {
            Verdict::Git => Self::Git,
            Verdict::Own => Self::Own,
            Verdict::FuseHidden => Self::FuseHidden,
            Verdict::Rule(glob) => {
                let line = glob.from().and_then(|file| line_of(file, glob.original()));
                let source = glob.from().map(|file| match file.strip_prefix(root) {
                    Ok(inside) => inside.display().to_string(),
                    Err(_) => file.display().to_string(),
                });
                Self::Rule {
                    glob: glob.original().to_string(),
                    source,
                    line,
                }
            }
        }
    }
}

/// The line (from 1) of `file` holding `rule`: the last one, since the last matching rule of
/// an ignore file is the one that decides.
fn line_of(file: &Path, rule: &str) -> Option<usize> {
    let text = std::fs::read_to_string(file).ok()?;
    let lines = text.lines().enumerate();
    let found = lines.filter(|(_, line)| line.trim() == rule.trim()).last();
    found.map(|(i, _)| i + 1)
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let through = match &self.through {
            Some(dir) => format!(", which matches its directory {dir}/"),
            None => String::new(),
        };
        match &self.by {
            IgnoredBy::Git => write!(f, "{} is inside .git/, which filewatchd never tracks", self.path),
            IgnoredBy::Own => write!(f, "{} is filewatchd's own (its state directory)", self.path),
            IgnoredBy::FuseHidden => write!(
                f,
                "{} is a FUSE file system's stand-in for a removed file still open, which filewatchd never tracks",
                self.path
            ),
            IgnoredBy::Rule { glob, source, line } => {
                let place = match (source, line) {
                    (Some(file), Some(line)) => format!("{file} line {line}"),
                    (Some(file), None) => file.clone(),
                    (None, _) => "the `ignore` list of the config".to_string(),
                };
                write!(f, "{} is ignored by `{glob}` ({place}{through})", self.path)
            }
        }
    }
}

/// The byte keys of `path`'s ancestor directories, deepest first, ending with the root (`""`).
fn ancestors(path: &RelPath) -> impl Iterator<Item = &[u8]> {
    let bytes = path.as_bytes();
    let cuts = bytes
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'/')
        .map(|(i, _)| i);
    cuts.chain(std::iter::once(0)).map(move |cut| &bytes[..cut])
}

/// The largest ignore file applied: real ones are kilobytes; each rule costs the matcher
/// memory and time, so a huge one is refused rather than let grow the daemon without bound.
pub const IGNORE_FILE_LIMIT: u64 = 256 << 10;
/// The most rules (lines that are not blank or comments) of one ignore file applied.
pub const IGNORE_RULES_LIMIT: usize = 5_000;

/// The text of the ignore file `file`, `None` when there is none; an error (the sentence
/// said of it) when it is not a regular file or is over the limits. A FIFO is never waited
/// on and a device never read.
fn read_ignore_file(file: &Path) -> Result<Option<String>, String> {
    let shown = file.display();
    let bytes = match crate::bounded::read(file, IGNORE_FILE_LIMIT) {
        Ok(Some((bytes, _))) => bytes,
        Ok(None) => return Ok(None),
        Err(Unread::NotAFile) => {
            return Err(format!("ignore file {shown} is not a regular file: not applied"));
        }
        Err(Unread::TooLarge(len)) => {
            return Err(format!(
                "ignore file {shown} is {len} bytes, over the {} KiB filewatchd applies: not applied, so what it lists is recorded",
                IGNORE_FILE_LIMIT >> 10
            ));
        }
        Err(Unread::Io(e)) => return Err(format!("ignore file {shown} cannot be read ({e}): not applied")),
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let rules = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    if rules > IGNORE_RULES_LIMIT {
        return Err(format!(
            "ignore file {} has {rules} rules, over the {IGNORE_RULES_LIMIT} filewatchd applies: not applied, so what it lists is recorded",
            shown
        ));
    }
    Ok(Some(text))
}

/// Adds each line of `text` (the ignore file `file`) to `builder`; bad lines are said once.
fn add_lines(builder: &mut GitignoreBuilder, file: &Path, text: &str) {
    let mut bad = 0usize;
    let mut first = None;
    // A byte order mark (an editor on Windows) is no part of the first rule, as git reads it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for line in text.lines() {
        if let Err(err) = builder.add_line(Some(file.to_path_buf()), line) {
            bad += 1;
            first.get_or_insert(err);
        }
    }
    if let Some(err) = first {
        // A typo of the user's, not a fault of the daemon: said, not warned about.
        tracing::info!(file = %file.display(), error = %err, bad, "ignore file has bad lines; the others apply");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> RelPath {
        RelPath::from_fs_bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn a_byte_order_mark_is_no_part_of_the_first_rule() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::write(root.join(".gitignore"), "\u{feff}node_modules/\n").expect("write");
        let rules = IgnoreRules::new(root, &root.join(".state"), &[]).expect("rules");
        assert!(rules.is_ignored(&rel("node_modules"), true));
    }

    #[test]
    fn nested_gitignore_config_and_builtin_rules() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::write(root.join(".gitignore"), "node_modules/\n*.log\n").expect("write");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/.gitignore"), "!keep.log\ngen/\n").expect("write");
        let state = root.join(".state");
        let mut rules = IgnoreRules::new(root, &state, &["*.tmp".to_string()]).expect("rules");
        rules.reload_dir(Some(&rel("sub")));

        assert!(rules.is_ignored(&rel("node_modules"), true));
        assert!(!rules.is_ignored(&rel("node_modules"), false));
        assert!(rules.is_ignored(&rel("a.log"), false));
        assert!(!rules.is_ignored(&rel("sub/keep.log"), false));
        assert!(rules.is_ignored(&rel("sub/gen"), true));
        assert!(rules.is_ignored(&rel("x/y.tmp"), false));
        assert!(rules.is_ignored(&rel(".git"), true));
        assert!(rules.is_ignored(&rel("vendor/.git"), true));
        assert!(rules.is_ignored(&rel(".state/index.sqlite"), false));
        let own = format!(".filewatchd-cookie-{}-2", cookie_instance());
        assert!(rules.is_ignored(&rel(&own), false));
        let foreign = format!(".filewatchd-cookie-{}-2", "0".repeat(32));
        assert!(
            !rules.is_ignored(&rel(&foreign), false),
            "another instance's cookie is a file"
        );
        assert!(
            !rules.is_ignored(&rel(".filewatchd-cookie-1-2"), false),
            "the prefix alone"
        );
        assert!(
            !rules.is_ignored(&rel(&format!("sub/{own}")), false),
            "only the root has cookies"
        );
        assert!(!rules.is_ignored(&rel("src/main.rs"), false));
        assert!(rules.is_ignored(&rel(".fuse_hidden0000000400000002"), false));
        assert!(rules.is_ignored(&rel("sub/.fuse_hidden00000a1f00000003"), false));
        assert!(!rules.is_ignored(&rel(".fuse_hidden"), false), "the prefix alone");
        assert!(!rules.is_ignored(&rel(".fuse_hidden-notes.txt"), false));
    }

    #[test]
    fn an_ignored_path_is_explained_by_its_rule_and_where_it_is_written() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::write(root.join(".gitignore"), "# deps\n*.log\nnode_modules/\n").expect("write");
        let rules = IgnoreRules::new(root, &root.join(".state"), &["*.tmp".to_string()]).expect("rules");
        let explained = |path: &str, is_dir| rules.explain(&rel(path), is_dir).map(|i| i.to_string());
        assert_eq!(
            explained("node_modules/x/y.js", false).as_deref(),
            Some(
                "node_modules/x/y.js is ignored by `node_modules/` (.gitignore line 3, which matches its directory node_modules/)"
            )
        );
        assert_eq!(
            explained("a.log", false).as_deref(),
            Some("a.log is ignored by `*.log` (.gitignore line 2)")
        );
        assert_eq!(
            explained("b.tmp", false).as_deref(),
            Some("b.tmp is ignored by `*.tmp` (the `ignore` list of the config)")
        );
        assert_eq!(
            explained(".git/config", false).as_deref(),
            Some(".git/config is inside .git/, which filewatchd never tracks")
        );
        assert_eq!(explained("src/main.rs", false), None);
    }

    #[test]
    fn ancestors_run_deepest_first_to_the_root() {
        let path = rel("a/b/c");
        let keys: Vec<&[u8]> = ancestors(&path).collect();
        assert_eq!(keys, vec![&b"a/b"[..], b"a", b""]);
    }
}
