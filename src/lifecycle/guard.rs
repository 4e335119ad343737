//! Roots nobody should index without being asked: the file system root, the home directory
//! and any directory holding it. Indexing a whole home directory (caches, downloads, every
//! other project) is almost always a mistake, so `start` and `serve` ask first and hooks
//! never start a daemon there.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a root is one to ask about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Risk {
    FileSystemRoot,
    Home,
    /// The root holds the home directory.
    HoldsHome(PathBuf),
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Risk::FileSystemRoot => write!(f, "it is the file system root"),
            Risk::Home => write!(f, "it is your home directory"),
            Risk::HoldsHome(home) => write!(f, "it holds your home directory {}", home.display()),
        }
    }
}

/// Whether `root` (canonical) is `/`, `$HOME`, or holds `$HOME`.
pub fn risk(root: &Path) -> Option<Risk> {
    if root.parent().is_none() {
        return Some(Risk::FileSystemRoot);
    }
    let home = home()?;
    if home == root {
        return Some(Risk::Home);
    }
    home.starts_with(root).then_some(Risk::HoldsHome(home))
}

/// The home directory (`platform::ext::home_dir`), canonical.
fn home() -> Option<PathBuf> {
    crate::platform::ext::canonical(&crate::platform::ext::home_dir()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_the_home_and_what_holds_it_are_risky() {
        let home = home().expect("HOME is set for the tests");
        assert_eq!(risk(Path::new("/")), Some(Risk::FileSystemRoot));
        assert_eq!(risk(&home), Some(Risk::Home));
        if let Some(above) = home.parent().filter(|p| p.parent().is_some()) {
            assert_eq!(risk(above), Some(Risk::HoldsHome(home.clone())));
        }
        assert_eq!(risk(&home.join("projects/app")), None);
    }
}
