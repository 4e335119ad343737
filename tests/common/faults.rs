//! Faults and confinement: strace attached to the daemon to inject failing system calls,
//! resource limits set on it, and daemons run through a wrapper (`prlimit`, a user namespace)
//! or in a mount namespace of their own. Each says so and lets the test skip where the machine
//! cannot do it.

use super::skip::skip;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::daemon::StateLocation;
use super::workspace::FOREIGN_ENV;
use super::{BIN, Daemon, START_DEADLINE, Workspace, poll_until};

/// True when this process may make mount namespaces and mount a tmpfs in one (root, with
/// `unshare` and `nsenter` present). Tests that need one print why they skip otherwise.
pub fn can_unshare_mounts() -> bool {
    let ok = Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount -t tmpfs none /mnt",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("nsenter").arg("--version").output().is_ok();
    if !ok {
        skip("needs root, unshare -m and nsenter (mount namespaces)");
    }
    ok
}

/// Whether `unshare -Ur` works here and lets a shell inside set its own inotify watch limit
/// (`user.max_inotify_watches` is per user namespace); prints why not when it does not.
pub fn user_namespace_watch_limit_works() -> bool {
    let probe = Command::new("unshare")
        .args(["-Ur", "sh", "-c", "echo 50 > /proc/sys/user/max_inotify_watches"])
        .stdin(Stdio::null())
        .output();
    match probe {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            skip(&format!(
                "cannot set an inotify watch limit in a user namespace: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            false
        }
        Err(err) => {
            skip(&format!("cannot run unshare: {err}"));
            false
        }
    }
}

/// `prlimit --pid PID --fsize=LIMIT` (soft limit only, so it can be raised again).
pub fn set_file_size_limit(pid: u32, limit: &str) -> bool {
    Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--fsize={limit}:unlimited")])
        .status()
        .is_ok_and(|s| s.success())
}

impl Workspace {
    /// `PROGRAM ARGS... filewatchd serve --root ROOT --state-dir STATE`: the daemon started by
    /// a wrapper (`unshare`, `prlimit`) that ends by running the rest of its arguments, with
    /// this workspace's environment.
    pub fn wrapped_serve(&self, program: &str, args: &[&str]) -> Command {
        let env = self.command();
        let mut wrapped = Command::new(program);
        wrapped.args(args).arg(BIN).args(self.serve_args());
        for (name, value) in env.get_envs() {
            match value {
                Some(value) => wrapped.env(name, value),
                None => wrapped.env_remove(name),
            };
        }
        wrapped.current_dir(self.root());
        wrapped
    }
}

impl Daemon {
    /// Starts `cmd` (from `Workspace::wrapped_serve`), which must exec the daemon in its own
    /// process (the pid in `daemon.json` is the child's), and waits until it answers.
    pub fn start_command(ws: &Workspace, cmd: Command) -> Daemon {
        Daemon::spawn(cmd, StateLocation::Dir(ws.state_dir().to_path_buf()))
    }

    /// The daemon run in a mount namespace of its own: `unshare -m --propagation private sh -c
    /// SETUP`, where SETUP (run as root in the namespace, with `$ROOT` and `$STATE` set) mounts
    /// what the test needs, then `exec`s the daemon. `state_dir` then names the state as the
    /// namespace shows it (through `/proc/PID/root`). `None` when namespaces are not available.
    pub fn start_in_mount_namespace(ws: &Workspace, setup: &str, env: &[(&str, &str)]) -> Option<Daemon> {
        if !can_unshare_mounts() {
            return None;
        }
        let mut cmd = Command::new("unshare");
        for var in FOREIGN_ENV {
            cmd.env_remove(var);
        }
        let script = format!("set -e\n{setup}\nexec \"$0\" \"$@\"");
        cmd.args(["-m", "--propagation", "private", "sh", "-c", &script, BIN])
            .args(ws.serve_args())
            .env("FILEWATCHD_HOME", ws.home())
            .env("ROOT", ws.root())
            .env("STATE", ws.state_dir())
            .current_dir(ws.root());
        for (name, value) in env {
            cmd.env(name, value);
        }
        Some(Daemon::spawn(
            cmd,
            StateLocation::Namespaced(ws.state_dir().to_path_buf()),
        ))
    }

    /// Runs `sh -c script` as root inside the daemon's mount namespace (`nsenter`).
    pub fn in_namespace(&self, script: &str) {
        let out = Command::new("nsenter")
            .args(["-t", &self.pid.to_string(), "-m", "sh", "-c", script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nsenter script failed: {script}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `strace` attached to a running daemon (all its threads), injecting faults; detached when
/// dropped. `None` (the test skips) where strace cannot attach.
pub struct Strace {
    child: Child,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Strace {
    /// `strace -f -p PID ARGS...` (e.g. `-e inject=pwrite64:error=EIO`), once every thread
    /// is attached.
    pub fn attach(pid: u32, args: &[&str]) -> Option<Strace> {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("trace");
        let stderr = dir.path().join("stderr");
        let child = Command::new("strace")
            .args(["-f", "-y", "-p", &pid.to_string(), "-o"])
            .arg(&log)
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn();
        let Ok(mut child) = child else {
            skip("strace is not installed");
            return None;
        };
        // Some(true) once attached, Some(false) if strace exited without attaching.
        let attached = poll_until(START_DEADLINE, || {
            let said = std::fs::read_to_string(&stderr).unwrap_or_default();
            if said.contains("attached") {
                return Some(true);
            }
            child.try_wait().unwrap().map(|_| false)
        });
        if attached != Some(true) {
            let said = std::fs::read_to_string(&stderr).unwrap_or_default();
            skip(&format!("strace cannot attach: {said}"));
            child.kill().ok();
            return None;
        }
        Some(Strace {
            child,
            log,
            _dir: dir,
        })
    }

    /// Polls until a thread of `pid` is stopped at the entry of system call `nr` (x86_64
    /// numbers), where a `delay_enter` holds it. (A call strace also fails shows as -1 there:
    /// it has replaced the call by none.)
    pub fn wait_in_syscall(pid: u32, nr: i32) -> bool {
        let prefix = format!("{nr} ");
        let held = || {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
            tasks
                .flatten()
                .any(|task| {
                    std::fs::read_to_string(task.path().join("syscall"))
                        .is_ok_and(|call| call.starts_with(&prefix))
                })
                .then_some(())
        };
        poll_until(std::time::Duration::from_secs(30), held).is_some()
    }

    /// What was traced so far.
    pub fn trace(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Detaches (SIGTERM: strace detaches from every thread before it exits).
    pub fn detach(mut self) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .ok();
        self.child.wait().ok();
    }
}

impl Drop for Strace {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
