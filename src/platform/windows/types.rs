//! `stat` and `open`'s words on Windows: the flags, the mode, the file type and the fields of
//! `stat` the code reads, made from what Windows says of a file.

use std::fs::File;
use std::os::windows::fs::MetadataExt;
use std::os::windows::io::AsRawHandle;

/// `FILE_ATTRIBUTE_READONLY`.
pub(crate) const ATTRIBUTE_READONLY: u32 = 0x1;
/// Seconds from 1601 (Windows' epoch) to 1970 (Unix's).
const EPOCH_DIFFERENCE: i64 = 11_644_473_600;

bitflags::bitflags! {
    /// `open`'s flags, as far as Windows can honour them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct OFlags: u32 {
        const RDONLY = 0;
        const WRONLY = 1;
        const RDWR = 2;
        const CREATE = 0o100;
        const EXCL = 0o200;
        const TRUNC = 0o1000;
        const APPEND = 0o2000;
        const NONBLOCK = 0o4000;
        const DIRECTORY = 0o200000;
        const NOFOLLOW = 0o400000;
        const CLOEXEC = 0o2000000;
    }

    /// `statat`'s and `unlinkat`'s flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct AtFlags: u32 {
        const SYMLINK_NOFOLLOW = 0x100;
        const REMOVEDIR = 0x200;
    }
}

pub type RawMode = u32;
pub type Dev = u64;

/// Permission bits: on Windows only "no write bit" means something (the read-only attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode(pub(crate) RawMode);

impl Mode {
    pub fn empty() -> Self {
        Mode(0)
    }

    pub fn from_raw_mode(mode: RawMode) -> Self {
        Mode(mode)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    RegularFile,
    Directory,
    Symlink,
    Unknown,
}

const S_IFMT: u32 = 0o170_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;

impl FileType {
    pub fn from_raw_mode(mode: RawMode) -> Self {
        match mode & S_IFMT {
            S_IFDIR => FileType::Directory,
            S_IFREG => FileType::RegularFile,
            S_IFLNK => FileType::Symlink,
            _ => FileType::Unknown,
        }
    }

    pub fn is_dir(self) -> bool {
        self == FileType::Directory
    }

    pub fn is_file(self) -> bool {
        self == FileType::RegularFile
    }

    fn of(meta: &std::fs::Metadata) -> Self {
        Self::of_kind(meta.file_type())
    }

    /// The standard library's file type in `stat`'s words.
    pub(crate) fn of_kind(kind: std::fs::FileType) -> Self {
        if kind.is_symlink() {
            FileType::Symlink
        } else if kind.is_dir() {
            FileType::Directory
        } else if kind.is_file() {
            FileType::RegularFile
        } else {
            FileType::Unknown
        }
    }
}

/// `stat`'s fields the code reads. The mode is made up from the type and the read-only
/// attribute (0644 or 0444; 0755 or 0555 for a directory); the device and inode are the
/// volume's serial number and the file's index; the change time is the last write's.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub st_dev: u64,
    pub st_ino: u64,
    pub st_mode: RawMode,
    pub st_nlink: u64,
    pub st_size: i64,
    pub st_mtime: i64,
    pub st_mtime_nsec: i64,
    pub st_ctime: i64,
    pub st_ctime_nsec: i64,
}

impl Stat {
    pub(crate) fn of(meta: &std::fs::Metadata, file: Option<&File>) -> Self {
        let kind = FileType::of(meta);
        let read_only = meta.file_attributes() & ATTRIBUTE_READONLY != 0;
        let bits = match (kind, read_only) {
            (FileType::Directory, false) => S_IFDIR | 0o755,
            (FileType::Directory, true) => S_IFDIR | 0o555,
            (FileType::Symlink, _) => S_IFLNK | 0o777,
            (_, false) => S_IFREG | 0o644,
            (_, true) => S_IFREG | 0o444,
        };
        let (seconds, nanos) = unix_time(meta.last_write_time());
        let (dev, ino, nlink) = file.and_then(identity).unwrap_or((0, 0, 1));
        Stat {
            st_dev: dev,
            st_ino: ino,
            st_mode: bits,
            st_nlink: nlink,
            st_size: i64::try_from(meta.file_size()).unwrap_or(i64::MAX),
            st_mtime: seconds,
            st_mtime_nsec: nanos,
            st_ctime: seconds,
            st_ctime_nsec: nanos,
        }
    }
}

/// A Windows time (100 ns ticks since 1601) as Unix seconds and nanoseconds.
fn unix_time(ticks: u64) -> (i64, i64) {
    let ticks = i64::try_from(ticks).unwrap_or(i64::MAX);
    (ticks / 10_000_000 - EPOCH_DIFFERENCE, (ticks % 10_000_000) * 100)
}

/// The volume's serial number, the file's index on it, and its number of links.
pub fn identity(file: &File) -> Option<(u64, u64, u64)> {
    use windows_sys::Win32::Storage::FileSystem::{BY_HANDLE_FILE_INFORMATION, GetFileInformationByHandle};
    // SAFETY: plain data, all-zero a valid value, written by the call below.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open for the call's length and `info` is the size it writes.
    let ok = unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) };
    (ok != 0).then(|| {
        let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
        (
            u64::from(info.dwVolumeSerialNumber),
            index,
            u64::from(info.nNumberOfLinks),
        )
    })
}
