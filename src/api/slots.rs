//! Who gets one of the API's connections. A connection is counted when it is
//! accepted, before it could authenticate, so the count is kept per local user: the owner's
//! connections (the daemon's own uid, and root's) come from a pool of their own, and those
//! of every other uid (which cannot authenticate, but can connect and sit idle) from a small
//! shared one, a few each. Another user holding sockets open never makes the owner's CLI,
//! hooks or page wait or be refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The owner's connections open at once.
pub const OWNER_CONNECTIONS: usize = 64;
/// Every other uid's together.
pub const OTHER_CONNECTIONS: usize = 16;
/// One other uid's (or those whose uid could not be told, together).
pub const PER_OTHER_UID: usize = 4;

/// Where a connection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// The daemon's uid, or root; also every connection where uids cannot be told.
    Owner,
    /// Another uid, `None` when the kernel did not say which (the peer closed at once).
    Other(Option<u32>),
}

impl Peer {
    /// The class of the connection a socket owned by `uid` made (`None`: not found).
    pub fn of(uid: Option<u32>, owner: u32) -> Peer {
        match uid {
            Some(uid) if uid == owner || uid == 0 => Peer::Owner,
            other => Peer::Other(other),
        }
    }
}

#[derive(Default)]
struct Counts {
    owner: usize,
    others: usize,
    per_uid: HashMap<Option<u32>, usize>,
}

/// The open connections, by class.
#[derive(Clone, Default)]
pub struct Slots {
    counts: Arc<Mutex<Counts>>,
}

/// One connection's place, given back when it is dropped.
pub struct Slot {
    counts: Arc<Mutex<Counts>>,
    peer: Peer,
}

impl Slots {
    /// A place for a connection from `peer`, or `None` when its pool is full.
    pub fn admit(&self, peer: Peer) -> Option<Slot> {
        let mut counts = lock(&self.counts);
        match peer {
            Peer::Owner if counts.owner < OWNER_CONNECTIONS => counts.owner += 1,
            Peer::Other(uid) => {
                let theirs = counts.per_uid.get(&uid).copied().unwrap_or(0);
                if counts.others >= OTHER_CONNECTIONS || theirs >= PER_OTHER_UID {
                    return None;
                }
                counts.others += 1;
                counts.per_uid.insert(uid, theirs + 1);
            }
            Peer::Owner => return None,
        }
        Some(Slot {
            counts: Arc::clone(&self.counts),
            peer,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        match self.peer {
            Peer::Owner => counts.owner -= 1,
            Peer::Other(uid) => {
                counts.others -= 1;
                if let Some(theirs) = counts.per_uid.get_mut(&uid) {
                    *theirs -= 1;
                    if *theirs == 0 {
                        counts.per_uid.remove(&uid);
                    }
                }
            }
        }
    }
}

/// The counts are plain numbers, consistent after any panic.
fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_uids_never_take_the_owners_places() {
        let slots = Slots::default();
        let mut held = Vec::new();
        for uid in 1000..1100 {
            for _ in 0..10 {
                held.extend(slots.admit(Peer::Other(Some(uid))));
            }
        }
        held.extend((0..10).filter_map(|_| slots.admit(Peer::Other(None))));
        assert_eq!(held.len(), OTHER_CONNECTIONS);
        let owners: Vec<Slot> = (0..OWNER_CONNECTIONS)
            .filter_map(|_| slots.admit(Peer::Owner))
            .collect();
        assert_eq!(owners.len(), OWNER_CONNECTIONS);
        assert!(
            slots.admit(Peer::Owner).is_none(),
            "the owner's pool has a cap too"
        );
    }

    #[test]
    fn one_other_uid_gets_a_few_and_places_come_back() {
        let slots = Slots::default();
        let first: Vec<Slot> = (0..10)
            .filter_map(|_| slots.admit(Peer::Other(Some(1001))))
            .collect();
        assert_eq!(first.len(), PER_OTHER_UID);
        assert!(
            slots.admit(Peer::Other(Some(1002))).is_some(),
            "a third user still gets one"
        );
        drop(first);
        let again: Vec<Slot> = (0..10)
            .filter_map(|_| slots.admit(Peer::Other(Some(1001))))
            .collect();
        assert_eq!(again.len(), PER_OTHER_UID);
    }

    #[test]
    fn root_and_the_owner_are_the_owner() {
        assert_eq!(Peer::of(Some(1000), 1000), Peer::Owner);
        assert_eq!(Peer::of(Some(0), 1000), Peer::Owner);
        assert_eq!(Peer::of(Some(1001), 1000), Peer::Other(Some(1001)));
        assert_eq!(Peer::of(None, 1000), Peer::Other(None));
    }
}
