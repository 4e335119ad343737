//! The names of a rollback's temp files.

/// The names of one rollback's temp files: the journal names
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
        let filled = crate::platform::random_bytes(&mut bytes);
        if filled.is_err() {
            // The kernel's random source cannot fail on a supported system; the time is unique enough then.
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

    /// What an answer says of this rollback's temp files that could not be removed.
    pub fn left_note(&self) -> String {
        format!(
            "temp files named {TEMP_PREFIX}{}-* could not be removed; they are never recorded as versions, and each start of the daemon removes them once it can",
            self.tag
        )
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
    /// (they are ours: the tag is random); false when one could not be removed. Every
    /// directory is opened from its parent's descriptor by its one-component name with
    /// `O_NOFOLLOW`, so a symlink swapped in anywhere is never followed: the walk stays in
    /// the directories that are beneath the root now.
    pub fn sweep(&self, root: &super::read::RootDir) -> bool {
        // Only a random tag makes a name ours alone (older rollbacks' tags are their ids).
        let random = self.tag.len() == 16 && self.tag.bytes().all(|b| b.is_ascii_hexdigit());
        if !random {
            return true;
        }
        let prefix = format!("{TEMP_PREFIX}{}-", self.tag);
        let Ok(top) = open_dir(root.fd().as_fd(), c".") else {
            return false;
        };
        let mut all = true;
        let mut dirs = vec![top];
        while let Some(dir) = dirs.pop() {
            all &= sweep_dir(&dir, prefix.as_bytes(), &mut dirs);
        }
        all
    }
}

use crate::platform::sys::{AsFd, BorrowedFd, OwnedFd};

use crate::platform::sys::fs::{AtFlags, FileType, Mode, OFlags};

fn open_dir(dir: BorrowedFd<'_>, name: &std::ffi::CStr) -> crate::platform::sys::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    crate::platform::sys::fs::openat(dir, name, flags, Mode::empty())
}

/// One directory of the sweep: our files in it removed, its subdirectories queued (opened
/// now, never through a symlink). False when one of ours could not be removed.
fn sweep_dir(dir: &OwnedFd, prefix: &[u8], next: &mut Vec<OwnedFd>) -> bool {
    // Gone or unreadable meanwhile: nothing of ours can be removed from it anyway.
    let Ok(listing) = crate::platform::sys::fs::Dir::read_from(dir) else {
        return true;
    };
    let mut all = true;
    for entry in listing.flatten() {
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        let kind = entry.file_type();
        if matches!(kind, FileType::Directory | FileType::Unknown)
            && let Ok(sub) = open_dir(dir.as_fd(), name)
        {
            next.push(sub);
            continue;
        }
        if kind != FileType::Directory && name.to_bytes().starts_with(prefix) {
            let removed = crate::platform::sys::fs::unlinkat(dir, name, AtFlags::empty());
            all &= matches!(removed, Ok(()) | Err(crate::platform::sys::io::Errno::NOENT));
        }
    }
    all
}
