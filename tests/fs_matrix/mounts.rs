//! The file systems of the matrix, mounted by the test (as root): loop images of journaled
//! ext4 (mkfs's defaults), xfs and btrfs, made fresh in a temp dir; a tmpfs; overlayfs as
//! containers mount it (the workspace's first files in the lower layer, the upper and work
//! dirs beside it on an ext4 image, one overlay per workspace); and LazyFS (FUSE). Everything
//! is unmounted, the loop devices freed and the images removed when the `Mounted` is dropped,
//! also when the test fails.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{LazyFs, Workspace, run_ok};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ext4,
    Xfs,
    Btrfs,
    Tmpfs,
    Overlay,
    LazyFs,
}

impl Kind {
    /// The file system's type as `status.filesystem.type` names it.
    pub fn status_type(self) -> &'static str {
        match self {
            Kind::Ext4 => "ext4",
            Kind::Xfs => "xfs",
            Kind::Btrfs => "btrfs",
            Kind::Tmpfs => "tmpfs",
            Kind::Overlay => "overlay",
            Kind::LazyFs => "fuse",
        }
    }

    /// The install mode a rollback finds there: FUSE refuses `RENAME_EXCHANGE`.
    pub fn install_mode(self) -> &'static str {
        match self {
            Kind::LazyFs => "rename",
            _ => "exchange",
        }
    }

    /// The `mkfs` of a loop image, its size in MiB (sparse; xfs needs 300, btrfs 110, and
    /// ext4 under 512 gets mke2fs's `small` profile of 1 KiB blocks, not a disk's 4 KiB) and
    /// the Debian package that has it.
    fn image(self) -> Option<(&'static str, &'static [&'static str], u64, &'static str)> {
        match self {
            Kind::Ext4 => Some(("mkfs.ext4", &["-q", "-F"], 512, "e2fsprogs")),
            Kind::Overlay => Some(("mkfs.ext4", &["-q", "-F"], 128, "e2fsprogs")),
            Kind::Xfs => Some(("mkfs.xfs", &["-q", "-f"], 300, "xfsprogs")),
            Kind::Btrfs => Some(("mkfs.btrfs", &["-q", "-f"], 128, "btrfs-progs")),
            Kind::Tmpfs | Kind::LazyFs => None,
        }
    }
}

/// A mount point, unmounted when dropped (lazily if something still holds it).
struct MountGuard(PathBuf);

impl Drop for MountGuard {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(&self.0).status();
        if !unmounted.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Where a workspace's state dir goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// On the same file system as the workspace.
    Beside,
    /// On the host's disk (the temp dir's file system), another file system.
    Elsewhere,
}

/// One file system of the matrix, mounted; everything on it goes when it is dropped.
pub struct Mounted {
    pub kind: Kind,
    // Dropped in this order: the overlays, LazyFS, the mount, then the temp dir.
    overlays: RefCell<Vec<MountGuard>>,
    lazy: RefCell<Option<LazyFs>>,
    _mount: Option<MountGuard>,
    /// Where workspaces go (overlay: where their layers go).
    mnt: PathBuf,
    dir: tempfile::TempDir,
    made: Cell<u32>,
}

