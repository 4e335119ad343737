//! A test hook: a rollback paused part-way, for the crash tests.

/// Test-only (`crate::test_knobs`): `FILEWATCHD_TEST_PAUSE_AFTER=K` stops a rollback after K
/// file changes so a test can kill the daemon mid-apply (issue 3's crash tests).
pub struct PauseHook {
    left: Option<u64>,
}

impl PauseHook {
    pub fn from_knobs() -> Self {
        Self {
            left: crate::test_knobs::get().pause_after,
        }
    }

    pub fn before_first(&self) {
        if self.left == Some(0) {
            Self::pause();
        }
    }

    pub fn tick(&mut self) {
        let Some(left) = self.left.as_mut() else {
            return;
        };
        *left = left.saturating_sub(1);
        if *left == 0 {
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
