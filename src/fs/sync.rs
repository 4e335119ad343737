//! Many changes made durable in one go: one `syncfs(2)` of the workspace's file system
//! instead of an `fsync(2)` per file and per directory. It writes back every dirty file,
//! inode and directory block of that file system and flushes the disk's cache, so a rollback's
//! temp files are durable before the first rename makes one visible at the cost of
//! one flush instead of thousands; a second one makes the renames durable.
//!
//! `syncfs` reports a write-back error of its file system that happened since its descriptor
//! was opened (Linux 5.8 and later; before, it always succeeded): the descriptor is opened
//! before the first write it covers, and on older kernels nothing is batched.
//!
//! On FUSE, `syncfs` is not durable: the kernel writes its own dirty pages to the server but
//! asks it to sync nothing (only virtiofs gets `FUSE_SYNCFS`), so a server that caches writes
//! (LazyFS, sshfs, rclone's VFS cache) keeps them in memory through a power cut, and a file
//! renamed into place is found empty afterwards (tests/power_loss.rs). There nothing is
//! batched either: each file and directory gets its own `fsync`, which the server does get.

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
    /// Opens the root for a batch. `None` when this kernel's `syncfs` would hide an error,
    /// the root's file system would not make it durable (FUSE), or the root cannot be opened
    /// for it: each file is then fsynced on its own.
    pub fn open(root: &RootDir) -> Option<Self> {
        if !kernel_reports_errors() {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let fd = rustix::fs::openat2(root.fd(), ".", flags, Mode::empty(), resolve).ok()?;
        if !syncfs_is_durable(rustix::fs::fstatfs(&fd).ok()?.f_type) {
            return None;
        }
        let dev = rustix::fs::fstat(&fd).ok()?.st_dev;
        Some(Self { fd, dev })
    }

    /// Every change to the file system so far is durable; an error says some write-back since
    /// this was opened failed (which one, it does not say).
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::syncfs(&self.fd).map_err(io::Error::from)
    }
}

/// Whether `syncfs` makes a file system of this `statfs` type durable.
fn syncfs_is_durable(f_type: i64) -> bool {
    f_type != super::fuse::FUSE_SUPER_MAGIC
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
    use super::{parse_release, syncfs_is_durable};

    #[test]
    fn kernel_releases_are_read_by_major_and_minor() {
        assert_eq!(parse_release("6.18.44\n"), Some((6, 18)));
        assert_eq!(parse_release("5.8.0-63-generic"), Some((5, 8)));
        assert_eq!(parse_release("5.10"), Some((5, 10)));
        assert!(parse_release("5.10") > Some((5, 8)) && parse_release("5.7.9") < Some((5, 8)));
        assert_eq!(parse_release("garbage"), None);
    }

    #[test]
    fn only_fuse_is_left_out_of_the_batch() {
        assert!(!syncfs_is_durable(0x6573_5546), "fuse");
        assert!(syncfs_is_durable(0xEF53), "ext4");
        assert!(syncfs_is_durable(0x794C_7630), "overlay");
    }
}
