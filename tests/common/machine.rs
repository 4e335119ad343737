//! The machine, shared by every test of the one test binary: most tests only use it (a
//! `Workspace` holds a `Shared` guard for its life), and the few that change it for everyone (a
//! kernel limit every new daemon reads, every core kept busy) take `exclusive()` first and run
//! alone while they hold it. docs/testing.md, "One binary", lists them.
//!
//! A readers-writer lock of its own rather than `std::sync::RwLock`, for three reasons:
//! - a thread may hold several `Shared` guards (two workspaces in one test) and take another
//!   while a test waits for `exclusive()`: new guards are refused only while a test *holds* the
//!   exclusive guard, never while one waits for it, so a test never waits for itself (a
//!   writer-preferring lock deadlocks there);
//! - the test taking `exclusive()` already holds shared guards (its own workspace): it waits
//!   for every other thread's guards only, and may take more while it is alone;
//! - two tests waiting for `exclusive()`, each holding its workspace, take turns: the guards
//!   of a test that waits do not keep the other one out.
//!
//! A test that waits for the machine leaves the other harness threads running: it gets the
//! machine at the first moment no other test holds a guard, and the tests that start then wait
//! until it is done. While it has the machine, a thread it spawned that takes a guard waits too:
//! it takes them from its own thread.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

#[derive(Default)]
struct State {
    /// Shared guards alive, per thread that took them.
    shared: HashMap<ThreadId, usize>,
    /// The thread holding the exclusive guard, if any.
    alone: Option<ThreadId>,
    /// The threads waiting for it (their shared guards do not keep anyone out).
    waiting: Vec<ThreadId>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
static CHANGED: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, Option<State>> {
    // Never held across a panic (only while the counts change), so a poison is a harmless one.
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Held while a test uses the machine as every test finds it; see the module's comment.
pub struct Shared {
    thread: ThreadId,
}

/// Takes a shared guard: waits while another thread's test holds the machine alone.
pub fn shared() -> Shared {
    let me = std::thread::current().id();
    let mut state = lock();
    while state.get_or_insert_default().alone.is_some_and(|t| t != me) {
        state = CHANGED.wait(state).unwrap_or_else(|p| p.into_inner());
    }
    *state.get_or_insert_default().shared.entry(me).or_default() += 1;
    Shared { thread: me }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let mut state = lock();
        let state = state.get_or_insert_default();
        if let Some(n) = state.shared.get_mut(&self.thread) {
            *n -= 1;
            if *n == 0 {
                state.shared.remove(&self.thread);
            }
        }
        CHANGED.notify_all();
    }
}

/// Held while a test has the machine to itself.
pub struct Exclusive {
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Takes the machine for this test alone: waits until no other thread holds a shared guard
/// (except threads that wait for it too) and nobody else has it. Call it before changing
/// anything, and keep it until everything is back as it was.
pub fn exclusive() -> Exclusive {
    let me = std::thread::current().id();
    let mut state = lock();
    let s = state.get_or_insert_default();
    assert!(s.alone != Some(me), "exclusive() taken twice by one test");
    s.waiting.push(me);
    loop {
        let s = state.get_or_insert_default();
        let others_use_it = s.shared.keys().any(|t| *t != me && !s.waiting.contains(t));
        if s.alone.is_none() && !others_use_it {
            s.waiting.retain(|t| *t != me);
            s.alone = Some(me);
            return Exclusive {
                _not_send: std::marker::PhantomData,
            };
        }
        state = CHANGED.wait(state).unwrap_or_else(|p| p.into_inner());
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        lock().get_or_insert_default().alone = None;
        CHANGED.notify_all();
    }
}

/// A test holding a shared guard takes another while a test waits for the machine (a
/// writer-preferring lock deadlocks there), and the waiting test gets the machine only once
/// both are gone.
#[test]
fn a_second_shared_guard_does_not_wait_for_a_test_waiting_for_the_machine() {
    use std::time::Duration;
    let first = shared();
    let (took, taken) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _alone = exclusive();
        took.send(()).expect("the test waits for this");
    });
    let waiting = super::poll_until(Duration::from_secs(30), || {
        lock()
            .as_ref()
            .is_some_and(|s| !s.waiting.is_empty())
            .then_some(())
    });
    assert!(waiting.is_some(), "the other thread never waited for the machine");
    let second = shared();
    assert!(
        taken.try_recv().is_err(),
        "the machine was taken while this test used it"
    );
    drop((first, second));
    // Other tests' workspaces go first: as long as the longest of them.
    taken
        .recv_timeout(Duration::from_secs(600))
        .expect("the waiting thread got the machine");
    waiter.join().expect("the waiting thread");
}
