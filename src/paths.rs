//! Workspace-relative paths as raw bytes, and their lossless text form for the API.

use std::fmt;
use std::path::{Path, PathBuf};

/// A path relative to the workspace root, `/`-separated, stored as the bytes the file system
/// gave us. Identity comparisons never go through lossy UTF-8.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(Vec<u8>);

/// Why a path given by a client was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path is absolute; give it relative to the workspace root")]
    Absolute,
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("the path has an empty, `.` or `..` component")]
    BadComponent,
    #[error("the path is under .git/, which filewatchd never touches")]
    Git,
    #[error("bad escape in path: {0}")]
    BadEscape(String),
}

impl RelPath {
    /// Wraps bytes that came from the file system (a walk or an event): trusted as-is.
    pub fn from_fs_bytes(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The relative path of `abs` under `root`, if it is beneath it (and not the root itself).
    pub fn from_abs(root: &Path, abs: &Path) -> Option<Self> {
        let rel = abs.strip_prefix(root).ok()?;
        #[cfg(unix)]
        let bytes = rel.as_os_str().as_encoded_bytes().to_vec();
        // Windows: `\\` between names, kept as `/` (which Windows takes too).
        #[cfg(windows)]
        let bytes = rel
            .components()
            .map(|c| c.as_os_str().as_encoded_bytes())
            .collect::<Vec<_>>()
            .join(&b'/');
        (!bytes.is_empty()).then_some(Self(bytes))
    }

    /// Parses a path given by a client in the escaped text form, refusing anything that could
    /// leave the root or reach `.git/`.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let bytes = unescape(text)?;
        validate(&bytes)?;
        Ok(Self(bytes))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes, given back (a walk reuses them for the next entry's path).
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    pub fn as_path(&self) -> &Path {
        Path::new(crate::platform::os_str(&self.0))
    }

    pub fn to_abs(&self, root: &Path) -> PathBuf {
        root.join(self.as_path())
    }

    /// The parent directory, or `None` for a top-level entry.
    pub fn parent(&self) -> Option<RelPath> {
        let cut = self.0.iter().rposition(|&b| b == b'/')?;
        Some(Self(self.0[..cut].to_vec()))
    }

    pub fn join(&self, name: &[u8]) -> RelPath {
        let mut bytes = Vec::with_capacity(self.0.len() + 1 + name.len());
        bytes.extend_from_slice(&self.0);
        bytes.push(b'/');
        bytes.extend_from_slice(name);
        Self(bytes)
    }

    /// The last component.
    pub fn file_name(&self) -> &[u8] {
        match self.0.iter().rposition(|&b| b == b'/') {
            Some(cut) => &self.0[cut + 1..],
            None => &self.0,
        }
    }

    /// True when `self` is `dir` or lies beneath it.
    pub fn starts_with(&self, dir: &RelPath) -> bool {
        self.0.starts_with(&dir.0) && (self.0.len() == dir.0.len() || self.0[dir.0.len()] == b'/')
    }

    /// The byte prefix every descendant of this directory starts with (`dir/`).
    pub fn child_prefix(&self) -> Vec<u8> {
        let mut prefix = self.0.clone();
        prefix.push(b'/');
        prefix
    }

    /// The lossless text form: UTF-8 as is, each backslash as `\\`, each byte of an invalid
    /// UTF-8 sequence as `\xNN`.
    pub fn to_text(&self) -> String {
        escape(&self.0)
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl fmt::Debug for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_text())
    }
}

fn validate(bytes: &[u8]) -> Result<(), PathError> {
    if bytes.is_empty() {
        return Err(PathError::Empty);
    }
    if bytes[0] == b'/' {
        return Err(PathError::Absolute);
    }
    if bytes.contains(&0) {
        return Err(PathError::Nul);
    }
    let mut components = bytes.split(|&b| b == b'/');
    if components.any(|c| c.is_empty() || c == b"." || c == b"..") {
        return Err(PathError::BadComponent);
    }
    let first = bytes.split(|&b| b == b'/').next().unwrap_or_default();
    if is_git_alias(first) {
        return Err(PathError::Git);
    }
    Ok(())
}

/// `.git` and the names a case-insensitive or NTFS-like file system would treat as it.
fn is_git_alias(name: &[u8]) -> bool {
    let trimmed = name
        .iter()
        .rposition(|&b| b != b'.' && b != b' ')
        .map_or(&name[..0], |end| &name[..=end]);
    trimmed.eq_ignore_ascii_case(b".git") || trimmed.eq_ignore_ascii_case(b"git~1")
}

fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for ch in chunk.valid().chars() {
            match ch {
                '\\' => out.push_str("\\\\"),
                _ => out.push(ch),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

fn unescape(text: &str) -> Result<Vec<u8>, PathError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = text
                    .get(i + 2..i + 4)
                    .ok_or_else(|| PathError::BadEscape(text.to_string()))?;
                let byte = u8::from_str_radix(hex, 16).map_err(|_| PathError::BadEscape(text.to_string()))?;
                out.push(byte);
                i += 4;
            }
            _ => return Err(PathError::BadEscape(text.to_string())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips_non_utf8_and_backslashes() {
        for raw in [&b"caf\xe9.txt"[..], b"a\\b", b"plain/dir/file.rs", b"\xff\xfe/x"] {
            let path = RelPath::from_fs_bytes(raw.to_vec());
            let parsed = RelPath::parse(&path.to_text()).expect("parses");
            assert_eq!(parsed.as_bytes(), raw);
        }
        assert_eq!(RelPath::from_fs_bytes(b"caf\xe9".to_vec()).to_text(), "caf\\xe9");
    }

    #[test]
    fn client_paths_that_could_escape_are_refused() {
        assert_eq!(RelPath::parse(""), Err(PathError::Empty));
        assert_eq!(RelPath::parse("/etc/passwd"), Err(PathError::Absolute));
        assert_eq!(RelPath::parse("a/../../x"), Err(PathError::BadComponent));
        assert_eq!(RelPath::parse("a//b"), Err(PathError::BadComponent));
        assert_eq!(RelPath::parse("./a"), Err(PathError::BadComponent));
        assert_eq!(RelPath::parse("a\\x00b"), Err(PathError::Nul));
        assert_eq!(RelPath::parse(".git/config"), Err(PathError::Git));
        assert_eq!(RelPath::parse(".GIT./hooks"), Err(PathError::Git));
        assert!(RelPath::parse("src/.gitignore").is_ok());
    }

    #[test]
    fn ancestry_is_by_component() {
        let dir = RelPath::from_fs_bytes(b"a/b".to_vec());
        assert!(RelPath::from_fs_bytes(b"a/b/c".to_vec()).starts_with(&dir));
        assert!(!RelPath::from_fs_bytes(b"a/bc".to_vec()).starts_with(&dir));
        assert_eq!(dir.parent(), Some(RelPath::from_fs_bytes(b"a".to_vec())));
        assert_eq!(dir.file_name(), b"b");
    }
}
