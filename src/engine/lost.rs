//! Lost events, as the worker sees them. When the watcher loses events (the kernel's queue
//! overflowed, or ours was full) it raises a flag, then queues `Msg::Rescan` behind every hint
//! it had sent: each raising of the flag has exactly one such marker, in order.
//!
//! The worker takes the flag and rescans the whole workspace. The hints still queued before
//! that loss's marker name changes made before the rescan began, so the rescan has seen them:
//! re-checking them one by one afterwards only delays the turn marker waiting behind them.
//! They are dropped instead. (Hints already taken are dropped with the pending batch; the
//! queue holds many only when the worker was busy as the loss came: a long batch, a rollback,
//! or our own queue's cap of a million hints.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct LostEvents {
    flag: Arc<AtomicBool>,
    /// Raisings of the flag taken so far; the n-th marker belongs to the n-th raising.
    taken: u64,
    /// Markers received so far.
    markers: u64,
    /// The number of raisings taken when the latest complete rescan began: hints queued
    /// before marker number `covered` describe changes that rescan saw.
    covered: u64,
}

impl LostEvents {
    pub fn new(flag: Arc<AtomicBool>) -> Self {
        Self {
            flag,
            taken: 0,
            markers: 0,
            covered: 0,
        }
    }

    /// True when events were lost since the last call: the caller rescans everything.
    pub fn take(&mut self) -> bool {
        let lost = self.flag.swap(false, Ordering::AcqRel);
        self.taken += u64::from(lost);
        lost
    }

    /// Events were lost and no rescan has been started for it yet.
    pub fn signalled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Where a complete rescan of the whole workspace begins: pass the value to `rescanned`
    /// once it has finished without error.
    pub fn rescan_begins(&self) -> u64 {
        self.taken
    }

    pub fn rescanned(&mut self, began_after: u64) {
        self.covered = self.covered.max(began_after);
    }

    /// A `Msg::Rescan` came out of the queue.
    pub fn marker_arrived(&mut self) {
        self.markers += 1;
    }

    /// A hint taken out of the queue now was queued before a marker whose loss a finished
    /// rescan covered: what it names has been recorded.
    pub fn hint_is_stale(&self) -> bool {
        self.markers < self.covered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raise(flag: &AtomicBool) -> bool {
        !flag.swap(true, Ordering::AcqRel)
    }

    #[test]
    fn hints_before_the_marker_of_a_rescanned_loss_are_stale() {
        let flag = Arc::new(AtomicBool::new(false));
        let mut lost = LostEvents::new(flag.clone());
        assert!(!lost.hint_is_stale());
        assert!(raise(&flag));
        assert!(lost.take());
        let began = lost.rescan_begins();
        lost.rescanned(began);
        assert!(lost.hint_is_stale(), "queued before the marker");
        lost.marker_arrived();
        assert!(!lost.hint_is_stale(), "queued after the marker");
    }

    #[test]
    fn a_marker_taken_before_its_flag_leaves_later_hints_alone() {
        let flag = Arc::new(AtomicBool::new(false));
        let mut lost = LostEvents::new(flag.clone());
        assert!(raise(&flag));
        lost.marker_arrived();
        assert!(lost.take());
        let began = lost.rescan_begins();
        lost.rescanned(began);
        assert!(!lost.hint_is_stale());
    }

    #[test]
    fn a_failed_rescan_covers_nothing() {
        let flag = Arc::new(AtomicBool::new(false));
        let mut lost = LostEvents::new(flag.clone());
        assert!(raise(&flag));
        assert!(lost.take());
        assert!(!lost.hint_is_stale(), "no rescan finished");
        assert!(!lost.signalled());
    }
}
