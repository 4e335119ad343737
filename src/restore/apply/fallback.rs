//! Installing on a file system that refuses `RENAME_EXCHANGE` and `RENAME_NOREPLACE` (mode
//! `rename`, `fs::mode`). A replace keeps the file it replaces under the step's
//! temp name by a hard link (where the exchange would have swapped it there), renames the new
//! content over the path with a plain `rename`, then compares what it replaced as the
//! exchange does: someone else's bytes are renamed back to their path and the step is a
//! conflict. A create is a `link`, which never clobbers. Where `link` is refused too, the
//! path is checked right before a plain rename and the result verified after it.

use super::{Disk, Finished, Swapped, changed, skipped};
use crate::fs::mode::{self, InstallMode};
use crate::fs::ops::{FsError, Parent};
use crate::restore::plan::Step;

/// The file system refused the call itself (not this path's state).
pub(super) fn refusal(err: &FsError) -> bool {
    matches!(err, FsError::Io { source, .. } if mode::refused(source))
}

/// `link` refused: the file system has no hard links (or not for this file).
fn no_links(err: &FsError) -> bool {
    matches!(err, FsError::Io { source, .. }
        if mode::refused(source) || source.raw_os_error() == Some(libc::EPERM))
}

impl Disk<'_> {
    /// The install mode of the file system this step's directory is on.
    pub(super) fn mode(&self, parent: &Parent, step: &Step) -> InstallMode {
        parent.dev(&step.path).map_or(InstallMode::Exchange, mode::of)
    }

    /// An exchange went through: this file system has it.
    pub(super) fn exchanged(&self, parent: &Parent, step: &Step) {
        if let Ok(dev) = parent.dev(&step.path) {
            mode::exchanged(dev);
        }
    }

    /// The file system refused an exchange or a no-replace rename: `rename` from now on, for
    /// the rest of this rollback and its put-back.
    pub(super) fn fall_back(&self, parent: &Parent, step: &Step) {
        if let Ok(dev) = parent.dev(&step.path) {
            mode::fall_back(dev);
        }
    }

    /// Mode `rename`'s create: linked in, never over something that appeared meanwhile.
    pub(super) fn create_by_link(&self, parent: &Parent, step: &Step, temp: &str) -> Result<(), Finished> {
        match parent.link_in(&step.path, temp) {
            Ok(()) => {
                self.discard(parent, temp);
                Ok(())
            }
            Err(e) if no_links(&e) => self.rename_if_absent(parent, step, temp),
            Err(e) => {
                self.discard(parent, temp);
                Err(skipped(step, &e))
            }
        }
    }

    /// No `link`: the path checked absent right before a plain rename.
    fn rename_if_absent(&self, parent: &Parent, step: &Step, temp: &str) -> Result<(), Finished> {
        let there = parent.stat(&step.path).map_err(|e| skipped(step, &e));
        if !matches!(there, Ok(None)) {
            self.discard(parent, temp);
            return there.and_then(|_| Err(skipped(step, &FsError::Appeared(step.path.to_text()))));
        }
        parent.rename_onto(&step.path, temp).map_err(|e| {
            self.discard(parent, temp);
            skipped(step, &e)
        })
    }

    /// Mode `rename`'s replace (the path was re-checked just now): our new content moves to
    /// a second temp name, the path's file is linked at the first (as an exchange leaves
    /// it), the new content is renamed over the path, and what it replaced is compared.
    pub(super) fn replace_by_rename(&self, parent: &Parent, step: &Step, temp: &str) -> Result<(), Finished> {
        let ours = format!("{temp}n");
        if let Err(e) = parent.move_temp(&step.path, temp, &ours) {
            self.discard(parent, temp);
            return Err(skipped(step, &e));
        }
        let kept = match parent.link_aside(&step.path, temp) {
            Ok(()) => true,
            Err(e) if no_links(&e) => false,
            Err(e) => {
                self.discard(parent, &ours);
                return Err(skipped(step, &e));
            }
        };
        if let Err(e) = parent.rename_onto(&step.path, &ours) {
            self.discard(parent, &ours);
            if kept {
                // A second name of the path's own file, which is still there.
                self.discard(parent, temp);
            }
            return Err(skipped(step, &e));
        }
        if !kept {
            return Ok(());
        }
        match self.swapped_out(step, temp) {
            Swapped::Expected | Swapped::Ours => {
                self.discard(parent, temp);
                Ok(())
            }
            Swapped::Foreign => match parent.rename_onto(&step.path, temp) {
                Ok(()) => Err(changed(step)),
                Err(e) => {
                    // Their bytes are under the temp name the journal names: recovery
                    // records them before removing it.
                    self.left_a_temp();
                    Err(skipped(step, &e))
                }
            },
        }
    }
}
