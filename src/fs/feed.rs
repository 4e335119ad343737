//! The reading side of a rescan: reader threads observe the walked paths in order and run
//! ahead of the one writer by a bounded window. No reader waits for a batch's slowest file (a
//! cold disk has some), and memory holds at most a window of observations.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

pub struct Feed<T> {
    len: usize,
    ahead: usize,
    next: AtomicUsize,
    state: Mutex<Window<T>>,
    for_writer: Condvar,
    for_readers: Condvar,
}

/// Results of the items from `taken` on: item `i` sits at `slots[i - taken]`.
struct Window<T> {
    slots: VecDeque<Option<T>>,
    taken: usize,
    /// Slots filled without a gap from the front.
    ready: usize,
    cancelled: bool,
}

impl<T> Feed<T> {
    /// A feed of `len` items whose readers stay fewer than `ahead` items past the writer.
    pub fn new(len: usize, ahead: usize) -> Self {
        Self {
            len,
            ahead: ahead.max(1),
            next: AtomicUsize::new(0),
            state: Mutex::new(Window {
                slots: VecDeque::new(),
                taken: 0,
                ready: 0,
                cancelled: false,
            }),
            for_writer: Condvar::new(),
            for_readers: Condvar::new(),
        }
    }

    /// One reader: claims the next item, waits while it lies beyond the window, computes it
    /// with `one` and hands it over, until every item is claimed or the writer gave up.
    pub fn serve(&self, mut one: impl FnMut(usize) -> T) {
        let _panic = CancelOnPanic(self);
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.len || !self.wait_for_room(i) {
                return;
            }
            let value = one(i);
            let mut window = self.lock();
            let at = i - window.taken;
            if window.slots.len() <= at {
                window.slots.resize_with(at + 1, || None);
            }
            window.slots[at] = Some(value);
            let before = window.ready;
            while window.slots.get(window.ready).is_some_and(Option::is_some) {
                window.ready += 1;
            }
            if window.ready != before {
                self.for_writer.notify_one();
            }
        }
    }

    fn wait_for_room(&self, i: usize) -> bool {
        let mut window = self.lock();
        while !window.cancelled && i >= window.taken + self.ahead {
            window = self.for_readers.wait(window).unwrap_or_else(|p| p.into_inner());
        }
        !window.cancelled
    }

    /// The writer: the next `n` results in order (`n` at most the window), once all are in.
    pub fn take(&self, n: usize) -> Vec<T> {
        let n = n.min(self.ahead);
        let mut window = self.lock();
        while window.ready < n {
            // A reader panicked: its item will never come (the scope re-raises its panic).
            assert!(!window.cancelled, "a reader of the feed panicked");
            window = self.for_writer.wait(window).unwrap_or_else(|p| p.into_inner());
        }
        let taken: Vec<T> = window.slots.drain(..n).flatten().collect();
        window.taken += n;
        window.ready -= n;
        self.for_readers.notify_all();
        taken
    }

    /// The writer stops early: readers finish the item in hand and leave.
    pub fn cancel(&self) {
        self.lock().cancelled = true;
        self.for_readers.notify_all();
        self.for_writer.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, Window<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Wakes everyone when a reader panics, so nobody waits for its item forever.
struct CancelOnPanic<'a, T>(&'a Feed<T>);

impl<T> Drop for CancelOnPanic<'_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.cancel();
        }
    }
}

/// `f(0) .. f(len - 1)` computed on `threads` threads, in order: the feed with no writer to
/// wait for.
pub fn map_parallel<T: Send>(len: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let feed = Feed::new(len, len);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(len) {
            scope.spawn(|| feed.serve(&f));
        }
        feed.take(len)
    })
}

/// `map_parallel` for work nobody waits for: the helper threads lower their own priority
/// (`platform::lower_own_priority`: they yield the CPU and the disk to the agent's commands),
/// and the caller reads beside them at its own, so the work never starves on a busy machine
/// (a command arriving meanwhile waits for it).
pub fn map_parallel_at_idle<T: Send>(len: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let feed = Feed::new(len, len);
    std::thread::scope(|scope| {
        for _ in 1..threads.min(len) {
            scope.spawn(|| {
                crate::platform::lower_own_priority();
                feed.serve(&f);
            });
        }
        feed.serve(&f);
        feed.take(len)
    })
}

/// Cancels the feed when the writer leaves, by error or not, so its readers can be joined.
pub struct CancelOnDrop<'a, T>(pub &'a Feed<T>);

impl<T> Drop for CancelOnDrop<'_, T> {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_arrive_in_order_from_many_readers() {
        let feed = Feed::new(1000, 64);
        let taken = std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| feed.serve(|i| i * 2));
            }
            let mut all = Vec::new();
            while all.len() < 1000 {
                all.extend(feed.take(50.min(1000 - all.len())));
            }
            all
        });
        assert_eq!(taken, (0..1000).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_reader_fails_the_writer_instead_of_hanging_it() {
        let outcome = std::panic::catch_unwind(|| {
            map_parallel(100, 2, |i| {
                assert!(i != 50, "reader fails on item 50");
                i
            })
        });
        assert!(outcome.is_err());
    }

    #[test]
    fn idle_helpers_and_the_caller_compute_every_item_in_order() {
        assert_eq!(
            map_parallel_at_idle(500, 4, |i| i + 1),
            (1..=500).collect::<Vec<_>>()
        );
        assert_eq!(map_parallel_at_idle(1, 4, |i| i), vec![0]);
    }

    #[test]
    fn readers_leave_when_the_writer_gives_up() {
        let feed = Feed::new(1000, 8);
        let first = std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| feed.serve(|i| i));
            }
            let _cancel = CancelOnDrop(&feed);
            feed.take(8)
        });
        assert_eq!(first, (0..8).collect::<Vec<_>>());
    }
}
