//! Paths longer than the kernel takes in one call (`PATH_MAX`, 4096 bytes): a tree 100,000
//! directories deep is still a tree the user can write in. Such a path is opened a piece at a
//! time, each piece (under `PIECE` bytes, cut at a `/`) from the directory the one before
//! opened, with the same flags: beneath the root and without following a symlink, each piece
//! confined as the whole path would be.

use crate::platform::sys::{AsFd, OwnedFd};
use std::path::Path;

use crate::platform::sys::fs::{Mode, OFlags};
use crate::platform::sys::io::Errno;

use crate::platform;

/// The longest piece opened in one call: well under `PATH_MAX`.
const PIECE: usize = 3072;

/// The flags a directory on the way is held open with: `O_PATH` where there is one.
fn through() -> OFlags {
    platform::HANDLE.unwrap_or(OFlags::RDONLY) | OFlags::DIRECTORY | OFlags::CLOEXEC
}

/// `platform::open_beneath(dir, path, flags)` for a `path` of any length: beneath `dir`,
/// following no symlink.
pub fn open_beneath(dir: impl AsFd, path: &Path, flags: OFlags) -> crate::platform::sys::io::Result<OwnedFd> {
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.len() < PIECE {
        return platform::open_beneath(dir.as_fd(), path, flags);
    }
    let (head, rest) = split(bytes)?;
    let held = platform::open_beneath(dir.as_fd(), as_path(head), through())?;
    open_beneath(&held, as_path(rest), flags)
}

/// `open(path, flags)` of an absolute path of any length: the first piece as `open` takes it
/// (what lies above the workspace is the user's), the rest each from the directory before it
/// with `O_NOFOLLOW`, so nothing beneath follows a symlink the first piece would not.
pub fn open(path: &Path, flags: OFlags) -> crate::platform::sys::io::Result<OwnedFd> {
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.len() < PIECE {
        return crate::platform::sys::fs::open(path, flags, Mode::empty());
    }
    let (head, rest) = split(bytes)?;
    let held = crate::platform::sys::fs::open(as_path(head), through() | OFlags::NOFOLLOW, Mode::empty())?;
    open_beneath(&held, as_path(rest), flags)
}

/// The path cut at its last `/` before `PIECE` bytes: a head to open and the rest.
fn split(bytes: &[u8]) -> crate::platform::sys::io::Result<(&[u8], &[u8])> {
    let cut = bytes[..PIECE]
        .iter()
        .rposition(|&b| b == b'/')
        .filter(|&at| at > 0);
    // One name longer than a piece is longer than any file system allows (255 bytes).
    let cut = cut.ok_or(Errno::NAMETOOLONG)?;
    Ok((&bytes[..cut], &bytes[cut + 1..]))
}

fn as_path(bytes: &[u8]) -> &Path {
    Path::new(crate::platform::os_str(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file 300 directories of 20 bytes deep (over 6,000 bytes): opened by its path from
    /// the root's descriptor, and by its absolute path; a symlink deep down is still refused.
    #[test]
    fn a_path_past_path_max_opens_a_piece_at_a_time() {
        let root = tempfile::tempdir().expect("tempdir");
        let name = "d".repeat(19);
        let rel: std::path::PathBuf = std::iter::repeat_n(name.as_str(), 300).collect();
        let dir =
            crate::platform::sys::fs::open(root.path(), OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
                .expect("open");
        let mut at = crate::platform::sys::fs::open(root.path(), through(), Mode::empty()).expect("root");
        for _ in 0..300 {
            crate::platform::sys::fs::mkdirat(&at, name.as_str(), Mode::from_raw_mode(0o755))
                .expect("mkdirat");
            at = crate::platform::sys::fs::openat(&at, name.as_str(), through(), Mode::empty())
                .expect("openat");
        }
        let made = crate::platform::sys::fs::openat(
            &at,
            "f",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        );
        made.expect("create the deep file");
        let file = rel.join("f");
        assert!(rel.as_os_str().len() > 4096);
        assert!(open_beneath(&dir, &file, OFlags::RDONLY).is_ok());
        assert!(open(&root.path().join(&file), OFlags::RDONLY).is_ok());
        crate::platform::sys::fs::symlinkat("/etc", &at, "link").expect("symlink");
        let through = rel.join("link/passwd");
        assert_eq!(
            open_beneath(&dir, &through, OFlags::RDONLY).err(),
            Some(Errno::LOOP)
        );
    }
}
