//! The user's private directory: where the tree locks live (and `filewatchd ui`'s login
//! page), a directory only this user (and root) can read or write, so that nothing in it was
//! planted by another local user.
//!
//! It is `/tmp/filewatchd-<uid>`, made with mode 0700 and then checked with `lstat` (a
//! directory, not a symlink, owned by this uid, mode 0700): a name that depends on the uid
//! alone, so every process of the user finds the same one whatever its environment (a hook
//! under an agent, `start` from cron, `sudo -u`), which the one-daemon-per-tree guarantee
//! needs. When another user has taken that name first, `$XDG_RUNTIME_DIR/filewatchd` (the
//! runtime directory itself owned by the uid, mode 0700) stands in, and a warning says why;
//! without one the locks cannot be used (the state directory's own lock still keeps out a
//! second daemon of the same state).

use crate::platform::ext::DirExt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::state;

/// The private directory's name in `/tmp`, before the uid.
#[cfg_attr(windows, allow(dead_code))]
pub const TMP_PREFIX: &str = "/tmp/filewatchd-";

static PRIVATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static TREES: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The user's private directory (found once per process, and said once when it cannot be
/// the usual one).
pub fn private_dir() -> Result<&'static Path, &'static str> {
    let found = PRIVATE.get_or_init(|| {
        let found = find_private_dir();
        if let Err(why) = &found {
            tracing::warn!("{why}; the machine-wide workspace locks cannot be used");
        }
        found
    });
    as_result(found)
}

/// A directory named `name` in the private directory, made 0700 and checked.
pub fn private_subdir(name: &str) -> Result<PathBuf, String> {
    let dir = private_dir()?.join(name);
    make_private(&dir)?;
    Ok(dir)
}

/// Where the tree locks live: `trees/` in the private directory.
pub fn lock_dir() -> Result<&'static Path, &'static str> {
    as_result(TREES.get_or_init(|| private_subdir("trees")))
}

fn as_result(found: &'static Result<PathBuf, String>) -> Result<&'static Path, &'static str> {
    found.as_ref().map(PathBuf::as_path).map_err(String::as_str)
}

fn find_private_dir() -> Result<PathBuf, String> {
    #[cfg(unix)]
    let tmp = PathBuf::from(format!("{TMP_PREFIX}{}", state::euid()));
    // Windows: beside the state, in the user's own profile.
    #[cfg(windows)]
    let tmp = {
        let home = state::state_home().map_err(|e| format!("{e:#}"))?;
        std::fs::create_dir_all(&home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
        home.join("private")
    };
    let refused = match make_private(&tmp) {
        Ok(()) => return Ok(tmp),
        Err(why) => why,
    };
    let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) else {
        return Err(refused);
    };
    let runtime = PathBuf::from(runtime);
    let ours = runtime.is_absolute() && check_private(&runtime).is_ok();
    if !ours {
        return Err(format!(
            "{refused}, and $XDG_RUNTIME_DIR ({}) is not a directory of yours with mode 0700",
            runtime.display()
        ));
    }
    let dir = runtime.join("filewatchd");
    make_private(&dir).map_err(|why| format!("{refused}; {why}"))?;
    tracing::warn!("{refused}; using {} instead", dir.display());
    Ok(dir)
}

/// Makes `dir` (mode 0700) unless it is there, then checks it (`check_private`).
pub fn make_private(dir: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new().permission_bits(0o700).create(dir) {
        // The umask may have taken bits away; none is added to a directory made just now.
        Ok(()) => crate::platform::ext::set_permission_bits(dir, 0o700)
            .map_err(|e| format!("cannot set the permissions of {}: {e}", dir.display()))?,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    check_private(dir)
}

/// `dir` is a directory (not a symlink) owned by this uid with mode 0700; else why not.
pub fn check_private(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let me = state::euid();
    if !meta.file_type().is_dir() {
        return Err(format!(
            "{shown} is not a directory (a symlink or file another user may have planted): not used"
        ));
    }
    if crate::platform::ext::owner_of(&meta) != me {
        return Err(format!(
            "{shown} belongs to uid {}, not to you (uid {me}): not used, as is anything another user can write",
            crate::platform::ext::owner_of(&meta)
        ));
    }
    let mode = crate::platform::ext::mode_of(&meta) & 0o7777;
    if crate::platform::ext::PERMISSION_BITS && mode != 0o700 {
        return Err(format!(
            "{shown} has mode {mode:04o}, not 0700: not used (`chmod 700 {shown}` if you made it)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_directory_of_ours_with_mode_0700_is_private() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("private");
        make_private(&dir).expect("made");
        let mode = crate::platform::ext::mode_of(&std::fs::symlink_metadata(&dir).expect("lstat")) & 0o7777;
        assert_eq!(mode, 0o700);
        crate::platform::ext::set_permission_bits(&dir, 0o755).expect("chmod");
        assert!(make_private(&dir).is_err_and(|why| why.contains("mode 0755")));
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).expect("symlink");
        assert!(check_private(&link).is_err_and(|why| why.contains("not a directory")));
    }
}
