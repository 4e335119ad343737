//! The workspace: a root, a state dir and a `FILEWATCHD_HOME`, each in its own temp dir; the
//! files in the root; and the environment every `filewatchd` process of the workspace gets.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{BIN, machine};

/// Environment variables of the user that would point the binary somewhere else.
pub(super) const FOREIGN_ENV: &[&str] = &[
    "FILEWATCHD_URL",
    "FILEWATCHD_TOKEN",
    "FILEWATCHD_SESSION",
    "XDG_STATE_HOME",
];

/// A workspace root, its state dir and a `FILEWATCHD_HOME`, each in its own temp dir (or, for
/// `Workspace::at`, the root and state dir the test chose, on the file system it chose).
pub struct Workspace {
    /// The temp dirs removed when the workspace is dropped.
    _dirs: Vec<tempfile::TempDir>,
    home_dir: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
    /// The machine as every test finds it, for as long as the workspace lives (`machine`).
    _machine: machine::Shared,
}

impl Workspace {
    pub fn new() -> Workspace {
        let root_dir = tempfile::Builder::new().prefix("fwd-root-").tempdir().unwrap();
        let state_dir = tempfile::Builder::new().prefix("fwd-state-").tempdir().unwrap();
        let home_dir = tempfile::Builder::new().prefix("fwd-home-").tempdir().unwrap();
        let root = root_dir.path().canonicalize().unwrap();
        let state = state_dir.path().to_path_buf();
        Workspace {
            _dirs: vec![root_dir, state_dir],
            home_dir,
            root,
            state,
            _machine: machine::shared(),
        }
    }

    /// A workspace whose root and state dir are these directories (made if missing, e.g. on
    /// a mount the test made; left in place when dropped: whoever made the mount removes them).
    pub fn at(root: &Path, state: &Path) -> Workspace {
        for dir in [root, state] {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        }
        let home_dir = tempfile::Builder::new().prefix("fwd-home-").tempdir().unwrap();
        Workspace {
            _dirs: Vec::new(),
            home_dir,
            root: root.canonicalize().unwrap(),
            state: state.canonicalize().unwrap(),
            _machine: machine::shared(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn state_dir(&self) -> &Path {
        &self.state
    }

    /// The `FILEWATCHD_HOME` every process of this workspace gets.
    pub fn home(&self) -> &Path {
        self.home_dir.path()
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file (creating its parent directories); the write has completed on return.
    pub fn write(&self, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    pub fn remove(&self, rel: impl AsRef<Path>) {
        std::fs::remove_file(self.path(rel)).unwrap();
    }

    /// Runs `bash -c script` in the root and asserts that it succeeded.
    pub fn sh(&self, script: &str) {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("set -euo pipefail\n{script}"))
            .current_dir(&self.root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "script failed ({}):\n{script}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A `filewatchd` command with this workspace's environment (and none of the user's).
    /// Hooks do not start daemons (`FILEWATCHD_AUTOSTART=0`): a test that means them to
    /// removes the variable and stops what they start (`tests/common/lifecycle.rs`).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(BIN);
        for var in FOREIGN_ENV {
            cmd.env_remove(var);
        }
        cmd.env("FILEWATCHD_HOME", self.home());
        cmd.env("FILEWATCHD_AUTOSTART", "0");
        cmd.current_dir(&self.root);
        cmd
    }

    /// `serve --root ROOT --state-dir STATE`: the arguments every daemon of this workspace gets.
    pub(super) fn serve_args(&self) -> Vec<&OsStr> {
        vec![
            OsStr::new("serve"),
            OsStr::new("--root"),
            self.root.as_os_str(),
            OsStr::new("--state-dir"),
            self.state_dir().as_os_str(),
            // The FILEWATCHD_TEST_* variables some tests set are honoured only with it.
            OsStr::new("--test-knobs"),
        ]
    }
}

/// Deterministic bytes that do not compress (so every version costs store space), unique to
/// `seed`.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}
