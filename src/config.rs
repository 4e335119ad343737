//! `.filewatchd.toml` plus command-line flags, validated into one `Config`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::bounded::Unread;

/// Default cap above which a file is recorded by size and hash only (G9).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// The name of the per-workspace config file, looked up in the root.
pub const CONFIG_FILE: &str = ".filewatchd.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Said once: the OS error would only repeat it.
    #[error("no such file: {path} (the config file given with --config)")]
    Missing { path: PathBuf },
    /// The cause follows in the error's chain, not in this message.
    #[error("cannot read config {path}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("bad config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// What another user can write never chooses what this user's daemon records (G14).
    #[error(
        "{path} belongs to uid {owner}, not to you (uid {you}) or root: it is not used, as nothing another user can write is; remove it, or give your own with --config"
    )]
    NotYours { path: PathBuf, owner: u32, you: u32 },
    #[error("{path} is not a regular file: a config must be one")]
    NotAFile { path: PathBuf },
    #[error("{path} is {len} bytes: a config is at most {} KiB", CONFIG_LIMIT >> 10)]
    TooLarge { path: PathBuf, len: u64 },
}

/// The most of a config file read: a real one is a few lines.
const CONFIG_LIMIT: u64 = 1 << 20;

/// Whether `uid` is this process's user or root: the owners whose files are believed.
fn is_own_or_root(uid: u32) -> bool {
    uid == 0 || uid == crate::platform::ext::euid()
}

/// The text of the config at `path` (`None`: there is none): a regular file (`bounded`) of
/// this user or root, of at most `CONFIG_LIMIT` bytes.
fn read_config(path: &Path) -> Result<Option<String>, ConfigError> {
    let at = || path.to_path_buf();
    let (bytes, meta) = match crate::bounded::read(path, CONFIG_LIMIT) {
        Ok(Some(read)) => read,
        Ok(None) => return Ok(None),
        Err(Unread::NotAFile) => return Err(ConfigError::NotAFile { path: at() }),
        Err(Unread::TooLarge(len)) => return Err(ConfigError::TooLarge { path: at(), len }),
        Err(Unread::Io(source)) => return Err(ConfigError::Read { path: at(), source }),
    };
    if !is_own_or_root(crate::platform::ext::owner_of(&meta)) {
        let you = crate::platform::ext::euid();
        let owner = crate::platform::ext::owner_of(&meta);
        return Err(ConfigError::NotYours {
            path: at(),
            owner,
            you,
        });
    }
    let text = String::from_utf8(bytes).map_err(|e| ConfigError::Read {
        path: at(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    Ok(Some(text))
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
    verify: Option<VerifyFile>,
    autostart: Option<bool>,
    mcp: Option<McpFile>,
    ignored_files: Option<IgnoredFilesFile>,
}

/// `[ignored_files]`: files a `.gitignore` rule names, recorded all the same (`watch::kept`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct IgnoredFilesFile {
    record: Option<bool>,
    max_size: Option<u64>,
    max_files: Option<usize>,
}

/// Which ignored files are recorded (`crate::watch::kept`): on, each up to `max_size` bytes,
/// at most `max_files` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IgnoredFiles {
    pub record: bool,
    pub max_size: u64,
    pub max_files: usize,
}

impl Default for IgnoredFiles {
    fn default() -> Self {
        Self {
            record: true,
            max_size: 1 << 20,
            max_files: 1000,
        }
    }
}

/// `[mcp]`: what `filewatchd mcp` offers the agent.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpFile {
    allow_rollback: Option<bool>,
}

/// `[verify]`: durations as text (`"5m"`, `"30s"`); `interval = "0"` or `"off"` disables.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyFile {
    interval: Option<String>,
    quiet: Option<String>,
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
    pub verify: Verify,
    /// Whether an agent's hook starts the daemon when none runs (`autostart = false` to opt out).
    pub autostart: bool,
    /// `[mcp] allow_rollback = true`: the MCP server lists `undo`, `rollback` and
    /// `restore_file` (off by default: an agent only reads the record and previews).
    pub mcp_allow_rollback: bool,
    pub ignored_files: IgnoredFiles,
}

/// The background verification pass (G2: writes through a shared mapping have no event): at
/// most every `interval`, once no hint has come for `quiet`. `interval: None` turns it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verify {
    pub interval: Option<Duration>,
    pub quiet: Duration,
}

