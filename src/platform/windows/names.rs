//! Names on Windows as the file system has them (docs/platforms.md, "Names").
//!
//! - Every path the calls make from a directory and a name is verbatim (`\\?\C:\…`): Windows
//!   then takes each name as it is, so a file named `aux.c` or `CON` (made by WSL, git or a
//!   Linux share) is that file, never the device, and a path over 260 characters needs
//!   nothing more.
//! - NTFS does not tell names apart by case: `Readme.md` opens `README.md`, and so does its
//!   8.3 short name. The record keeps every name as the directory spells it, so a call by a
//!   name finds an entry only if it is spelled exactly so; another spelling is "no such
//!   entry" to a lookup and "exists" to a create. Without this, a case-only rename would be
//!   recorded as a new file beside an unchanged one, and its undo would delete the only copy.

use std::ffi::OsString;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf, Prefix};

/// `name` (one or more components, `/` or `\` between them) in the directory `dir`, verbatim
/// where `dir` is absolute. An empty `dir` (the current directory) leaves `name` as it is.
pub(crate) fn join(dir: &Path, name: &Path) -> PathBuf {
    if dir.as_os_str().is_empty() {
        return name.to_path_buf();
    }
    let mut path = verbatim(dir);
    for component in name.components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            // Never in a name the code makes; kept so Windows refuses it as it would.
            other => path.push(other.as_os_str()),
        }
    }
    path
}

/// `dir` as a verbatim path: `C:\a` → `\\?\C:\a`, `\\server\share\a` → `\\?\UNC\server\share\a`;
/// one already verbatim, or relative, as it is.
fn verbatim(dir: &Path) -> PathBuf {
    let mut components = dir.components();
    let Some(Component::Prefix(prefix)) = components.next() else {
        return dir.to_path_buf();
    };
    let mut path = match prefix.kind() {
        Prefix::Disk(letter) => PathBuf::from(format!(r"\\?\{}:\", letter as char)),
        Prefix::UNC(server, share) => {
            let mut unc = OsString::from(r"\\?\UNC\");
            unc.push(server);
            unc.push(r"\");
            unc.push(share);
            unc.push(r"\");
            PathBuf::from(unc)
        }
        _ => return dir.to_path_buf(),
    };
    for component in components {
        match component {
            Component::Normal(part) => path.push(part),
            Component::ParentDir => {
                path.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    path
}

/// The spelling the directory has for the entry `path` names, when it differs from the last
/// component of `path` (other letter case, or `path` used its 8.3 short name). `None` when it
/// is spelled exactly so, or nothing answers to it, or the directory cannot be read.
pub(crate) fn other_spelling(path: &Path) -> Option<OsString> {
    let asked = path.file_name()?;
    let found = spelling(path)?;
    (found != asked).then_some(found)
}

/// The name of the entry `path` finds (`FindFirstFileW`, which answers with the directory's
/// own spelling of the name).
fn spelling(path: &Path) -> Option<OsString> {
    use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
    use windows_sys::Win32::Storage::FileSystem::{FindClose, FindFirstFileW, WIN32_FIND_DATAW};
    // A name with a wildcard never names one entry (and no Windows file has one); the
    // verbatim prefix's `?` is no wildcard.
    let name = path.file_name()?.encode_wide();
    if name
        .into_iter()
        .any(|c| c == u16::from(b'*') || c == u16::from(b'?'))
    {
        return None;
    }
    let wide: Vec<u16> = path.as_os_str().encode_wide().chain(Some(0)).collect();
    // SAFETY: plain data, filled in by the call below before it is read.
    let mut data: WIN32_FIND_DATAW = unsafe { std::mem::zeroed() };
    // SAFETY: `wide` is NUL-terminated and `data` is the struct the call fills.
    let handle = unsafe { FindFirstFileW(wide.as_ptr(), &mut data) };
    if handle == INVALID_HANDLE_VALUE {
        return None;
    }
    // SAFETY: a search handle FindFirstFileW returned, closed once.
    unsafe { FindClose(handle) };
    let len = data
        .cFileName
        .iter()
        .position(|&c| c == 0)
        .unwrap_or(data.cFileName.len());
    Some(OsString::from_wide(&data.cFileName[..len]))
}
