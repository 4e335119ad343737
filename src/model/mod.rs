//! The words of docs/guarantees.md ("Words") as types: a version's state, its origin, stat data.

pub mod answer;

/// What a path was, in one recorded version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Absent,
    File(FileState),
    Symlink {
        target: Vec<u8>,
    },
    Dir,
    /// Not tracked from this version on: an ignore rule hid it. What it held
    /// then was never recorded, so a rollback to such a moment leaves the path alone.
    Untracked,
}

/// A regular file: what is known of its content, its size and its permission bits.
///
/// `mode` is the permission bits (`st_mode & 0o7777`); `None` for a version recorded before
/// they were, of which only the executable bit is known. Such a version equals any file of the
/// same content whose executable bit is the same (nothing tells their bits apart), and a
/// rollback to it keeps the bits the file has, setting or clearing only the executable ones
/// (`fs::ops::file_mode`). Where `mode` is known, `executable` is `mode & 0o111 != 0`.
#[derive(Clone, Debug, Eq)]
pub struct FileState {
    pub content: Content,
    pub size: u64,
    pub executable: bool,
    pub mode: Option<u16>,
}

/// What is known of a file's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// Stored in the blob store under its hash.
    Stored(Hash),
    /// Larger than `max_file_size`: known by its hash, its content not stored (G9).
    TooLarge(Hash),
    /// The daemon could not read it (another owner's mode 0600, mode 000): nothing is known
    /// of it but its size and mode, and it cannot be restored.
    Unreadable,
}

/// The permission bits of a `st_mode`: what a version records of them.
pub const PERMISSION_BITS: u32 = 0o7777;

/// A `st_mode`'s permission bits (`PERMISSION_BITS`: twelve, so they fit a `u16`).
pub fn permission_bits(st_mode: u32) -> u16 {
    (st_mode & PERMISSION_BITS) as u16
}

impl FileState {
    /// A regular file whose content could not be read: only what `stat` says (`st_mode` as
    /// `stat` gives it).
    pub fn unreadable(size: u64, st_mode: u32) -> Self {
        Self {
            content: Content::Unreadable,
            size,
            executable: st_mode & 0o111 != 0,
            mode: Some(permission_bits(st_mode)),
        }
    }

    /// Its content's hash, when the daemon read it (stored or not).
    pub fn hash(&self) -> Option<Hash> {
        match self.content {
            Content::Stored(hash) | Content::TooLarge(hash) => Some(hash),
            Content::Unreadable => None,
        }
    }

    /// The hash its content is stored under: `None` when it is not stored.
    pub fn stored(&self) -> Option<Hash> {
        match self.content {
            Content::Stored(hash) => Some(hash),
            Content::TooLarge(_) | Content::Unreadable => None,
        }
    }

    pub fn is_too_large(&self) -> bool {
        matches!(self.content, Content::TooLarge(_))
    }

    pub fn is_unreadable(&self) -> bool {
        matches!(self.content, Content::Unreadable)
    }

    /// The permission bits as answers show them, in octal ("0600"); `None` when not recorded.
    pub fn mode_text(&self) -> Option<String> {
        self.mode.map(|mode| format!("{mode:04o}"))
    }

    /// The same permission bits as far as both know them: equal bits, or (one of them recorded
    /// before bits were) the same executable bit.
    pub fn same_mode(&self, other: &Self) -> bool {
        match (self.mode, other.mode) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => self.executable == other.executable,
        }
    }
}

/// Equal content and equal permission bits (`FileState::same_mode`: a version that knows only
/// the executable bit equals any file with the same one).
impl PartialEq for FileState {
    fn eq(&self, other: &Self) -> bool {
        self.content == other.content && self.size == other.size && self.same_mode(other)
    }
}

impl State {
    pub fn kind(&self) -> Kind {
        match self {
            Self::Absent => Kind::Absent,
            Self::File(_) => Kind::File,
            Self::Symlink { .. } => Kind::Symlink,
            Self::Dir => Kind::Dir,
            Self::Untracked => Kind::Untracked,
        }
    }

    /// Known to exist: an untracked path is not known to.
    pub fn is_present(&self) -> bool {
        !matches!(self, Self::Absent | Self::Untracked)
    }

    pub fn is_untracked(&self) -> bool {
        matches!(self, Self::Untracked)
    }

    pub fn is_dir(&self) -> bool {
        matches!(self, Self::Dir)
    }

    pub fn is_file(&self) -> bool {
        matches!(self, Self::File(_))
    }

    /// A file the daemon could not read (`Content::Unreadable`).
    pub fn is_unreadable(&self) -> bool {
        matches!(self, Self::File(f) if f.is_unreadable())
    }
}

