//! The workspace root lost while the daemon runs (`mv ws ws.moved && mkdir ws`, `rm -rf ws`):
//! every read goes through the root's descriptor, every cookie and walk through its path, so
//! once the two name different directories the daemon would record one tree as the other and
//! roll back files outside the root. The worker checks at every command, before every batch it
//! records and on the watcher's events for the root itself (a removed root held open sends
//! none: the removals of its children lead to a batch first); once lost, capture stops for good, every command that would
//! write answers `workspace_lost`, and reads of the history keep working.

use std::path::PathBuf;

use crate::platform::sys::fs::{AtFlags, Stat};
use crate::platform::sys::io::Errno;

use crate::fs::read::RootDir;
use crate::paths::RelPath;
use crate::stats::WorkspaceLost;

/// What became of the root, or `None` while its path still names the directory held open.
pub fn check(root: &RootDir) -> Option<WorkspaceLost> {
    let held = match crate::platform::sys::fs::fstat(root.fd()) {
        Ok(held) => held,
        Err(err) => return Some(lost(root, format!("can no longer be examined ({err})"))),
    };
    let now = crate::platform::sys::fs::lstat(&root.path);
    if now.as_ref().is_ok_and(|now| same_inode(now, &held)) {
        return None;
    }
    let moved = (held.st_nlink > 0).then(|| held_at(root)).flatten();
    let gone = match moved {
        Some(to) if to != root.path => format!("was moved to {}", to.display()),
        _ if held.st_nlink == 0 => "was removed".to_string(),
        _ => "was moved away".to_string(),
    };
    let standing = match now {
        Err(Errno::NOENT) => "nothing stood at its path when this was noticed".to_string(),
        Err(err) => format!("its path cannot be examined ({err})"),
        Ok(_) => "another directory (or file) stood at its path when this was noticed".to_string(),
    };
    Some(lost(root, format!("{gone}, and {standing}")))
}

fn same_inode(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

/// Where the directory held open is now, as the kernel names it.
fn held_at(root: &RootDir) -> Option<PathBuf> {
    #[cfg(unix)]
    return {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", root.fd().as_raw_fd())).ok()
    };
    // Windows holds the root by its path: where it went is not known.
    #[cfg(windows)]
    return {
        let _ = root;
        None
    };
}

fn lost(root: &RootDir, what: String) -> WorkspaceLost {
    let shown = root.path.display();
    WorkspaceLost {
        root: shown.to_string(),
        what,
        since: crate::model::format_time(crate::model::now_ms()),
        remedy: format!(
            "The recorded history can still be read (log, show, history). To record again, stop \
             this daemon (`filewatchd stop --root {shown}`); then either move the directory back to \
             {shown} and start filewatchd there, or start it in the new {shown}: what differs from \
             the history is then recorded as changed while the daemon was not running (offline)"
        ),
    }
}

/// Removes a barrier cookie planted before the root was lost, from the directory it was
/// planted in (through the descriptor), never from whatever now stands at the root's path.
pub fn remove_cookie(root: &RootDir, cookie: &RelPath) {
    let _ = crate::platform::sys::fs::unlinkat(root.fd(), cookie.as_path(), AtFlags::empty());
}
