//! Pacing notify's thread through a burst of events. Each time it waits for events with the
//! kernel's queue empty, the next event a command makes wakes it, in that command's own time
//! (`sed -i` over 2,000 files makes some 10,000 events, 20 µs apart: without pacing, as many
//! wake-ups of this thread and of the capture worker it forwards to, taken from the command's
//! two cores). So an event that woke the thread (it had slept since the event before) in a
//! burst pauses the thread: the command's events pile up meanwhile and are read in one go, and
//! the next wake-up comes only after them. A lone event is forwarded at once, and a turn
//! marker's cookie waits at most one pause.
//!
//! Whether the thread slept is its count of voluntary context switches (`getrusage`), which
//! only a wait moves: a pause per wake-up, not one per event, however fast they are read.

use std::time::{Duration, Instant};

/// Events closer than this to the one before are a burst.
const BURST_GAP: Duration = Duration::from_micros(500);
/// How long the thread lets a burst's events pile up.
pub const PAUSE: Duration = Duration::from_millis(2);

#[derive(Default)]
pub struct Pace {
    last_event: Option<Instant>,
    last_pause: Option<Instant>,
    /// The thread's voluntary context switches when it last looked.
    switches: Option<u64>,
}

impl Pace {
    /// After an event was forwarded: whether to pause now, and for how long.
    pub fn after_event(&mut self) -> Option<Duration> {
        let switches = voluntary_switches();
        let slept = match (switches, self.switches) {
            (Some(now), Some(before)) => now != before,
            _ => true,
        };
        self.switches = switches;
        self.decide(Instant::now(), slept, switches.is_some())
    }

    /// After a pause: its own wait is not a wake-up by an event.
    pub fn paused(&mut self) {
        self.switches = voluntary_switches();
    }

    /// `slept`: whether the thread waited since the event before; `known`: whether it can
    /// tell (if not, it pauses at most once per `PAUSE`).
    fn decide(&mut self, now: Instant, slept: bool, known: bool) -> Option<Duration> {
        let in_burst = self
            .last_event
            .is_some_and(|at| now.duration_since(at) < BURST_GAP);
        self.last_event = Some(now);
        let paused_lately = self.last_pause.is_some_and(|at| now.duration_since(at) < PAUSE);
        if !in_burst || !slept || (!known && paused_lately) {
            return None;
        }
        self.last_pause = Some(now + PAUSE);
        Some(PAUSE)
    }
}

/// This thread's voluntary context switches so far.
fn voluntary_switches() -> Option<u64> {
    crate::platform::voluntary_switches()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_pauses_once_per_wake_up_and_a_lone_event_goes_at_once() {
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        let mut pace = Pace::default();
        assert_eq!(pace.decide(us(0), true, true), None, "the first event");
        assert_eq!(
            pace.decide(us(10_000), true, true),
            None,
            "a lone event 10 ms later"
        );
        assert_eq!(
            pace.decide(us(10_020), true, true),
            Some(PAUSE),
            "woken in a burst"
        );
        // The events that piled up meanwhile are read without a wait between them.
        for n in [12_030, 12_031, 12_032, 12_040] {
            assert_eq!(pace.decide(us(n), false, true), None);
        }
        assert_eq!(
            pace.decide(us(12_060), true, true),
            Some(PAUSE),
            "the next wake-up"
        );
        assert_eq!(pace.decide(us(20_000), true, true), None, "the burst is over");
    }

    #[test]
    fn without_a_count_of_waits_a_burst_pauses_once_per_pause() {
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        let mut pace = Pace::default();
        assert_eq!(pace.decide(us(0), true, false), None);
        assert_eq!(pace.decide(us(100), true, false), Some(PAUSE));
        // The pause ran until 2.1 ms: a pause's time must pass after it before the next.
        for n in (2_150..4_100).step_by(100) {
            assert_eq!(pace.decide(us(n), true, false), None, "at {n} µs");
        }
        assert_eq!(pace.decide(us(4_150), true, false), Some(PAUSE));
    }

    // `RUSAGE_THREAD` is the Linux layer's; elsewhere there is no count (and no pause).
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    #[test]
    fn a_wait_moves_the_count_of_voluntary_switches() {
        let before = voluntary_switches().expect("getrusage(RUSAGE_THREAD) on Linux");
        std::thread::sleep(Duration::from_millis(1));
        let after = voluntary_switches().expect("getrusage");
        assert!(after > before, "{before} -> {after}");
    }
}
