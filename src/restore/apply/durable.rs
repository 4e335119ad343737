//! Making an apply's changes durable: the temp files are written, then made durable
//! all at once (one `syncfs` of the workspace's file system, `fs::sync`) before the first is
//! renamed into place; after the renames a second `syncfs` makes every changed directory
//! entry durable. On a kernel whose `syncfs` hides errors, on FUSE (whose `syncfs` is not
//! durable), or for what lies on another file system (a mount inside the workspace), each
//! file and directory is fsynced on its own, 16 at a time. A failed sync is never taken for a success: every step it covers fails.

use std::collections::HashMap;

use super::install::map_in_passes;
use super::{Cause, Finished, Run, TempWrite, note};
use crate::fs::feed::map_parallel;
use crate::fs::ops::{Durable, FsError};
use crate::fs::read::RootDir;
use crate::model::StatKey;
use crate::model::answer::NoteCode;
use crate::paths::RelPath;
use crate::restore::plan::Ordered;

/// Writes run this many at a time.
const WRITE_THREADS: usize = 4;
/// fsyncs (where no batch covers them) run this many at a time: the file system commits
/// concurrent fsyncs together.
const FSYNC_THREADS: usize = 16;

/// One sync error, for every step it fails.
#[derive(Debug, Clone, Copy)]
struct SyncError(Option<i32>);

impl SyncError {
    fn of(err: &std::io::Error) -> Self {
        Self(err.raw_os_error())
    }

    fn to_fs(self, path: &RelPath) -> FsError {
        let source = match self.0 {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::other("syncfs failed"),
        };
        FsError::Io {
            path: path.to_text(),
            source,
        }
    }
}

impl Run<'_> {
    /// Creates and writes the temp files in parallel, then makes them durable: each one's stat
    /// once written, or its error, in order.
    pub(super) fn write_all(
        &self,
        steps: &[Ordered],
        writes: &[(usize, TempWrite)],
    ) -> Vec<Result<StatKey, FsError>> {
        let durable = match &self.sync {
            Some(sync) => Durable::Batch { dev: sync.dev },
            None => Durable::Fsync,
        };
        let threads = if durable == Durable::Fsync {
            FSYNC_THREADS
        } else {
            WRITE_THREADS
        };
        let paths: Vec<&RelPath> = writes.iter().map(|(i, _)| &steps[*i].step.path).collect();
        let (disk, contents) = (&self.disk, &self.contents);
        let mut written = map_in_passes(disk.ws.drain.as_deref(), &paths, threads, |k| {
            let (i, w) = &writes[k];
            let path = &steps[*i].step.path;
            let bytes = contents.get(&w.hash).map(Vec::as_slice).unwrap_or_default();
            let parent = disk.ws.root.parent_of(path)?;
            let written = parent.write_temp(path, &w.temp, bytes, w.mode, durable);
            disk.held.hold(path, &parent);
            written
        });
        let Some(sync) = &self.sync else {
            return written;
        };
        if written.iter().all(Result::is_err) {
            return written;
        }
        let started = std::time::Instant::now();
        let synced = sync.sync();
        tracing::debug!(
            syncfs_ms = started.elapsed().as_millis() as u64,
            "rollback temp files synced"
        );
        if let Err(err) = synced {
            tracing::warn!(%err, "syncing a rollback's temp files failed: none is installed");
            let failure = SyncError::of(&err);
            for (k, result) in written.iter_mut().enumerate() {
                if result.as_ref().is_ok_and(|stat| stat.dev == sync.dev) {
                    *result = Err(failure.to_fs(&steps[writes[k].0].step.path));
                }
            }
        }
        written
    }

    /// Makes every changed directory entry durable before the results are recorded. A
    /// directory that cannot be synced fails every step changing an entry in it: none of
    /// them is durable.
    pub(super) fn sync_dirs(&mut self, steps: &[Ordered]) {
        let dirs: Vec<RelPath> = self.touched.values().cloned().collect();
        let batch = self.sync.as_ref().map(|sync| sync.dev);
        let synced = sync_each_dir(&self.disk.ws.root, &dirs, batch);
        let mut failed: HashMap<Option<RelPath>, FsError> = HashMap::new();
        let mut covered = Vec::new();
        for (outcome, child) in synced.into_iter().zip(&dirs) {
            match outcome {
                DirSync::Done => {}
                DirSync::Batched => covered.push(child),
                DirSync::Failed(e) => {
                    failed.insert(child.parent(), e);
                }
            }
        }
        if let Some(sync) = self.sync.as_ref().filter(|_| !covered.is_empty())
            && let Err(err) = sync.sync()
        {
            tracing::warn!(%err, "syncing a rollback's directory entries failed");
            let failure = SyncError::of(&err);
            for child in covered {
                failed.insert(child.parent(), failure.to_fs(child));
            }
        }
        for (i, Ordered { step, .. }) in steps.iter().enumerate() {
            if self.results[i].is_some() {
                continue;
            }
            if let Some(err) = failed.get(&step.path.parent()) {
                let reason = format!("its directory cannot be synced: {err}");
                let cause = match err {
                    FsError::Io { source, .. } => Cause::of_io(source),
                    _ => Cause::UnknownIo,
                };
                self.results[i] = Some(Finished::Failed(note(step, NoteCode::IoError, reason), cause));
            }
        }
    }
}

/// How one changed directory was made durable.
enum DirSync {
    /// fsynced, or removed by a later step (its removal is its own parent's entry).
    Done,
    /// On the batch's file system: its `syncfs` covers it.
    Batched,
    Failed(FsError),
}

/// Each directory holding one of `children`: fsynced, in parallel, unless it is on the file
/// system `batch` (synced once for all by the caller).
fn sync_each_dir(root: &RootDir, children: &[RelPath], batch: Option<u64>) -> Vec<DirSync> {
    map_parallel(children.len(), FSYNC_THREADS, |i| {
        let path = &children[i];
        let parent = match root.parent_of(path) {
            Err(FsError::NoParent(_)) => return DirSync::Done,
            Err(e) => return DirSync::Failed(e),
            Ok(parent) => parent,
        };
        if batch.is_some() && parent.dev(path).ok() == batch {
            return DirSync::Batched;
        }
        match parent.sync(path) {
            Ok(()) => DirSync::Done,
            Err(e) => DirSync::Failed(e),
        }
    })
}
