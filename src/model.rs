//! The words of PRODUCT.md section 2 as types: a version's state, its origin, stat data.

use crate::store::blobs::Hash;

/// What a path was, in one recorded version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Absent,
    File(FileState),
    Symlink { target: Vec<u8> },
    Dir,
}

/// A regular file: its content and executable bit. A file over `max_file_size` is known by
/// size and hash only (`too_large`), its content is not stored (G9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileState {
    pub hash: Hash,
    pub size: u64,
    pub executable: bool,
    pub too_large: bool,
}

impl State {
    pub fn kind(&self) -> Kind {
        match self {
            Self::Absent => Kind::Absent,
            Self::File(_) => Kind::File,
            Self::Symlink { .. } => Kind::Symlink,
            Self::Dir => Kind::Dir,
        }
    }

    pub fn is_present(&self) -> bool {
        !matches!(self, Self::Absent)
    }

    pub fn is_dir(&self) -> bool {
        matches!(self, Self::Dir)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Absent = 0,
    File = 1,
    Symlink = 2,
    Dir = 3,
}

impl Kind {
    pub fn from_i64(value: i64) -> Option<Self> {
        match value {
            0 => Some(Self::Absent),
            1 => Some(Self::File),
            2 => Some(Self::Symlink),
            3 => Some(Self::Dir),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Absent => "absent",
            Self::File => "file",
            Self::Symlink => "symlink",
            Self::Dir => "dir",
        }
    }
}

/// Who made a version (PRODUCT.md 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// While exactly one turn was open.
    Turn = 0,
    /// While turns of several sessions were open.
    Ambiguous = 1,
    /// While no turn was open: the user, an editor, another process.
    Outside = 2,
    /// Found at start-up: changed while the daemon was not running.
    Offline = 3,
    /// Written by filewatchd itself.
    Rollback = 4,
}

impl Origin {
    pub fn from_i64(value: i64) -> Option<Self> {
        match value {
            0 => Some(Self::Turn),
            1 => Some(Self::Ambiguous),
            2 => Some(Self::Outside),
            3 => Some(Self::Offline),
            4 => Some(Self::Rollback),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::Ambiguous => "ambiguous",
            Self::Outside => "outside",
            Self::Offline => "offline",
            Self::Rollback => "rollback",
        }
    }
}

/// The stat data a version was read with: the fast path that tells a restart or a rescan
/// which files may have changed without hashing them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatKey {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub mode: u32,
}

impl StatKey {
    pub fn from_metadata(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
            mode: meta.mode(),
        }
    }

    pub fn from_rustix(stat: &rustix::fs::Stat) -> Self {
        Self {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns: stat.st_mtime * 1_000_000_000 + stat.st_mtime_nsec as i64,
            ctime_ns: stat.st_ctime * 1_000_000_000 + stat.st_ctime_nsec as i64,
            mode: stat.st_mode,
        }
    }
}

/// Milliseconds since the Unix epoch, the unit of every stored time.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// RFC 3339 text of a stored time.
pub fn format_time(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}
