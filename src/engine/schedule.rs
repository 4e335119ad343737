//! When the background verification pass (`capture::verify`) runs, and the count of commands
//! it yields to.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::config::Verify;

/// Background passes yielding this many times in a row: the next one runs to its end.
const YIELDS_BEFORE_INSISTING: u32 = 3;

/// Commands sent to the worker, counted by the senders before sending: a background pass
/// yields while more were sent than the worker has taken.
#[derive(Clone, Default)]
pub struct Sent(Arc<AtomicU64>);

impl Sent {
    pub fn one_more(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// True while a command sent is not yet taken, given how many the worker took.
    pub fn waiting(&self, taken: u64) -> bool {
        self.0.load(Ordering::Acquire) != taken
    }
}

/// When the background pass runs: once `quiet` has passed since the last hint, at most every
/// `interval` (the first one an interval after start-up: the start-up walk just verified).
pub struct Schedule {
    config: Verify,
    next_at: Instant,
    yields_in_a_row: u32,
}

impl Schedule {
    pub fn new(config: Verify, now: Instant) -> Self {
        Self {
            config,
            next_at: now + config.interval.unwrap_or(Duration::ZERO),
            yields_in_a_row: 0,
        }
    }

    /// When the pass is due, given the last hint; `None` when it is off.
    pub fn due_at(&self, last_hint: Instant) -> Option<Instant> {
        self.config.interval?;
        Some(self.next_at.max(last_hint + self.config.quiet))
    }

    /// Whether the next pass may yield to a command (not after yielding again and again).
    pub fn may_yield(&self) -> bool {
        self.yields_in_a_row < YIELDS_BEFORE_INSISTING
    }

    /// A pass ran (in the background or on demand): the next one an interval from now.
    pub fn ran(&mut self, now: Instant) {
        self.next_at = now + self.config.interval.unwrap_or(Duration::ZERO);
        self.yields_in_a_row = 0;
    }

    /// A background pass yielded: again once the workspace has been quiet another while.
    pub fn yielded(&mut self, now: Instant) {
        self.next_at = now + self.config.quiet;
        self.yields_in_a_row += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_waits_for_quiet_and_the_interval() {
        let start = Instant::now();
        let config = Verify {
            interval: Some(Duration::from_secs(60)),
            quiet: Duration::from_secs(10),
        };
        let mut schedule = Schedule::new(config, start);
        let at = |secs| Some(start + Duration::from_secs(secs));
        assert_eq!(schedule.due_at(start), at(60), "an interval after start-up");
        assert_eq!(
            schedule.due_at(start + Duration::from_secs(55)),
            at(65),
            "quiet after a hint"
        );
        schedule.ran(start + Duration::from_secs(65));
        assert_eq!(schedule.due_at(start), at(125));
        schedule.yielded(start + Duration::from_secs(70));
        assert_eq!(schedule.due_at(start), at(80), "yielded: again once quiet");
        for _ in 1..YIELDS_BEFORE_INSISTING {
            assert!(schedule.may_yield());
            schedule.yielded(start);
        }
        assert!(!schedule.may_yield());
        let off = Schedule::new(
            Verify {
                interval: None,
                ..config
            },
            start,
        );
        assert_eq!(off.due_at(start), None);
    }
}
