//! Turn markers a hook queued while the daemon was not answering yet (starting, or running its
//! first index): small files in `<state>/queue/`, which the daemon applies in the order they
//! were written, each at its place among the watcher's events (`engine::queued`). So the first
//! prompt in a fresh project opens its turn although no daemon ran when it was submitted.
//!
//! A marker is written as a hidden temp file, synced, then renamed to its name without
//! replacing anything: the daemon sees a whole marker or none. Names sort in the order one
//! process wrote them: `<ms since the epoch>-<pid>-<n>.json`, fixed widths.

use crate::platform::ext::{DirExt, OpenExt};
use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

/// The queue's directory under the project state directory.
pub const QUEUE_DIR: &str = "queue";

/// A marker queued longer ago than this when the daemon starts was left by a start that failed
/// (the hook that wrote it gave up): it is dropped, not applied as if the turn began now.
pub const MAX_AGE_MS: i64 = 10 * 60 * 1000;

/// One turn marker, as the hook would have sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "marker", rename_all = "snake_case")]
pub enum Marker {
    TurnStart {
        session: String,
        label: Option<String>,
        #[serde(rename = "ref")]
        turn_ref: Option<String>,
        /// The agent whose hook queued it (`claude-code`, ...).
        agent: Option<String>,
    },
    TurnEnd {
        session: String,
        label: Option<String>,
    },
}

/// A marker with the time its hook queued it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    pub queued_at_ms: i64,
    #[serde(flatten)]
    pub marker: Marker,
}

impl Queued {
    /// Older than `MAX_AGE_MS` at `now_ms`.
    pub fn is_stale(&self, now_ms: i64) -> bool {
        now_ms - self.queued_at_ms > MAX_AGE_MS
    }
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("cannot read queued marker {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("queued marker {path} is not valid: {source}")]
    Invalid {
        path: PathBuf,
        source: serde_json::Error,
    },
}

pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join(QUEUE_DIR)
}

/// Creates the state directory and its queue (both 0700) if missing; returns the queue.
pub fn prepare(state_dir: &Path) -> io::Result<PathBuf> {
    let queue = dir(state_dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .permission_bits(0o700)
        .create(&queue)?;
    crate::platform::ext::set_permission_bits(state_dir, 0o700)?;
    Ok(queue)
}

/// Queues `markers` in this order; returns their files (to take them back if the daemon they
/// were meant for never starts).
pub fn push(state_dir: &Path, markers: &[Marker], now_ms: i64) -> io::Result<Vec<PathBuf>> {
    let queue = prepare(state_dir)?;
    let mut written = Vec::new();
    for marker in markers {
        let queued = Queued {
            queued_at_ms: now_ms,
            marker: marker.clone(),
        };
        match write_one(&queue, &queued) {
            Ok(path) => written.push(path),
            Err(err) => {
                remove(&written);
                return Err(err);
            }
        }
    }
    Ok(written)
}

/// Numbers the markers of this process, so that two written in one millisecond keep their order.
static NEXT: AtomicU32 = AtomicU32::new(0);

fn write_one(queue: &Path, queued: &Queued) -> io::Result<PathBuf> {
    let bytes = serde_json::to_vec(queued).map_err(io::Error::other)?;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{:013}-{:010}-{n:04}.json",
            queued.queued_at_ms,
            std::process::id()
        );
        let tmp = queue.join(format!(".{name}.tmp"));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .permission_bits(0o600)
            .open(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        let path = queue.join(&name);
        let cwd = crate::platform::sys::fs::CWD;
        match crate::platform::rename_noreplace(cwd, tmp.as_os_str(), cwd, path.as_os_str()) {
            Ok(()) => return Ok(path),
            Err(crate::platform::sys::io::Errno::EXIST) => {
                let _ = std::fs::remove_file(&tmp);
            }
            Err(err) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(err.into());
            }
        }
    }
}

/// Whether `name` is a queued marker's (not a temp file on its way).
pub fn is_marker_name(name: &OsStr) -> bool {
    let name = name.as_encoded_bytes();
    !name.starts_with(b".") && name.ends_with(b".json")
}

/// The queued markers in `queue`, in the order they were written.
pub fn listed(queue: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(queue) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| is_marker_name(&e.file_name()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths
}

/// Reads the marker at `path` and removes it: applied at most once (a crash right after loses
/// that marker; it never applies it twice). `None` when it is gone (already taken).
pub fn take(path: &Path) -> Result<Option<Queued>, QueueError> {
    let bytes = match read_marker(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            // Not a marker (a symlink, a huge or special file): taken away, never retried.
            let _ = std::fs::remove_file(path);
            let path = path.to_path_buf();
            return Err(QueueError::Read { path, source });
        }
    };
    match std::fs::remove_file(path) {
        Ok(()) => {}
        // Taken meanwhile by someone else: it is theirs.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            let path = path.to_path_buf();
            return Err(QueueError::Read { path, source });
        }
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| QueueError::Invalid {
            path: path.to_path_buf(),
            source,
        })
}

/// A marker is a few hundred bytes; anything longer, a symlink or not a regular file is not
/// one of ours, and is read no further.
const MARKER_MAX: u64 = 64 * 1024;

fn read_marker(path: &Path) -> io::Result<Vec<u8>> {
    use crate::platform::ext::OpenExt;
    use std::io::Read;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .no_follow_non_blocking()
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MARKER_MAX {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a queued marker"));
    }
    let mut bytes = Vec::new();
    file.take(MARKER_MAX).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Takes back markers that no daemon will apply.
pub fn remove(paths: &[PathBuf]) {
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(session: &str) -> Marker {
        Marker::TurnStart {
            session: session.into(),
            label: Some("fix it".into()),
            turn_ref: None,
            agent: Some("claude-code".into()),
        }
    }

    #[test]
    fn markers_come_back_once_in_the_order_they_were_queued() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let end = Marker::TurnEnd {
            session: "s".into(),
            label: None,
        };
        let written = push(tmp.path(), &[start("s"), end.clone()], 1_000).expect("push");
        push(tmp.path(), &[start("t")], 1_000).expect("push");
        let listed = listed(&dir(tmp.path()));
        assert_eq!(&listed[..2], &written[..]);
        let taken: Vec<Marker> = listed
            .iter()
            .map(|p| take(p).expect("take").expect("there").marker)
            .collect();
        assert_eq!(taken, vec![start("s"), end, start("t")]);
        assert!(take(&listed[0]).expect("take").is_none(), "taken twice");
        assert!(super::listed(&dir(tmp.path())).is_empty());
    }

    #[test]
    fn a_symlink_or_a_huge_file_in_the_queue_is_no_marker_and_is_taken_away() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let link = tmp.path().join("1-link.json");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
        assert!(take(&link).is_err(), "a symlink was read");
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the symlink is still there"
        );
        let huge = tmp.path().join("2-huge.json");
        std::fs::write(&huge, vec![b' '; (MARKER_MAX + 1) as usize]).expect("write");
        assert!(take(&huge).is_err(), "a huge file was read");
        assert!(!huge.exists());
    }

    #[test]
    fn a_marker_reads_as_json_with_its_words() {
        let queued = Queued {
            queued_at_ms: 5,
            marker: start("s"),
        };
        let text = serde_json::to_string(&queued).expect("json");
        assert!(text.contains(r#""marker":"turn_start""#), "{text}");
        assert!(queued.is_stale(5 + MAX_AGE_MS + 1) && !queued.is_stale(5 + MAX_AGE_MS));
        assert!(!is_marker_name(OsStr::new(".x.json.tmp")) && is_marker_name(OsStr::new("1-2-3.json")));
    }
}
