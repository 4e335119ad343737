//! `.filewatchd.toml` plus command-line flags, validated into one `Config`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Default cap above which a file is recorded by size and hash only (G9).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// The name of the per-workspace config file, looked up in the root.
pub const CONFIG_FILE: &str = ".filewatchd.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("bad config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// What the config file may say. Unknown keys are errors, not silent defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    ignore: Option<Vec<String>>,
    max_file_size: Option<u64>,
    port: Option<u16>,
    keep_days: Option<u32>,
    keep_turns: Option<u32>,
    max_store_bytes: Option<u64>,
}

/// The validated settings the daemon runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Extra gitignore-style globs that exclude paths from tracking.
    pub ignore: Vec<String>,
    pub max_file_size: u64,
    /// `None`: a free port chosen at start.
    pub port: Option<u16>,
    pub retention: Retention,
}

/// How much history garbage collection keeps (PRODUCT.md 8): every version of the last
/// `keep_days` days, and at least the last `keep_turns` turns of each session. Over
/// `max_store_bytes`, the days rule gives way (the turns rule and pending redos never do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub keep_days: u32,
    pub keep_turns: u32,
    pub max_store_bytes: Option<u64>,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            keep_days: 30,
            keep_turns: 100,
            max_store_bytes: None,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            ignore: Vec::new(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            port: None,
            retention: Retention::default(),
        }
    }
}

impl Config {
    /// Loads `explicit` if given, else `<root>/.filewatchd.toml` if it exists, else defaults.
    pub fn load(root: &Path, explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let path = explicit.map_or_else(|| root.join(CONFIG_FILE), Path::to_path_buf);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => {
                return Ok(Self::default());
            }
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::parse(&text).map_err(|message| ConfigError::Invalid { path, message })
    }

    fn parse(text: &str) -> Result<Self, String> {
        let file: FileConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if file.max_file_size == Some(0) {
            return Err("max_file_size must be at least 1 byte".into());
        }
        for glob in file.ignore.iter().flatten() {
            globset::Glob::new(glob).map_err(|e| format!("ignore: bad glob {glob:?}: {e}"))?;
        }
        let defaults = Retention::default();
        let retention = Retention {
            keep_days: file.keep_days.unwrap_or(defaults.keep_days),
            keep_turns: file.keep_turns.unwrap_or(defaults.keep_turns),
            max_store_bytes: file.max_store_bytes,
        };
        Ok(Self {
            ignore: file.ignore.unwrap_or_default(),
            max_file_size: file.max_file_size.unwrap_or(DEFAULT_MAX_FILE_SIZE),
            port: file.port,
            retention,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_to_an_empty_file() {
        let config = Config::parse("").expect("empty config is valid");
        assert_eq!(config.max_file_size, DEFAULT_MAX_FILE_SIZE);
        assert!(config.ignore.is_empty());
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = Config::parse("colour = 1").expect_err("unknown key");
        assert!(err.contains("colour"), "{err}");
        let err = Config::parse("max_file_size = \"big\"").expect_err("bad value");
        assert!(err.contains("max_file_size"), "{err}");
        let err = Config::parse("ignore = [\"a[\"]").expect_err("bad glob");
        assert!(err.contains("ignore"), "{err}");
    }
}
