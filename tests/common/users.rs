//! Other local users (who must not get in through filewatchd): a fresh unprivileged user made
//! with `useradd` for one test, removed when the test ends (its processes killed first, by pid),
//! commands run as it (`setpriv`), and the tree locks such a user can plant and hold
//! (`F_OFD_SETLK`, from Perl: `perl-base` is on every Debian). Needs root, `useradd`, `userdel`,
//! `setpriv` and `perl`: without them a test skips and says why, and under `CI=true` it fails
//! instead.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::poll_until;

/// How long `useradd` and `userdel` are retried while another test holds `/etc/passwd`.
const ACCOUNTS_DEADLINE: Duration = Duration::from_secs(60);

/// The sticky, world-writable directory earlier releases kept the tree locks in: every test
/// plants there too, so going back to trusting it fails them.
pub const SHARED_LOCK_DIR: &str = "/tmp/.filewatchd-trees";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A local user of its own for one test, removed when dropped.
pub struct LocalUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl LocalUser {
    /// `useradd` a user named after `tag`, this process and a counter; `None` (said) where
    /// users cannot be made here.
    pub fn create(tag: &str) -> Option<LocalUser> {
        if !can_make_users() {
            return None;
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("fwd{tag}{}x{n}", std::process::id());
        let made = poll_until(ACCOUNTS_DEADLINE, || {
            let status = Command::new("useradd")
                .args(["--no-create-home", "--user-group", "--shell", "/bin/sh", &name])
                .stderr(Stdio::null())
                .status()
                .ok()?;
            status.success().then_some(())
        });
        made.unwrap_or_else(|| panic!("useradd {name} kept failing"));
        let id = |flag: &str| -> u32 {
            let out = Command::new("id").args([flag, &name]).output().expect("id");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("a numeric id")
        };
        let (uid, gid) = (id("-u"), id("-g"));
        Some(LocalUser { name, uid, gid })
    }

    /// `program` as this user (`setpriv`), with an environment of `PATH` alone.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--init-groups")
            .arg("--")
            .arg(program)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .stdin(Stdio::null());
        cmd
    }

    /// Makes the directory `path` (its parent must exist), this user's, with `mode`.
    pub fn dir(&self, path: &Path, mode: u32) -> PathBuf {
        std::fs::create_dir(path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        self.own(path, mode);
        path.to_path_buf()
    }

    /// Gives `path` to this user, with `mode`.
    pub fn own(&self, path: &Path, mode: u32) {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).expect("chown");
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).expect("chmod");
    }

    /// Writes `text` to `path` as this user's file (mode 0644).
    pub fn write(&self, path: &Path, text: &str) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        self.own(path, 0o644);
    }

    /// A process of this user's that creates each lock file (mode 0666), writes its note and
    /// holds its write lock (`F_OFD_SETLK`), as a filewatchd would, until dropped.
    pub fn hold_locks(&self, locks: &[(PathBuf, String)]) -> LockHolder {
        let mut cmd = self.command("perl");
        cmd.arg("-e").arg(HOLD_LOCKS);
        for (path, note) in locks {
            cmd.arg(path).arg(note);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("perl");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout).read_line(&mut line).expect("read");
        assert_eq!(line, "held\n", "the planted locks are not held");
        LockHolder { child }
    }

    /// Every live process of this user's.
    fn processes(&self) -> Vec<u32> {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let wanted = format!("Uid:\t{}\t", self.uid);
        procs
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .is_ok_and(|s| s.lines().any(|l| l.starts_with(&wanted)))
                    && !super::exited(*pid)
            })
            .collect()
    }
}

/// Creates, notes and holds each `PATH NOTE` pair of its arguments, says "held", and keeps
/// them until its stdin closes.
const HOLD_LOCKS: &str = r#"
use Fcntl;
my @held;
while (@ARGV) {
    my ($path, $note) = (shift, shift);
    sysopen(my $fh, $path, O_RDWR | O_CREAT, 0666) or die "open $path: $!";
    chmod 0666, $path;
    truncate($fh, 0);
    syswrite($fh, "$note\n");
    # struct flock: l_type, l_whence, l_start, l_len, l_pid; 37 is F_OFD_SETLK.
    my $lock = pack("s s x4 q q l x4", F_WRLCK, 0, 0, 0, 0);
    fcntl($fh, 37, $lock) or die "lock $path: $!";
    push @held, $fh;
}
$| = 1;
print "held\n";
<STDIN>;
"#;

impl Drop for LocalUser {
    fn drop(&mut self) {
        let pids = self.processes();
        for pid in &pids {
            kill_by_pidfd(*pid, self.uid);
        }
        poll_until(ACCOUNTS_DEADLINE, || self.processes().is_empty().then_some(()));
        let removed = poll_until(ACCOUNTS_DEADLINE, || {
            let status = Command::new("userdel")
                .arg(&self.name)
                .stderr(Stdio::null())
                .status()
                .ok()?;
            status.success().then_some(())
        });
        if removed.is_none() {
            eprintln!("warning: userdel {} kept failing", self.name);
        }
        let _ = std::fs::remove_dir_all(format!("/tmp/filewatchd-{}", self.uid));
    }
}

/// `SIGKILL` through a pidfd, once the pidfd holds a process that still runs as `uid`.
fn kill_by_pidfd(pid: u32, uid: u32) {
    super::lifecycle::sigkill_if(pid, || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status.lines().any(|l| l.starts_with(&format!("Uid:\t{uid}\t")))
    });
}

/// The planted locks, held until dropped.
pub struct LockHolder {
    child: Child,
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn can_make_users() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        super::skip("needs root to make a second local user (useradd)");
        return false;
    }
    for tool in ["useradd", "userdel", "setpriv", "perl"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            super::skip(&format!("{tool} is not installed"));
            return false;
        }
    }
    true
}
