//! The daemon's log file when it runs in the background (`serve --log-file`, which `start` and
//! the hooks pass): stdout and stderr become the file, so the log lines, a panic's message
//! and every line printed land in it. Once it holds `CAP` bytes it is renamed to `<file>.1`
//! (replacing the one before) and a new file takes its place: the log never takes more than
//! about twice `CAP` on disk, and the latest lines are always in `<file>`.

use crate::platform::ext::OpenExt;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The size at which the log is rotated.
pub const CAP: u64 = 4 << 20;

/// The log file stdout and stderr write to.
pub struct LogFile {
    path: PathBuf,
    rotating: Mutex<()>,
}

impl LogFile {
    /// Points stdout and stderr at `path` (appended to, created 0600).
    pub fn install(path: &Path) -> io::Result<Self> {
        let file = open(path)?;
        redirect(&file)?;
        let log = Self {
            path: path.to_path_buf(),
            rotating: Mutex::new(()),
        };
        log.rotate_if_full();
        Ok(log)
    }

    /// Before a line is written: a full log is moved to `<file>.1` and a new one begun.
    pub fn rotate_if_full(&self) {
        let Ok(_guard) = self.rotating.lock() else {
            return;
        };
        let full = stderr_file_size().is_some_and(|size| size >= CAP);
        if !full || std::fs::rename(&self.path, old_log(&self.path)).is_err() {
            return;
        }
        // If the new file cannot be made, the lines go on into the renamed one.
        if let Ok(file) = open(&self.path) {
            let _ = redirect(&file);
        }
    }
}

/// Moves the log at `path` aside to `<file>.1` when it holds `CAP` bytes or more (before a
/// daemon is started on it).
pub fn rotate_if_full(path: &Path) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= CAP) {
        let _ = std::fs::rename(path, old_log(path));
    }
}

/// `daemon.log` -> `daemon.log.1`.
fn old_log(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".1");
    PathBuf::from(name)
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .permission_bits(0o600)
        .open(path)
}

/// Makes `file` the process's stdout and stderr.
fn redirect(file: &File) -> io::Result<()> {
    crate::platform::ext::redirect_output(file)
}

/// The size of what stderr writes to, when that is a regular file.
fn stderr_file_size() -> Option<u64> {
    crate::platform::ext::stderr_file_size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_is_moved_aside_and_a_small_one_stays() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("daemon.log");
        std::fs::write(&path, b"short\n").expect("write");
        rotate_if_full(&path);
        assert!(path.exists() && !tmp.path().join("daemon.log.1").exists());
        std::fs::write(&path, vec![b'x'; CAP as usize]).expect("write");
        rotate_if_full(&path);
        assert!(!path.exists(), "a full log stays");
        let old = std::fs::metadata(tmp.path().join("daemon.log.1")).expect("moved aside");
        assert_eq!(old.len(), CAP);
    }
}