impl Default for Verify {
    fn default() -> Self {
        Self {
            interval: Some(Duration::from_secs(5 * 60)),
            quiet: Duration::from_secs(30),
        }
    }
}

impl Verify {
    fn parse(file: Option<VerifyFile>) -> Result<Self, String> {
        let defaults = Self::default();
        let Some(file) = file else {
            return Ok(defaults);
        };
        let interval = match file.interval.as_deref().map(str::trim) {
            None => defaults.interval,
            Some("off" | "0") => None,
            Some(text) => Some(duration("verify.interval", text)?).filter(|d| !d.is_zero()),
        };
        let quiet = match file.quiet.as_deref() {
            None => defaults.quiet,
            Some(text) => duration("verify.quiet", text)?,
        };
        Ok(Self { interval, quiet })
    }
}

fn duration(key: &str, text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{key}: bad duration {text:?} (say \"30s\", \"5m\"): {e}"))
}

/// How much history garbage collection keeps (docs/rollback.md, "Retention"): every version of the last
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
            verify: Verify::default(),
            autostart: true,
            mcp_allow_rollback: false,
            ignored_files: IgnoredFiles::default(),
        }
    }
}

impl Config {
    /// Loads `explicit` if given, else `<root>/.filewatchd.toml` if it exists, else defaults.
    pub fn load(root: &Path, explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let path = explicit.map_or_else(|| root.join(CONFIG_FILE), Path::to_path_buf);
        let text = match read_config(&path)? {
            Some(text) => text,
            None if explicit.is_none() => return Ok(Self::default()),
            None => return Err(ConfigError::Missing { path }),
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
            verify: Verify::parse(file.verify)?,
            autostart: file.autostart.unwrap_or(true),
            mcp_allow_rollback: file.mcp.and_then(|m| m.allow_rollback).unwrap_or(false),
            ignored_files: ignored_files(file.ignored_files),
        })
    }
}

fn ignored_files(file: Option<IgnoredFilesFile>) -> IgnoredFiles {
    let defaults = IgnoredFiles::default();
    let file = file.unwrap_or_default();
    IgnoredFiles {
        record: file.record.unwrap_or(defaults.record),
        max_size: file.max_size.unwrap_or(defaults.max_size),
        max_files: file.max_files.unwrap_or(defaults.max_files),
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

    #[test]
    fn hooks_start_the_daemon_unless_autostart_is_false() {
        assert!(Config::parse("").expect("valid").autostart);
        assert!(!Config::parse("autostart = false").expect("valid").autostart);
        let err = Config::parse("autostart = \"no\"").expect_err("bad value");
        assert!(err.contains("autostart"), "{err}");
    }

    #[test]
    fn the_mcp_servers_rollback_tools_are_off_unless_allowed() {
        assert!(!Config::parse("").expect("valid").mcp_allow_rollback);
        assert!(!Config::parse("[mcp]").expect("valid").mcp_allow_rollback);
        let on = Config::parse("[mcp]\nallow_rollback = true").expect("valid");
        assert!(on.mcp_allow_rollback);
        let err = Config::parse("[mcp]\nallow_undo = true").expect_err("unknown key");
        assert!(err.contains("allow_undo"), "{err}");
    }

    #[test]
    fn the_verify_pass_is_configured_by_durations_and_can_be_turned_off() {
        let config = Config::parse("[verify]\ninterval = \"2m\"\nquiet = \"500ms\"").expect("valid");
        assert_eq!(config.verify.interval, Some(Duration::from_secs(120)));
        assert_eq!(config.verify.quiet, Duration::from_millis(500));
        for off in ["off", "0", "0s"] {
            let text = format!("[verify]\ninterval = \"{off}\"");
            assert_eq!(
                Config::parse(&text).expect("valid").verify.interval,
                None,
                "{off}"
            );
        }
        assert_eq!(Config::parse("").expect("valid").verify, Verify::default());
        let err = Config::parse("[verify]\nquiet = \"soon\"").expect_err("bad duration");
        assert!(err.contains("verify.quiet"), "{err}");
        let err = Config::parse("[verify]\nevery = \"1m\"").expect_err("unknown key");
        assert!(err.contains("every"), "{err}");
    }
}