impl Mounted {
    /// Makes and mounts `kind`; `Err` says why it cannot be mounted here.
    pub fn mount(kind: Kind) -> Result<Mounted, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("mounting file systems needs root".to_string());
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("fwd-{}-", kind.status_type()))
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).map_err(|e| format!("mkdir: {e}"))?;
        let (lazy, mount) = match kind {
            Kind::LazyFs => (Some(LazyFs::mount_in(Some(dir.path()))?), None),
            Kind::Tmpfs => {
                let args = ["-t", "tmpfs", "-o", "size=256m", "tmpfs"];
                (None, Some(mount_at(&args, &mnt)?))
            }
            _ => (None, Some(mount_image(kind, dir.path(), &mnt)?)),
        };
        let mnt = lazy.as_ref().map_or(mnt, |l| l.mnt.clone());
        Ok(Mounted {
            kind,
            overlays: RefCell::new(Vec::new()),
            lazy: RefCell::new(lazy),
            _mount: mount,
            mnt,
            dir,
            made: Cell::new(0),
        })
    }

    /// A new workspace on this file system with `seed` in it (overlay: in its lower layer),
    /// its state dir `state`.
    pub fn workspace(&self, seed: &[(&str, &[u8])], state: State) -> Workspace {
        let n = self.made.get();
        self.made.set(n + 1);
        let base = match self.kind {
            Kind::Overlay => self.overlay(n, seed),
            _ => {
                let base = self.mnt.join(format!("w{n}"));
                write_seed(&base.join("ws"), seed);
                base
            }
        };
        let state_dir = match state {
            State::Beside => base.join("state"),
            State::Elsewhere => self.dir.path().join(format!("state{n}")),
        };
        let ws = Workspace::at(&base.join("ws"), &state_dir);
        let dev = |p: &Path| rustix::fs::stat(p).map(|s| s.st_dev).ok();
        let same = dev(ws.root()) == dev(ws.state_dir());
        assert_eq!(
            same,
            state == State::Beside,
            "{state:?}: {}",
            ws.state_dir().display()
        );
        ws
    }

    /// Before a daemon is started again where one ran (stopped cleanly or killed): LazyFS is
    /// mounted again (`common::lazyfs` says why); nothing on the others.
    pub fn before_restart(&self) {
        if let Some(lazy) = self.lazy.borrow_mut().as_mut() {
            lazy.remount_clean();
        }
    }

    /// Overlay `n`: lower (holding the seed under `ws/`), upper and work on the image, mounted
    /// at its own `merged` directory.
    fn overlay(&self, n: u32, seed: &[(&str, &[u8])]) -> PathBuf {
        let layers = self.mnt.join(format!("o{n}"));
        let [lower, upper, work, merged] = ["lower", "upper", "work", "merged"].map(|d| layers.join(d));
        write_seed(&lower.join("ws"), seed);
        for d in [&upper, &work, &merged] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("mkdir {}: {e}", d.display()));
        }
        let options = format!(
            "lowerdir={},upperdir={},workdir={}",
            lower.display(),
            upper.display(),
            work.display()
        );
        let guard = mount_at(&["-t", "overlay", "-o", &options, "overlay"], &merged)
            .unwrap_or_else(|why| panic!("{why}"));
        self.overlays.borrow_mut().push(guard);
        merged
    }
}

fn write_seed(root: &Path, seed: &[(&str, &[u8])]) {
    std::fs::create_dir_all(root).unwrap_or_else(|e| panic!("mkdir {}: {e}", root.display()));
    for (rel, bytes) in seed {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
        }
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// `mount ARGS... MNT`; the guard unmounts it.
fn mount_at(args: &[&str], mnt: &Path) -> Result<MountGuard, String> {
    run_ok(Command::new("mount").args(args).arg(mnt))?;
    Ok(MountGuard(mnt.to_path_buf()))
}

/// A sparse image made by `kind`'s mkfs in `dir`, loop-mounted at `mnt` (the loop device is
/// freed at the unmount: `mount -o loop` sets it to clear itself).
fn mount_image(kind: Kind, dir: &Path, mnt: &Path) -> Result<MountGuard, String> {
    let Some((mkfs, args, mib, package)) = kind.image() else {
        return Err(format!("{kind:?} is not an image"));
    };
    let image = dir.join("image");
    let file = std::fs::File::create(&image).map_err(|e| format!("create the image: {e}"))?;
    file.set_len(mib << 20)
        .map_err(|e| format!("size the image: {e}"))?;
    run_ok(Command::new(mkfs).args(args).arg(&image))
        .map_err(|why| format!("{why} (is {package} installed?)"))?;
    if kind == Kind::Ext4 {
        let header = run_ok(Command::new("dumpe2fs").arg("-h").arg(&image))?;
        let disk_like = header.contains("has_journal") && header.contains("Block size:               4096");
        assert!(
            disk_like,
            "mkfs.ext4 made no journal or not 4 KiB blocks:\n{header}"
        );
    }
    mount_at(&["-o", "loop", image.to_str().unwrap_or_default()], mnt)
}