/// An enum stored as its number and answered as its name: `ALL`, `from_i64`, `name`,
/// `from_name`, and serde as the name (a wrong one "is not" `$what`).
macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $ty:ident ($what:literal) {
        $($(#[$vmeta:meta])* $variant:ident = $num:literal => $name:literal,)+
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(into = "&'static str", try_from = "String")]
        $vis enum $ty {
            $($(#[$vmeta])* $variant = $num,)+
        }

        impl $ty {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn from_i64(value: i64) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| *v as i64 == value)
            }

            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }

            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }
        }

        impl From<$ty> for &'static str {
            fn from(value: $ty) -> Self {
                value.name()
            }
        }

        impl TryFrom<String> for $ty {
            type Error = String;

            fn try_from(name: String) -> std::result::Result<Self, String> {
                Self::from_name(&name).ok_or_else(|| format!("{name:?} is not {}", $what))
            }
        }
    };
}
pub(crate) use named_enum;

named_enum! {
    /// What kind of thing a path is in one version; in answers, its `name`.
    pub enum Kind ("a kind of path") {
        Absent = 0 => "absent",
        File = 1 => "file",
        Symlink = 2 => "symlink",
        Dir = 3 => "dir",
        Untracked = 4 => "untracked",
    }
}

named_enum! {
    /// What a rollback-like operation is (docs/guarantees.md): a rollback (to a boundary or a
    /// time), an undo or a redo. Its `name` is how the journal and the answers say it.
    pub enum RollbackKind ("rollback, undo or redo") {
        Rollback = 0 => "rollback",
        Undo = 1 => "undo",
        Redo = 2 => "redo",
    }
}

impl std::fmt::Display for RollbackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

named_enum! {
    /// Who made a version (docs/tracking.md); in answers, its `name`.
    pub enum Origin ("an origin") {
        /// While exactly one turn was open.
        Turn = 0 => "turn",
        /// While turns of several sessions were open.
        Ambiguous = 1 => "ambiguous",
        /// While no turn was open: the user, an editor, another process.
        Outside = 2 => "outside",
        /// Found at start-up: changed while the daemon was not running.
        Offline = 3 => "offline",
        /// Written by filewatchd itself.
        Rollback = 4 => "rollback",
    }
}

named_enum! {
    /// How a version's owner was decided (docs/tracking.md, "Whose a write is"); in answers,
    /// its `name`. Stored beside the origin; versions older than schema 17 have none.
    pub enum Decided ("a way an owner is decided") {
        /// The open turn (or turns): the agent reports no tool calls.
        TurnWindow = 0 => "turn_window",
        /// Inside the one tool call open then.
        ToolCall = 1 => "tool_call",
        /// The file the open edit tool names.
        EditTool = 2 => "edit_tool",
        /// Turns were open, none of their tool calls: the person's.
        BetweenCalls = 3 => "between_tool_calls",
        /// The writing process descends from one session's agent (fanotify).
        Process = 4 => "process",
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
    #[cfg(unix)]
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

    #[allow(clippy::unnecessary_cast)] // the OS's field types differ (an alias on Unix, i64 on Windows)
    pub fn from_rustix(stat: &crate::platform::sys::fs::Stat) -> Self {
        Self {
            dev: crate::platform::device(stat.st_dev),
            ino: stat.st_ino,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns: stat.st_mtime * 1_000_000_000 + stat.st_mtime_nsec as i64,
            ctime_ns: stat.st_ctime * 1_000_000_000 + stat.st_ctime_nsec as i64,
            mode: crate::platform::mode_bits(stat.st_mode),
        }
    }
}

impl StatKey {
    /// A 128-bit digest of the whole key, for lists that hold a million of them only to ask
    /// "is it still the same?" (a walk's entries: 16 bytes instead of 48), within one process
    /// (its keys are drawn at random for each). Never zero.
    pub fn print(&self) -> StatPrint {
        let mut bytes = [0u8; 44];
        for (at, field) in [self.dev, self.ino, self.size].into_iter().enumerate() {
            bytes[at * 8..at * 8 + 8].copy_from_slice(&field.to_le_bytes());
        }
        bytes[24..32].copy_from_slice(&self.mtime_ns.to_le_bytes());
        bytes[32..40].copy_from_slice(&self.ctime_ns.to_le_bytes());
        bytes[40..44].copy_from_slice(&self.mode.to_le_bytes());
        // Two SipHashes with keys drawn once a process: a print never leaves the process, and
        // a restart makes two million of them (a BLAKE3 hash cost three times as much).
        static KEYS: std::sync::OnceLock<[std::hash::RandomState; 2]> = std::sync::OnceLock::new();
        let keys = KEYS.get_or_init(|| [std::hash::RandomState::new(), std::hash::RandomState::new()]);
        let word = |at: usize| std::hash::BuildHasher::hash_one(&keys[at], bytes);
        StatPrint(std::num::NonZeroU64::MIN | word(0), word(1))
    }
}

/// `StatKey::print`: equal keys give equal prints; different keys, different prints but
/// with a chance of 2^-127.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatPrint(std::num::NonZeroU64, u64);

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

/// Parses an RFC 3339 time (`Z`, `+HH:MM` or `-HH:MM`; fractional seconds optional) into
/// milliseconds since the epoch. A time without an offset is taken as UTC.
pub fn parse_time(text: &str) -> Result<i64, String> {
    let bad = |why: &str| format!("{text:?} is not an RFC 3339 time like 2026-11-30T10:00:00Z ({why})");
    let trimmed = text.trim();
    let (base, offset_minutes) = split_offset(trimmed).ok_or_else(|| bad("bad UTC offset"))?;
    let time = humantime::parse_rfc3339_weak(base).map_err(|e| bad(&e.to_string()))?;
    let ms = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| bad("before 1970"))?
        .as_millis();
    let ms = i64::try_from(ms).map_err(|_| bad("too far in the future"))?;
    Ok(ms - offset_minutes * 60_000)
}

