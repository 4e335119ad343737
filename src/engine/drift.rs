//! The store size counter's drift from its blob rows (`store::size::drift`), measured once a
//! start on a thread of its own with its own connection, at the lowest normal priority: a scan
//! of every blob row (a million files: 0.6 s of CPU) that a restart need not wait for. The
//! worker corrects the counter when the drift arrives (`Upkeep`); a stop interrupts the scan
//! and waits for its thread, so the writer's connection is the last one to close.

use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, InterruptHandle};

use crate::platform::nice_own_thread;
use crate::store::size;

/// While the drift is being measured, the worker looks for it this often.
pub(super) const DRIFT_POLL: Duration = Duration::from_millis(250);

pub(super) struct DriftCheck {
    drift: Receiver<anyhow::Result<Option<i64>>>,
    thread: Option<JoinHandle<()>>,
    interrupt: Arc<Mutex<Interrupt>>,
}

/// The scan's connection, to interrupt it at a stop, and whether the stop came first.
#[derive(Default)]
struct Interrupt {
    handle: Option<InterruptHandle>,
    stopped: bool,
}

impl DriftCheck {
    pub(super) fn start(db: &std::path::Path) -> Self {
        let (tx, drift) = mpsc::channel();
        let interrupt = Arc::new(Mutex::new(Interrupt::default()));
        let (db, slot) = (db.to_path_buf(), interrupt.clone());
        let spawned = std::thread::Builder::new()
            .name("store-size".into())
            .spawn(move || {
                nice_own_thread();
                let measure = || {
                    let conn = crate::store::db::open_reader(&db)?;
                    let mut interrupt = slot.lock().unwrap_or_else(|p| p.into_inner());
                    anyhow::ensure!(!interrupt.stopped, "the daemon stopped first");
                    interrupt.handle = Some(conn.get_interrupt_handle());
                    drop(interrupt);
                    Ok(size::drift(&conn)?)
                };
                let _ = tx.send(measure());
            });
        let thread = spawned
            .inspect_err(|err| tracing::warn!(%err, "cannot check the store size counter this start"))
            .ok();
        Self {
            drift,
            thread,
            interrupt,
        }
    }

    /// Corrects the counter once the drift has arrived; true when nothing is left to do.
    pub(super) fn correct(&self, conn: &Connection) -> bool {
        let result = match self.drift.try_recv() {
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => return true,
            Ok(drift) => drift.and_then(|drift| Ok(size::correct_drift(conn, drift)?)),
        };
        if let Err(err) = result {
            tracing::warn!(
                err = format!("{err:#}"),
                "cannot check the store size counter this start"
            );
        }
        true
    }
}

impl Drop for DriftCheck {
    fn drop(&mut self) {
        let mut interrupt = self.interrupt.lock().unwrap_or_else(|p| p.into_inner());
        interrupt.stopped = true;
        if let Some(handle) = interrupt.handle.take() {
            handle.interrupt();
        }
        drop(interrupt);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
