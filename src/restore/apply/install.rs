//! Moving the written temp files into place, on several threads: each path re-checked right
//! before its rename, a replace swapped in and what it swapped out compared with
//! what the plan expected. The paths are handed out across directories: the
//! file system serializes the renames, creations and removals of one directory (its inode
//! lock), and threads queued on that lock spin on the cores instead of working.

use std::collections::HashSet;
use std::time::Duration;

use super::fallback::refusal;
use super::{Check, Disk, Finished, Run, Swapped, changed, same_content, skipped};
use crate::fs::cookie::Drain;
use crate::fs::feed::map_parallel;
use crate::fs::mode::InstallMode;
use crate::fs::ops::{Parent, file_mode};
use crate::fs::read::{Observation, probe, unreadable_file};
use crate::model::{StatKey, State};
use crate::paths::RelPath;
use crate::restore::plan::{Ordered, Step};

/// Renames and the removals of what they swap out run this many at a time: on a file system
/// that discards freed blocks at once (ext4 without a journal, mounted `discard`) each removal
/// waits for the disk. 10,000 files there: 4 threads 380-450 ms, 8 threads 260-330 ms; on a
/// journaled ext4 the same within noise (150-165 ms).
const INSTALL_THREADS: usize = 8;
/// The longest a rollback waits for the watcher to catch up with its writes: its thread is
/// stalled, or gone, and a rescan will catch what it missed.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(1);
/// Paths per install thread: a small plan is installed on the rollback's own thread, a thread
/// costing more than its share of a few renames.
const PATHS_PER_THREAD: usize = 256;

impl Run<'_> {
    /// Installs the steps `indexes`, each done or with its end recorded. With the crash
    /// tests' pause armed, one at a time and in order, so that the pause leaves exactly K done.
    /// A mode-only step in `rewrites` had its file written anew (`Run::stage`).
    pub(super) fn install_each(&mut self, steps: &[Ordered], indexes: &[usize], rewrites: &HashSet<usize>) {
        let threads = if self.disk.pause.armed() || indexes.len() < PATHS_PER_THREAD {
            1
        } else {
            indexes.len().div_ceil(PATHS_PER_THREAD).min(INSTALL_THREADS)
        };
        let paths: Vec<&RelPath> = indexes.iter().map(|&i| &steps[i].step.path).collect();
        let disk = &self.disk;
        let ends = map_in_passes(disk.ws.drain.as_deref(), &paths, threads, |k| {
            let i = indexes[k];
            disk.install(&steps[i], rewrites.contains(&i))
        });
        for (&i, end) in indexes.iter().zip(ends) {
            match end {
                Ok(()) => {
                    let path = &steps[i].step.path;
                    self.touched.insert(path.parent(), path.clone());
                }
                Err(finished) => self.results[i] = Some(finished),
            }
        }
    }
}

