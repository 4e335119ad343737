//! Many changes made durable in one go: one `syncfs(2)` of the workspace's file system
//! instead of an `fsync(2)` per file and per directory. It writes back every dirty file,
//! inode and directory block of that file system and flushes the disk's cache, so a rollback's
//! temp files are durable before the first rename makes one visible (CRASH-02) at the cost of
//! one flush instead of thousands; a second one makes the renames durable.
//!
//! `syncfs` reports a write-back error of its file system that happened since its descriptor
//! was opened (Linux 5.8 and later; before, it always succeeded): the descriptor is opened
//! before the first write it covers, and on older kernels nothing is batched.

use std::io;
use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags, ResolveFlags};

use super::read::RootDir;

/// The first kernel whose `syncfs` reports write-back errors.
const REPORTS_ERRORS_SINCE: (u32, u32) = (5, 8);

/// The workspace root's file system, opened to be synced once for a whole batch of writes.
pub struct FsSync {
    fd: OwnedFd,
    /// Its device: a file elsewhere (a mount inside the workspace) is not covered.
    pub dev: u64,
}

impl FsSync {
    /// Opens the root for a batch. `None` when this kernel's `syncfs` would hide an error, or
    /// the root cannot be opened for it: each file is then fsynced on its own, as before.
    pub fn open(root: &RootDir) -> Option<Self> {
        if !kernel_reports_errors() {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let fd = rustix::fs::openat2(root.fd(), ".", flags, Mode::empty(), resolve).ok()?;
        let dev = rustix::fs::fstat(&fd).ok()?.st_dev;
        Some(Self { fd, dev })
    }

    /// Every change to the file system so far is durable; an error says some write-back since
    /// this was opened failed (which one, it does not say).
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::syncfs(&self.fd).map_err(io::Error::from)
    }
}

fn kernel_reports_errors() -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    parse_release(&release).is_some_and(|version| version >= REPORTS_ERRORS_SINCE)
}

/// `6.18.44-foo` → (6, 18).
fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::parse_release;

    #[test]
    fn kernel_releases_are_read_by_major_and_minor() {
        assert_eq!(parse_release("6.18.44\n"), Some((6, 18)));
        assert_eq!(parse_release("5.8.0-63-generic"), Some((5, 8)));
        assert_eq!(parse_release("5.10"), Some((5, 10)));
        assert!(parse_release("5.10") > Some((5, 8)) && parse_release("5.7.9") < Some((5, 8)));
        assert_eq!(parse_release("garbage"), None);
    }
}
