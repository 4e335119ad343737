//! A workspace on a file system that does not tell names apart by case, as macOS's default
//! APFS and Windows' NTFS do: exFAT (a USB stick's file system), mounted here by Debian's
//! exfat-fuse on a loop device. `Readme.md` and `README.md` are one file there. A case-only
//! rename is recorded as a new `README.md` beside a `Readme.md` that still answers, so an undo
//! that took the record at its word would delete `README.md`, the only copy. The rollback
//! sees the two names are one file and refuses (`case_collision`); `skip` leaves the file,
//! and nothing is ever deleted (docs/platforms.md, "Names that differ only in case").
//!
//! Needs root, `mkfs.exfat` (exfatprogs) and `mount.exfat-fuse` (exfat-fuse): skipped
//! without them (a failure under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use serde_json::json;

/// An exFAT image on a loop device, mounted by exfat-fuse; unmounted and freed on drop.
struct Exfat {
    _dir: tempfile::TempDir,
    mnt: PathBuf,
    device: String,
}

impl Exfat {
    fn mount() -> Result<Self, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("loop devices and mounts need root".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let image = dir.path().join("exfat.img");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(64 << 20))
            .map_err(|e| e.to_string())?;
        run(Command::new("mkfs.exfat").arg(&image)).map_err(|e| format!("{e} (is exfatprogs installed?)"))?;
        let device = run(Command::new("losetup").args(["-f", "--show"]).arg(&image))?;
        let device = device.trim().to_string();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        let mounted = Self {
            _dir: dir,
            mnt,
            device,
        };
        run(Command::new("mount.exfat-fuse")
            .arg(&mounted.device)
            .arg(&mounted.mnt))
        .map_err(|e| format!("{e} (is exfat-fuse installed?)"))?;
        Ok(mounted)
    }
}

impl Drop for Exfat {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

/// What `command` printed, or why it failed.
fn run(command: &mut Command) -> Result<String, String> {
    let out = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{command:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The names in `dir`, sorted, as the directory spells them.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("listing")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_case_only_rename_is_never_undone_by_deleting_the_one_file() {
    let fs = match Exfat::mount() {
        Ok(fs) => fs,
        Err(why) => return skip(&format!("exFAT cannot be mounted here: {why}")),
    };
    let ws = Workspace::new();
    let root = fs.mnt.join("ws");
    std::fs::create_dir(&root).expect("mkdir on the mount");
    std::fs::write(root.join("Readme.md"), "read me\n").expect("Readme.md");
    assert!(
        root.join("README.MD").exists(),
        "exFAT answers to any case: the test's premise"
    );
    let d = Daemon::start_in_home_at(&ws, &root);

    d.turn_start("s", "rename");
    std::fs::rename(root.join("Readme.md"), root.join("README.md")).expect("case-only rename");
    d.turn_end("s");
    assert_eq!(names(&root), ["README.md"]);

    let (status, plan) = d.undo("s", json!({}));
    assert_eq!(status, 409, "{plan:#}");
    let note = listed(&plan, "conflicts", "README.md");
    assert_eq!(note["code"], "case_collision", "{plan:#}");
    let reason = note["reason"].as_str().expect("reason");
    assert!(reason.contains("Readme.md"), "names the other spelling: {reason}");
    assert_eq!(names(&root), ["README.md"], "refused: nothing changed");

    let (status, skipped) = d.undo("s", json!({"on_conflict": "skip"}));
    assert_eq!(status, 200, "{skipped:#}");
    assert_eq!(
        names(&root),
        ["README.md"],
        "skip leaves the one file: {skipped:#}"
    );
    assert_eq!(
        std::fs::read(root.join("README.md")).expect("README.md"),
        b"read me\n"
    );
    d.stop();
}