/// Splits `...+HH:MM` / `...-HH:MM` / `...Z` into the local time and its offset in minutes.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    if let Some(base) = text.strip_suffix('Z').or_else(|| text.strip_suffix('z')) {
        return Some((base, 0));
    }
    let bytes = text.as_bytes();
    let Some(sign_at) = bytes.len().checked_sub(6) else {
        return Some((text, 0));
    };
    let sign = match bytes[sign_at] {
        b'+' => 1,
        b'-' => -1,
        _ => return Some((text, 0)),
    };
    let tail = &text[sign_at + 1..];
    let (hours, minutes) = tail.split_once(':')?;
    let (hours, minutes): (i64, i64) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some((&text[..sign_at], sign * (hours * 60 + minutes)))
}

/// blake3 of a blob's raw bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    pub fn of(bytes: &[u8]) -> Self {
        Self(*blake3::hash(bytes).as_bytes())
    }

    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }

    pub fn to_hex(self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }
}

/// Written as its hex, as the API shows it (`crate::git::change::IndexAt` in the journal).
impl serde::Serialize for Hash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Hash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hex = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        blake3::Hash::from_hex(hex.as_bytes())
            .map(|h| Self(*h.as_bytes()))
            .map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex()[..16])
    }
}

/// A stat taken this close after the file's mtime cannot prove the file unchanged: a write in
/// the same timestamp tick would leave it equal ("racy git"). Such entries are re-read.
pub const RACY_NS: i64 = 100_000_000;

#[cfg(test)]
mod tests {
    use super::{Kind, RollbackKind, parse_time};

    #[test]
    fn words_are_written_and_read_as_their_names() {
        for kind in [RollbackKind::Rollback, RollbackKind::Undo, RollbackKind::Redo] {
            let json = serde_json::to_value(kind).expect("serialize");
            assert_eq!(json, serde_json::json!(kind.name()));
            assert_eq!(serde_json::from_value::<RollbackKind>(json).ok(), Some(kind));
        }
        for kind in (0..=4).filter_map(Kind::from_i64) {
            let json = serde_json::to_value(kind).expect("serialize");
            assert_eq!(json, serde_json::json!(kind.name()));
            assert_eq!(serde_json::from_value::<Kind>(json).ok(), Some(kind));
        }
        assert!(serde_json::from_value::<RollbackKind>(serde_json::json!("restore")).is_err());
    }

    #[test]
    fn offsets_name_the_same_instant() {
        let utc = parse_time("2026-11-30T10:31:48.086Z").expect("utc");
        assert_eq!(parse_time("2026-11-30T11:31:48.086+01:00"), Ok(utc));
        assert_eq!(parse_time("2026-11-30T05:01:48.086-05:30"), Ok(utc));
        assert_eq!(parse_time("2026-11-30T10:31:48.086+00:00"), Ok(utc));
        assert_eq!(parse_time("2026-11-30T11:31:48+01:00"), Ok(utc - 86));
        assert!(parse_time("2026-11-30T10:31:48+25:00").is_err());
        assert!(parse_time("yesterday").is_err());
    }
}

/// Test fixtures shared by the unit tests of several modules.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Content, FileState, Hash, State};
    use crate::paths::RelPath;

    /// A workspace-relative path from its text (a valid one: the tests' own).
    pub fn path(text: &str) -> RelPath {
        RelPath::from_fs_bytes(text.as_bytes().to_vec())
    }

    /// A small readable regular file whose content hash is `[byte; 32]`.
    pub fn file(byte: u8) -> State {
        State::File(FileState {
            content: Content::Stored(Hash([byte; 32])),
            size: 1,
            executable: false,
            mode: Some(0o644),
        })
    }
}
