//! A test hook: a rollback paused part-way, for the crash tests.

use std::sync::atomic::{AtomicU64, Ordering};

/// Test-only (`crate::test_knobs`): `FILEWATCHD_TEST_PAUSE_AFTER=K` stops a rollback after K
/// file changes so a test can kill the daemon mid-apply ('s crash tests).
pub struct PauseHook {
    left: Option<AtomicU64>,
}

impl PauseHook {
    pub fn from_knobs() -> Self {
        Self {
            left: crate::test_knobs::get().pause_after.map(AtomicU64::new),
        }
    }

    /// Set by the knob: the changes are then made one at a time, so that the pause leaves
    /// exactly K done.
    pub fn armed(&self) -> bool {
        self.left.is_some()
    }

    pub fn before_first(&self) {
        if self
            .left
            .as_ref()
            .is_some_and(|left| left.load(Ordering::SeqCst) == 0)
        {
            Self::pause();
        }
    }

    pub fn tick(&self) {
        let Some(left) = self.left.as_ref() else {
            return;
        };
        let before = left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| Some(n.saturating_sub(1)));
        if before.unwrap_or(0) <= 1 {
            Self::pause();
        }
    }

    fn pause() -> ! {
        tracing::warn!("FILEWATCHD_TEST_PAUSE_AFTER reached: pausing the rollback until killed");
        loop {
            std::thread::park();
        }
    }
}
