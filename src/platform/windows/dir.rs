//! A directory's listing on Windows, as `readdir` gives it (`.` and `..` first).

use std::ffi::{CStr, CString};

use super::errno::{Errno, errno};
use super::types::FileType;
use crate::platform::sys::{AsFd, io};

/// A directory's listing (`readdir`), `.` and `..` first as on Unix.
pub struct Dir {
    entries: std::vec::IntoIter<io::Result<DirEntry>>,
}

pub struct DirEntry {
    name: CString,
    kind: FileType,
}

impl DirEntry {
    pub fn file_name(&self) -> &CStr {
        &self.name
    }

    pub fn file_type(&self) -> FileType {
        self.kind
    }
}

impl Dir {
    pub fn read_from(fd: impl AsFd) -> io::Result<Dir> {
        let listing = std::fs::read_dir(fd.as_fd().path()).map_err(errno)?;
        let dots = [c".", c".."].map(|name| {
            Ok(DirEntry {
                name: name.to_owned(),
                kind: FileType::Directory,
            })
        });
        let entries = dots.into_iter().chain(listing.map(|entry| {
            let entry = entry.map_err(errno)?;
            let kind = FileType::of_kind(entry.file_type().map_err(errno)?);
            let name = CString::new(entry.file_name().into_encoded_bytes()).map_err(|_| Errno::INVAL)?;
            Ok(DirEntry { name, kind })
        }));
        Ok(Dir {
            entries: entries.collect::<Vec<_>>().into_iter(),
        })
    }
}

impl Iterator for Dir {
    type Item = io::Result<DirEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.entries.next()
    }
}