impl Disk<'_> {
    /// Re-checks the path and moves its temp file into place (or sets its mode, on
    /// the inode checked, unless `rewrite`): a create never clobbers (`create`), a replace
    /// swaps (`exchange`), or where the file system refuses that, is kept aside by a link and
    /// compared (`fallback`).
    fn install(&self, Ordered { ord, step }: &Ordered, rewrite: bool) -> Result<(), Finished> {
        self.root_still_there(step)?;
        let parent = self.parent(step)?;
        let temp = self.temps.name(*ord);
        let seen = match self.recheck(&parent, step) {
            Ok(seen) => seen,
            Err(finished) => {
                self.discard(&parent, &temp);
                return Err(finished);
            }
        };
        let replace = step.current.is_present() && !step.current.is_dir();
        if let Err(finished) = self.root_not_lost(step) {
            self.discard(&parent, &temp);
            return Err(finished);
        }
        match &step.target {
            State::File(file) if same_content(step) && !rewrite => {
                let Some(seen) = seen else {
                    return Err(changed(step));
                };
                let mode = file_mode(Some(seen.mode), file);
                let set = parent.set_mode(&step.path, mode, seen);
                // Another inode, or one with a second name, since the check: someone else's.
                if !set.map_err(|e| skipped(step, &e))? {
                    return Err(changed(step));
                }
            }
            _ if replace => match self.mode(&parent, step) {
                InstallMode::Exchange => self.exchange(&parent, step, &temp)?,
                InstallMode::Rename => self.replace_by_rename(&parent, step, &temp)?,
            },
            _ => self.create(&parent, step, &temp)?,
        }
        self.pause.tick();
        Ok(())
    }

    /// A write racing the install is never lost: the new content is swapped in
    /// (`RENAME_EXCHANGE`), so the inode it replaced survives under the temp name. If that is
    /// not what the plan checked (a process wrote the path after its last check), it is swapped
    /// back: the other process's bytes stay at their path and the step is a conflict. Only then
    /// is the temp name unlinked.
    fn exchange(&self, parent: &Parent, step: &Step, temp: &str) -> Result<(), Finished> {
        if let Err(e) = parent.exchange(&step.path, temp) {
            // Refused, nothing changed: this file system installs by rename from now on.
            if refusal(&e) {
                self.fall_back(parent, step);
                return self.replace_by_rename(parent, step, temp);
            }
            self.discard(parent, temp);
            return Err(skipped(step, &e));
        }
        self.exchanged(parent, step);
        match self.swapped_out(step, temp) {
            Swapped::Expected => {
                self.discard(parent, temp);
                return Ok(());
            }
            // The swap did not happen (the file system said it did): the check after
            // applying finds the path not at its target.
            Swapped::Ours => return Ok(()),
            Swapped::Foreign => {}
        }
        match parent.exchange(&step.path, temp) {
            Ok(()) => {
                self.discard(parent, temp);
                Err(changed(step))
            }
            Err(e) => {
                // Their bytes are under the temp name, which the journal names: recovery
                // records them before removing it.
                self.left_a_temp();
                Err(skipped(step, &e))
            }
        }
    }

    /// A create never clobbers: `RENAME_NOREPLACE`, or where it is refused, `link`.
    fn create(&self, parent: &Parent, step: &Step, temp: &str) -> Result<(), Finished> {
        if self.mode(parent, step) == InstallMode::Rename {
            return self.create_by_link(parent, step, temp);
        }
        match parent.install(&step.path, temp, false) {
            Ok(()) => Ok(()),
            Err(e) if refusal(&e) => {
                self.fall_back(parent, step);
                self.create_by_link(parent, step, temp)
            }
            Err(e) => Err(skipped(step, &e)),
        }
    }

    /// What the swap put under the temp name: what the plan expected, our own new content (no
    /// swap happened), or someone else's. Compared by content, always: a write in place that
    /// keeps the size and puts the mtime back (`rsync --inplace --times`) leaves every stat
    /// field the swap does not itself change as it was.
    pub(super) fn swapped_out(&self, step: &Step, temp: &str) -> Swapped {
        let swapped = match step.path.parent() {
            Some(dir) => dir.join(temp.as_bytes()),
            None => RelPath::from_fs_bytes(temp.as_bytes().to_vec()),
        };
        let found = match probe(&self.ws.root, &swapped, self.ws.max_file_size) {
            Observation::Present(p) => Some(p.state),
            // What cannot be read is compared by what `stat` says, as it was recorded.
            Observation::Unreadable(_) => unreadable_file(&self.ws.root, &swapped).map(|p| p.state),
            _ => None,
        };
        match found {
            Some(state) if state == step.current => Swapped::Expected,
            Some(state) if state == step.target => Swapped::Ours,
            _ => Swapped::Foreign,
        }
    }

    /// Right before the rename: the path is still what the plan (or the pre-check) saw.
    /// Returns its stat now.
    fn recheck(&self, parent: &Parent, step: &Step) -> Result<Option<StatKey>, Finished> {
        let now = parent
            .stat(&step.path)
            .map_err(|e| skipped(step, &e))?
            .map(|s| StatKey::from_rustix(&s));
        let unchanged = match (now, step.checked) {
            (None, _) => !step.current.is_present() || step.current.is_dir(),
            (Some(now), Some(checked)) => now == checked,
            // Something appeared where the plan saw nothing: only recovery, which checked the
            // disk itself just now, goes on (and a create never clobbers anyway).
            (Some(_), None) => self.check == Check::Recovery,
        };
        if unchanged { Ok(now) } else { Err(changed(step)) }
    }
}

