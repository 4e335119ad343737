//! The worker's rescans: of the directories whose ignore files changed, and of the whole
//! workspace when events may have been lost. A rescan that fails is owed, and commands are
//! refused until one succeeds (G12).

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::worker::{TrimOnDrop, Worker};
use crate::capture::record::Attribution;
use crate::capture::rescan::{rescan, rescan_into_view};
use crate::capture::tracked::RulesChanged;
use crate::paths::RelPath;
use crate::watch::filter::IgnoreRules;

impl Worker {
    /// True when every path under `dir` was recorded as it is now; paths that kept changing
    /// while read are retried with the next batch, paths the store failed until recorded.
    /// `rules_before`: an ignore rule changed, and these were the rules (`rescan_into_view`).
    pub(super) fn rescan_dir(
        &mut self,
        dir: Option<&RelPath>,
        who: Attribution,
        rules_before: Option<&IgnoreRules>,
    ) -> bool {
        let _trim = TrimOnDrop;
        let scanned = match rules_before {
            Some(before) => rescan_into_view(&mut self.conn, &mut self.ctx, dir, before, who),
            None => rescan(&mut self.conn, &mut self.ctx, dir, who, false),
        };
        match scanned {
            Ok(recorded) => {
                // The answers about what it recorded (a turn listing 30,000 new files) come
                // after the trim on return: the idle trim gives their memory back too.
                self.since_trim += recorded.versions;
                self.owed.rescan = self.owed.rescan && dir.is_some();
                // A whole-workspace rescan saw every path: its failures are all that is pending.
                match dir {
                    None => self.storage_outcome(recorded.failed, recorded.fault),
                    Some(_) => self.also_failed(recorded.failed, recorded.fault),
                }
                if recorded.requeue.is_empty() {
                    return self.owed.unrecorded.is_none();
                }
                self.batch.requeue(recorded.requeue, Instant::now());
                false
            }
            Err(err) => {
                self.owe_walk(&err, dir.cloned().into_iter().collect());
                self.batch.failed(Instant::now());
                false
            }
        }
    }

    /// The directories whose ignore files changed, rescanned; what else the rescans find was
    /// written now, by `who`.
    pub(super) fn rescan_changed_rules(&mut self, changed: RulesChanged, who: Attribution) {
        for dir in &changed.dirs {
            self.rescan_dir(dir.as_ref(), who, Some(&changed.before));
        }
    }

    /// Everything re-checked: after lost events, or when a cookie never came back.
    pub(super) fn full_rescan(&mut self) {
        if self.root_lost() {
            return;
        }
        self.batch.clear();
        self.early.clear();
        self.ctx.stats.rescans.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("events may have been lost; rescanning the workspace");
        let began = self.lost.rescan_begins();
        if self.rescan_dir(None, self.who(), None) {
            self.lost.rescanned(began);
        }
    }
}
