//! What the worker owes the record while the store fails (G12): the paths it could not store,
//! a rollback applied on disk but not recorded, a rescan to run again. While paths are
//! unrecorded (a rollback not recorded counts its own), commands that change the record are
//! refused with what is pending.

use crate::refusal::Refusal;
use crate::restore::finish::Pending;
use crate::store::fault::Unrecorded;

#[derive(Default)]
pub struct Owed {
    /// Paths the store could not take: pending until recorded.
    pub unrecorded: Option<Unrecorded>,
    /// A rollback applied on disk whose record the store did not take: recorded before
    /// anything else is (its writes are the daemon's own, never someone else's).
    pub rollback: Option<Pending>,
    /// A rescan the store failed: it runs again (whole) before the next command.
    pub rescan: bool,
}

impl Owed {
    /// Nothing is owed.
    pub fn is_empty(&self) -> bool {
        self.unrecorded.is_none() && self.rollback.is_none() && !self.rescan
    }

    /// Why a command that changes the record cannot run now, if anything is owed.
    pub fn refusal(&self) -> Option<Refusal> {
        self.unrecorded.clone().map(Refusal::Unrecorded)
    }
}
