//! LazyFS: a FUSE file system with its own page cache that drops, on command, every write not
//! yet fsynced, as a power cut does. Built once under target/lazyfs by the shared
//! `tools/lazyfs.sh` (in `FILEWATCHD_SHARED`, which `.ci/run` sets for a clone made away from
//! `../shared`, else beside the checkout), mounted in a temp dir, unmounted when dropped.
//! What it loses is file data: a create, rename or unlink reaches the backing directory at
//! once, so it cannot show a missing fsync of a directory.
//!
//! A LazyFS bug to work around: now and then it fails the `ftruncate` SQLite makes of its
//! `-shm` when a daemon starts (`lfs_truncate` in vendor/lazyfs tests a result it never set
//! when the file is in its cache), so that start fails with "disk I/O error"
//! (`SQLITE_IOERR_SHMOPEN`). It was seen in about one start in ten after a clean stop, and once
//! in a CI run after a `kill -9` (the `-shm` left in place); never on a new mount, which starts
//! with an empty cache: a test that starts a daemon on the mount where another ran,
//! stopped or killed, mounts it again in between. A plain unmount drops what the cache holds
//! unsynced, as a power cut does; `remount_clean` first writes it to the backing directory, as
//! a clean shutdown or a kill without a power cut leaves it.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::poll_until;

/// The shared LazyFS helper: `build`, `mount`, `crash`, `umount`.
pub fn lazyfs_sh() -> PathBuf {
    std::env::var_os("FILEWATCHD_SHARED")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
            PathBuf::from,
        )
        .join("tools/lazyfs.sh")
}

/// A LazyFS mount at `mnt` of a backing directory beside it; unmounted when dropped.
pub struct LazyFs {
    pub mnt: PathBuf,
    backing: PathBuf,
    build: PathBuf,
    /// The running lazyfs process.
    pub pid: u32,
    _dir: tempfile::TempDir,
}

impl LazyFs {
    /// Builds LazyFS under target/ (reused between runs) and mounts it in a new temp dir
    /// (under `parent`, else the system's); `Err` says why it cannot run here.
    pub fn mount_in(parent: Option<&Path>) -> Result<LazyFs, String> {
        let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/lazyfs");
        // One build at a time: the tests of one binary run in parallel, and each would build.
        static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let building = BUILDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let binary = run_ok(Command::new("bash").arg(lazyfs_sh()).arg("build").arg(&build))?;
        if !Path::new(binary.trim()).is_file() {
            return Err(format!("the lazyfs build made no binary: {binary}"));
        }
        drop(building);
        let mut builder = tempfile::Builder::new();
        // No "-o" in the path: see `mount`.
        builder.prefix("fwd_lazyfs_");
        let dir = match parent {
            Some(parent) => builder.tempdir_in(parent),
            None => builder.tempdir(),
        };
        let dir = dir.map_err(|e| format!("temp dir: {e}"))?;
        let (mnt, backing) = (dir.path().join("mnt"), dir.path().join("backing"));
        let pid = mount(&build, &mnt, &backing)?;
        Ok(LazyFs {
            mnt,
            backing,
            build,
            pid,
            _dir: dir,
        })
    }

    pub fn mount() -> Result<LazyFs, String> {
        LazyFs::mount_in(None)
    }

    /// The power cut: every write not fsynced is dropped (`lazyfs::clear-cache`).
    pub fn crash(&self) {
        let cleared = run_ok(Command::new("bash").arg(lazyfs_sh()).arg("crash").arg(&self.mnt));
        if let Err(why) = cleared {
            panic!("lazyfs crash: {why}");
        }
    }

    /// Writes every unsynced write in the cache to the backing directory
    /// (`lazyfs::cache-checkpoint`), then unmounts and mounts again: nothing is lost.
    pub fn remount_clean(&mut self) {
        let log = PathBuf::from(format!("{}.log", self.mnt.display()));
        let done = || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            text.matches("checkpoint is done").count()
        };
        let before = done();
        let fifo = format!("{}.fifo", self.mnt.display());
        std::fs::write(&fifo, "lazyfs::cache-checkpoint\n").unwrap_or_else(|e| panic!("{fifo}: {e}"));
        let checkpointed = poll_until(std::time::Duration::from_secs(30), || {
            (done() > before).then_some(())
        });
        assert!(
            checkpointed.is_some(),
            "lazyfs never finished its checkpoint ({})",
            log.display()
        );
        self.remount();
    }

    /// Unmounts (dropping what is not synced), waits for the lazyfs process to end, and mounts
    /// the backing directory again.
    pub fn remount(&mut self) {
        umount(&self.mnt);
        let ended = poll_until(std::time::Duration::from_secs(30), || {
            (!Path::new(&format!("/proc/{}", self.pid)).exists()).then_some(())
        });
        assert!(ended.is_some(), "lazyfs {} did not end once unmounted", self.pid);
        self.pid = mount(&self.build, &self.mnt, &self.backing).unwrap_or_else(|why| panic!("{why}"));
    }
}

impl Drop for LazyFs {
    fn drop(&mut self) {
        umount(&self.mnt);
    }
}

/// `lazyfs.sh mount`: waits until mounted, answers the lazyfs process's pid; an error ends
/// with the end of LazyFS's own log, which says why it did not mount.
fn mount(build: &Path, mnt: &Path, backing: &Path) -> Result<u32, String> {
    let config = format!("{}.toml", mnt.display());
    // LazyFS's `main` takes a `--config-path` holding "-o" (any case) for a missing one, and
    // then dies looking for config/default.toml.
    if config.to_ascii_lowercase().contains("-o") {
        return Err(format!(
            "LazyFS cannot read a config path holding \"-o\": {config}"
        ));
    }
    run_mount(build, mnt, backing)
        .map_err(|failed| format!("{}\nLazyFS's log ends:\n{}", last_lines(&failed), log_tail(mnt)))
}

fn run_mount(build: &Path, mnt: &Path, backing: &Path) -> Result<u32, String> {
    let pid = run_ok(
        Command::new("bash")
            .arg(lazyfs_sh())
            .arg("mount")
            .arg(build)
            .arg(mnt)
            .arg(backing),
    )?;
    pid.trim()
        .parse()
        .map_err(|_| format!("lazyfs mount printed no pid: {pid:?}"))
}

/// The last lines of the log `lazyfs.sh` keeps beside the mount point.
fn log_tail(mnt: &Path) -> String {
    let log = PathBuf::from(format!("{}.log", mnt.display()));
    match std::fs::read_to_string(&log) {
        Ok(text) => last_lines(&text),
        Err(e) => format!("({}: {e})", log.display()),
    }
}

/// The last lines of `text`, each repeated line once (`lazyfs.sh` repeats its complaint every
/// poll).
fn last_lines(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.dedup();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

fn umount(mnt: &Path) {
    let _ = Command::new("bash")
        .arg(lazyfs_sh())
        .arg("umount")
        .arg(mnt)
        .status();
}

/// Runs `cmd`; its stdout, or why it failed.
pub fn run_ok(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
