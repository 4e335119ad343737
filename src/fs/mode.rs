//! Which step a rollback installs a file with, per file system (G13). Most local
//! file systems swap a file in (`renameat2(RENAME_EXCHANGE)`, mode `exchange`); FUSE (LazyFS,
//! sshfs), NFS and others refuse that call (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`) and refuse
//! `RENAME_NOREPLACE` too. There the install is mode `rename`: the replaced file kept by a
//! hard link, a plain `rename`, then what it replaced compared (`restore::apply::fallback`),
//! and a create made by `link` (which never clobbers).
//!
//! The mode is found once per file system (by `st_dev`) and kept for the daemon's life: the
//! first exchange there is the probe. One that goes through confirms `exchange`; a refusal
//! (of an exchange or a no-replace rename, which change nothing when refused) switches that
//! file system to `rename` before the step goes on, so the rollback does not fail, and
//! neither the rest of it nor its put-back calls it again.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::platform::sys::io::Errno;

/// How a file system's files are installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallMode {
    /// `RENAME_EXCHANGE`, `RENAME_NOREPLACE`.
    Exchange,
    /// `link` + plain `rename`.
    Rename,
}

impl InstallMode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Exchange => "exchange",
            Self::Rename => "rename",
        }
    }
}

/// The modes found so far, by `st_dev`.
static MODES: Mutex<BTreeMap<u64, InstallMode>> = Mutex::new(BTreeMap::new());

fn modes() -> std::sync::MutexGuard<'static, BTreeMap<u64, InstallMode>> {
    // A panic while holding it left a map of plain values: still right.
    MODES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether an error is the file system refusing the call itself (not this path's state).
pub fn refused(err: &std::io::Error) -> bool {
    matches!(
        err.raw_os_error().map(Errno::from_raw_os_error),
        Some(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP)
    )
}

/// The mode found for `dev`, if it was.
pub fn known(dev: u64) -> Option<InstallMode> {
    modes().get(&dev).copied()
}

/// `dev` refused an exchange or a no-replace rename: `rename` from now on.
pub fn fall_back(dev: u64) {
    if modes().insert(dev, InstallMode::Rename) != Some(InstallMode::Rename) {
        tracing::warn!(
            dev,
            "this file system refuses RENAME_EXCHANGE: installing by rename"
        );
    }
}

/// The mode `dev` gets: the one found, else `exchange` (the strongest step), until the
/// file system refuses it; `rename` where the OS has no exchange (`platform::EXCHANGE`).
pub fn of(dev: u64) -> InstallMode {
    if !crate::platform::EXCHANGE {
        return InstallMode::Rename;
    }
    known(dev).unwrap_or(InstallMode::Exchange)
}

/// An exchange went through on `dev`: that is its mode.
pub fn exchanged(dev: u64) {
    modes().entry(dev).or_insert_with(|| {
        tracing::debug!(dev, "this file system has RENAME_EXCHANGE");
        InstallMode::Exchange
    });
}

/// The name of a file system type (`statfs` `f_type`).
pub fn type_name(f_type: i64) -> String {
    let name = match f_type {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58F6 => "ramfs",
        0x794C_7630 => "overlay",
        0x6573_5546 => "fuse",
        0x6969 => "nfs",
        0xF2F5_2010 => "f2fs",
        0x2FC1_2FC1 => "zfs",
        0xCA45_1A4E => "bcachefs",
        0xFF53_4D42 => "cifs",
        0xFE53_4D42 => "smb2",
        0x0102_1997 => "9p",
        0x00C3_6400 => "ceph",
        0x4D44 => "vfat",
        0x2011_BAB0 => "exfat",
        0x7366_746E => "ntfs3",
        _ => return format!("0x{f_type:x}"),
    };
    name.to_string()
}

/// What a file system type gets before a rollback has probed it: `exchange` on those known
/// to have it, else `rename`.
fn expected(type_name: &str) -> InstallMode {
    if !crate::platform::EXCHANGE {
        return InstallMode::Rename;
    }
    match type_name {
        "ext4" | "xfs" | "btrfs" | "tmpfs" | "ramfs" | "overlay" | "f2fs" | "bcachefs" => {
            InstallMode::Exchange
        }
        _ => InstallMode::Rename,
    }
}

/// The file system holding a path and how a rollback installs files there, as `status` says it.
pub struct Described {
    /// Its type's name (`ext4`, `fuse`, ...).
    pub kind: String,
    pub mode: InstallMode,
    /// False: no rollback has installed a file there yet; `mode` is then the one its type is
    /// known to get.
    pub probed: bool,
}

/// The file system holding `path`; `None` when it cannot be examined (it is gone).
pub fn describe(path: &std::path::Path) -> Option<Described> {
    let kind = crate::platform::fs_type_at(path).map(type_name).ok()?;
    let dev = crate::platform::sys::fs::stat(path)
        .map(|s| crate::platform::device(s.st_dev))
        .ok()?;
    let probed = known(dev);
    let mode = probed.unwrap_or_else(|| expected(&kind));
    Some(Described {
        kind,
        mode,
        probed: probed.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_named() {
        assert_eq!(type_name(0xEF53), "ext4");
        assert_eq!(type_name(0x6573_5546), "fuse");
        assert_eq!(type_name(0x1234), "0x1234");
        assert_eq!(expected("nfs"), InstallMode::Rename);
        let exchange = if crate::platform::EXCHANGE {
            InstallMode::Exchange
        } else {
            InstallMode::Rename
        };
        assert_eq!(expected("xfs"), exchange);
    }

    #[test]
    fn only_a_refusal_of_the_call_itself_is_one() {
        assert!(refused(&std::io::Error::from_raw_os_error(libc::EINVAL)));
        assert!(refused(&std::io::Error::from_raw_os_error(libc::EOPNOTSUPP)));
        assert!(!refused(&std::io::Error::from_raw_os_error(libc::ENOENT)));
    }
}
