//! Pacing notify's thread through a burst of events. Each time it waits for events with the
//! kernel's queue empty, the next event a command makes wakes it, in that command's own time
//! (`sed -i` over 2,000 files makes some 10,000 events: as many wake-ups, on 2 cores a third
//! of sed's own run). In a burst it pauses instead, once per `PAUSE`: the command's events
//! pile up meanwhile and are read in one go, without a wake-up each. A lone event is
//! forwarded at once, and a turn marker's cookie waits at most one pause.

use std::time::{Duration, Instant};

/// Events closer than this to the one before are a burst.
const BURST_GAP: Duration = Duration::from_micros(500);
/// How long the thread lets a burst's events pile up.
pub const PAUSE: Duration = Duration::from_millis(1);

#[derive(Default)]
pub struct Pace {
    last_event: Option<Instant>,
    last_pause: Option<Instant>,
}

impl Pace {
    /// After an event was forwarded at `now`: whether to pause now, and for how long.
    pub fn after_event(&mut self, now: Instant) -> Option<Duration> {
        let in_burst = self
            .last_event
            .is_some_and(|at| now.duration_since(at) < BURST_GAP);
        self.last_event = Some(now);
        let paused_lately = self.last_pause.is_some_and(|at| now.duration_since(at) < PAUSE);
        if !in_burst || paused_lately {
            return None;
        }
        self.last_pause = Some(now + PAUSE);
        Some(PAUSE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_event_goes_at_once_and_a_burst_pauses_once_per_pause() {
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        let mut pace = Pace::default();
        assert_eq!(pace.after_event(us(0)), None, "the first event");
        assert_eq!(pace.after_event(us(10_000)), None, "a lone event 10 ms later");
        assert_eq!(pace.after_event(us(10_100)), Some(PAUSE), "a burst begins");
        // The pause ran until 11.1 ms: the events read after it are a burst still, and the
        // next pause comes once a pause's time has passed since the last one ended.
        assert_eq!(pace.after_event(us(11_150)), None);
        assert_eq!(pace.after_event(us(11_500)), None);
        assert_eq!(pace.after_event(us(11_900)), None);
        assert_eq!(pace.after_event(us(12_200)), Some(PAUSE));
        assert_eq!(pace.after_event(us(20_000)), None, "the burst is over");
    }
}