/// `map_parallel` over paths, handed out one directory after another (the first path of
/// each directory, then the second of each, ...) so that threads working at once mostly work
/// in different directories. The results come back in the paths' order. One thread: in
/// order, on the caller's.
pub(super) fn map_across_dirs<T: Send>(
    paths: &[&RelPath],
    threads: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    if threads <= 1 {
        return (0..paths.len()).map(f).collect();
    }
    let order = across_dirs(paths);
    let ends = map_parallel(order.len(), threads, |k| f(order[k]));
    let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None).take(paths.len()).collect();
    for (&i, end) in order.iter().zip(ends) {
        slots[i] = Some(end);
    }
    // `across_dirs` is a permutation: every slot is filled once.
    slots
        .into_iter()
        .map(|end| end.expect("every path once"))
        .collect()
}

/// `map_across_dirs` in passes of at most `Drain::per_pass` paths, the watcher let catch
/// up after each (`fs::cookie::Drain`), so that a rollback's own events never overflow the
/// kernel's queue (which costs a rescan of the whole workspace after it). In one pass without
/// a watcher, and for the rest once the watcher did not catch up within `CATCH_UP_TIMEOUT`.
pub(super) fn map_in_passes<T: Send>(
    mut drain: Option<&Drain>,
    paths: &[&RelPath],
    threads: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let mut ends = Vec::with_capacity(paths.len());
    let mut start = 0;
    while start < paths.len() {
        let end = drain.map_or(paths.len(), |d| (start + d.per_pass()).min(paths.len()));
        ends.extend(map_across_dirs(&paths[start..end], threads, |k| f(start + k)));
        start = end;
        if start < paths.len() && drain.is_some_and(|d| !d.catch_up(CATCH_UP_TIMEOUT)) {
            tracing::debug!(done = start, "the watcher did not catch up with the rollback");
            drain = None;
        }
    }
    ends
}

/// The indexes of `paths`, their directories taken in turn: ordered by each path's rank
/// within its directory, then by the directory's first appearance (O(n log n) whatever the
/// shape: one huge directory beside many small ones too).
fn across_dirs(paths: &[&RelPath]) -> Vec<usize> {
    let mut group_of: std::collections::HashMap<Option<RelPath>, (usize, usize)> = Default::default();
    let mut keyed: Vec<(usize, usize, usize)> = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let next = group_of.len();
        let (group, taken) = group_of.entry(path.parent()).or_insert((next, 0));
        keyed.push((*taken, *group, i));
        *taken += 1;
    }
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, _, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(texts: &[&str]) -> Vec<RelPath> {
        texts.iter().map(|t| RelPath::parse(t).expect("path")).collect()
    }

    #[test]
    fn directories_take_turns_and_every_path_comes_once() {
        let owned = paths(&["a/1", "a/2", "a/3", "b/1", "c/1", "c/2", "top"]);
        let refs: Vec<&RelPath> = owned.iter().collect();
        assert_eq!(across_dirs(&refs), vec![0, 3, 4, 6, 1, 5, 2]);
    }

    #[test]
    fn one_large_directory_beside_many_small_ones_is_handed_out_in_turn() {
        let texts: Vec<String> = (0..3)
            .map(|i| format!("big/{i}"))
            .chain((0..3).map(|d| format!("d{d}/f")))
            .collect();
        let owned: Vec<RelPath> = texts.iter().map(|t| RelPath::parse(t).expect("path")).collect();
        let refs: Vec<&RelPath> = owned.iter().collect();
        assert_eq!(across_dirs(&refs), vec![0, 3, 4, 5, 1, 2]);
    }

    #[test]
    fn results_come_back_in_the_paths_order() {
        let owned = paths(&["a/1", "b/1", "a/2", "b/2", "a/3", "c/1"]);
        let refs: Vec<&RelPath> = owned.iter().collect();
        let texts = map_across_dirs(&refs, 3, |i| refs[i].to_text());
        let want: Vec<String> = owned.iter().map(RelPath::to_text).collect();
        assert_eq!(texts, want);
    }
}
