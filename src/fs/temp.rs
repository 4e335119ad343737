//! The names of a rollback's temp files.

/// The names of one rollback's temp files (CRASH-06, issue 14.3 and 14.9): the journal names
/// each (its rollback's random tag and the step's `ord`) before it is created, it is created
/// with `O_EXCL` (a file of that name is someone else's and is never removed), and capture
/// never records one of the tags it knows as a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempNames {
    pub tag: String,
    /// A revert's temps, beside the forward ones of the same steps.
    pub revert: bool,
}

pub const TEMP_PREFIX: &str = ".filewatchd-tmp-";

impl TempNames {
    /// A new random tag: no user's file and no other rollback has this name.
    pub fn random() -> Self {
        let mut bytes = [0u8; 8];
        let filled = rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty());
        if filled.is_err() {
            // getrandom(2) cannot fail on a supported kernel; the time is unique enough then.
            bytes = crate::model::now_ns().to_le_bytes();
        }
        let tag = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Self { tag, revert: false }
    }

    /// The names a journaled rollback used: its tag, or (journaled before tags) its id.
    pub fn of_rollback(id: i64, tag: Option<String>) -> Self {
        Self {
            tag: tag.unwrap_or_else(|| id.to_string()),
            revert: false,
        }
    }

    pub fn reverting(&self) -> Self {
        Self {
            tag: self.tag.clone(),
            revert: true,
        }
    }

    pub fn name(&self, ord: i64) -> String {
        let suffix = if self.revert { "r" } else { "" };
        format!("{TEMP_PREFIX}{}-{ord}{suffix}", self.tag)
    }

    /// The tag of a file name that is one of ours (given the tags we know), if it is.
    pub fn tag_of(name: &[u8]) -> Option<&str> {
        let rest = name.strip_prefix(TEMP_PREFIX.as_bytes())?;
        let rest = std::str::from_utf8(rest).ok()?;
        rest.rsplit_once('-').map(|(tag, _)| tag)
    }

    /// Removes every file beneath `root` named with this rollback's tag, forward or revert
    /// (they are ours: the tag is random), never following a symlink; false when one could
    /// not be removed.
    pub fn sweep(&self, root: &std::path::Path) -> bool {
        // Only a random tag makes a name ours alone (older rollbacks' tags are their ids).
        let random = self.tag.len() == 16 && self.tag.bytes().all(|b| b.is_ascii_hexdigit());
        if !random {
            return true;
        }
        let prefix = format!("{TEMP_PREFIX}{}-", self.tag);
        let mut all = true;
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            let Ok(listing) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in listing.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if entry
                    .file_name()
                    .as_encoded_bytes()
                    .starts_with(prefix.as_bytes())
                {
                    all &= std::fs::remove_file(entry.path()).is_ok();
                }
            }
        }
        all
    }
}
