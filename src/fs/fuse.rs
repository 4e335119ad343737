//! What a FUSE file system does that others do not, in one place. Its `syncfs` is not durable
//! (`platform::FsSync`). And libfuse keeps a file removed or renamed over while something still has it
//! open under a stand-in name, `.fuse_hidden` and hex digits, until the last descriptor is
//! closed: the stand-in shows in listings, is never a user's file (`watch::filter` never tracks
//! one), and keeps its directory from being removed. So a thread of the daemon that may hold a
//! workspace file open must not wait at idle priority there (`reads_at_idle`): starved on a busy
//! machine, it held one for seconds and a `git checkout`'s or an undo's `rmdir` failed; and a
//! rollback's `rmdir` waits a moment for stand-ins to go (`ops::Parent::rmdir`).

use crate::platform::sys::AsFd;
use std::time::{Duration, Instant};

use crate::platform::FUSE_SUPER_MAGIC;

/// How long a directory left holding only stand-ins is waited for, at most: a read of ours
/// closes its file within milliseconds; a file someone else keeps open keeps its directory.
pub const STAND_IN_WAIT: Duration = Duration::from_secs(2);

const STAND_IN_PREFIX: &[u8] = b".fuse_hidden";

/// Whether a file named `name` is libfuse's stand-in for a removed file still open.
pub fn is_stand_in(name: &[u8]) -> bool {
    name.strip_prefix(STAND_IN_PREFIX)
        .is_some_and(|rest| !rest.is_empty() && rest.iter().all(u8::is_ascii_hexdigit))
}

/// Whether `fd` is on a FUSE file system (false when it cannot be told).
pub fn is_fuse(fd: impl AsFd) -> bool {
    crate::platform::fs_type_of(fd.as_fd()).is_ok_and(|kind| kind == FUSE_SUPER_MAGIC)
}

/// Whether a thread reading files of the workspace on `root_fd`'s file system may lower itself
/// to idle priority: not on FUSE, where a file it holds open while starved is visible.
pub fn reads_at_idle(root_fd: impl AsFd) -> bool {
    !is_fuse(root_fd)
}

/// Retries `attempt` (an `rmdir` refused as not empty) while `only_stand_ins` says the directory
/// holds nothing but stand-ins, until `STAND_IN_WAIT` has passed; the last refusal otherwise.
pub fn waiting_for_stand_ins<E>(
    mut attempt: impl FnMut() -> Result<(), E>,
    not_empty: impl Fn(&E) -> bool,
    only_stand_ins: impl Fn() -> bool,
) -> Result<(), E> {
    let deadline = Instant::now() + STAND_IN_WAIT;
    let mut pause = Duration::from_millis(1);
    loop {
        match attempt() {
            Err(e) if not_empty(&e) && Instant::now() < deadline && only_stand_ins() => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_the_prefix_and_hex_digits() {
        assert!(is_stand_in(b".fuse_hidden0000000400000002"));
        assert!(is_stand_in(b".fuse_hidden00000a1f00000003"));
        assert!(!is_stand_in(b".fuse_hidden"), "the prefix alone");
        assert!(!is_stand_in(b".fuse_hidden-notes.txt"));
        assert!(!is_stand_in(b"x.fuse_hidden0001"));
    }

    #[test]
    fn an_rmdir_is_tried_again_only_while_stand_ins_are_all_that_is_left() {
        let mut refusals = 3;
        let mut attempt = || {
            refusals -= 1;
            if refusals >= 0 { Err("not empty") } else { Ok(()) }
        };
        assert_eq!(waiting_for_stand_ins(&mut attempt, |_| true, || true), Ok(()));
        assert_eq!(refusals, -1, "tried until the stand-ins went");

        let tries = std::cell::Cell::new(0);
        let refused = || {
            tries.set(tries.get() + 1);
            Err("not empty")
        };
        assert_eq!(
            waiting_for_stand_ins(refused, |_| true, || false),
            Err("not empty")
        );
        assert_eq!(
            tries.replace(0),
            1,
            "a real file in the directory: refused at once"
        );
        assert_eq!(
            waiting_for_stand_ins(refused, |_| false, || true),
            Err("not empty")
        );
        assert_eq!(tries.get(), 1, "another error: at once");
    }

    #[test]
    fn a_tmpfs_or_disk_is_not_fuse() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fd = std::fs::File::open(dir.path()).expect("open");
        assert!(!is_fuse(&fd));
        assert!(reads_at_idle(&fd));
    }
}
