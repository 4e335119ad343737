//! Which paths are tracked (PRODUCT.md 7): `.git/` never, the store never, then the config's
//! `ignore` globs, `.gitignore` and `.filewatchdignore` files (deepest first), and
//! `.git/info/exclude`. Ignore files are re-read when they change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::paths::RelPath;

/// Files whose content are ignore rules for their directory.
pub const IGNORE_FILES: [&str; 2] = [".gitignore", ".filewatchdignore"];

/// Name prefix of the barrier's cookie files, created and removed in the root by the daemon.
/// The prefix alone does not make a cookie: see [`cookie_instance`].
pub const COOKIE_PREFIX: &[u8] = b".filewatchd-cookie-";

/// This process's cookie instance: 128 random bits drawn once and written into the name of
/// every cookie it makes (`.filewatchd-cookie-<instance>-<n>`). A file whose name merely
/// starts with the prefix is the user's, tracked like any other; the state directory keeps
/// the instances whose cookies a killed daemon may have left (`state::StateDir`).
pub fn cookie_instance() -> &'static str {
    static INSTANCE: OnceLock<String> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        let mut raw = [0u8; 16];
        if rustix::rand::getrandom(&mut raw, rustix::rand::GetRandomFlags::empty()).is_err() {
            // No kernel randomness: still unique to this process and moment.
            let seed = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
            raw.copy_from_slice(&blake3::hash(seed.as_bytes()).as_bytes()[..16]);
        }
        raw.iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// The instance a cookie's file name carries (`<prefix><32 hex>-<digits>`), if it has that shape.
pub fn cookie_instance_of(name: &[u8]) -> Option<&[u8]> {
    let rest = name.strip_prefix(COOKIE_PREFIX)?;
    let (instance, counter) = (rest.get(..32)?, rest.get(32..)?);
    let counter = counter.strip_prefix(b"-")?;
    let hex = instance
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    let digits = !counter.is_empty() && counter.iter().all(u8::is_ascii_digit);
    (hex && digits).then_some(instance)
}

pub struct IgnoreRules {
    root: PathBuf,
    /// The state directory when it lies inside the root.
    state_dir: Option<RelPath>,
    config: Gitignore,
    exclude: Gitignore,
    /// Rules of each directory holding an ignore file; the root's key is empty.
    per_dir: HashMap<Vec<u8>, Gitignore>,
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
        };
        rules.reload_dir(None);
        Ok(rules)
    }

    /// Re-reads the ignore files of one directory (`None`: the root).
    pub fn reload_dir(&mut self, dir: Option<&RelPath>) {
        let abs = dir.map_or_else(|| self.root.clone(), |d| d.to_abs(&self.root));
        let key = dir.map_or_else(Vec::new, |d| d.as_bytes().to_vec());
        let mut builder = GitignoreBuilder::new(&abs);
        let mut any = false;
        for name in IGNORE_FILES {
            let file = abs.join(name);
            if file.is_file() {
                any = true;
                if let Some(err) = builder.add(&file) {
                    // A typo of the user's, not a fault of the daemon: said, not warned about.
                    tracing::info!(file = %file.display(), error = %err, "ignore file has bad lines; the others apply");
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

    /// True when `path` is an ignore file whose change must reload the rules.
    pub fn is_ignore_file(path: &RelPath) -> bool {
        IGNORE_FILES
            .iter()
            .any(|name| path.file_name() == name.as_bytes())
    }

    /// Whether `path` is one of this process's cookies (only those are not tracked).
    pub fn is_cookie(path: &RelPath) -> bool {
        path.parent().is_none() && cookie_instance_of(path.as_bytes()) == Some(cookie_instance().as_bytes())
    }

    /// Whether `path` (whose ancestors are tracked) is excluded from tracking.
    pub fn is_ignored(&self, path: &RelPath, is_dir: bool) -> bool {
        if path.as_bytes().split(|&b| b == b'/').any(|c| c == b".git") || Self::is_cookie(path) {
            return true;
        }
        if self.state_dir.as_ref().is_some_and(|s| path.starts_with(s)) {
            return true;
        }
        let abs = path.to_abs(&self.root);
        if self.config.matched(&abs, is_dir).is_ignore() {
            return true;
        }
        for dir in ancestors(path) {
            let Some(rules) = self.per_dir.get(dir) else {
                continue;
            };
            match rules.matched(&abs, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        self.exclude.matched(&abs, is_dir).is_ignore()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> RelPath {
        RelPath::from_fs_bytes(s.as_bytes().to_vec())
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
    }

    #[test]
    fn ancestors_run_deepest_first_to_the_root() {
        let path = rel("a/b/c");
        let keys: Vec<&[u8]> = ancestors(&path).collect();
        assert_eq!(keys, vec![&b"a/b"[..], b"a", b""]);
    }
}
