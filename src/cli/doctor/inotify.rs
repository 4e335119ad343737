//! The kernel's inotify limits against what the workspace needs: one watch per tracked
//! directory (`max_user_watches`), one instance per daemon (`max_user_instances`), and a queue
//! deep enough for a burst (`max_queued_events`). Each limit is the lowest of the system's
//! (`fs.inotify.*`) and the user namespace's (`user.max_inotify_*`), as the kernel applies them.

use std::path::Path;

use super::{Check, Context};
use crate::cli::style::{count, counted};
use crate::paths::RelPath;
use crate::watch::filter::IgnoreRules;

/// A limit and the sysctl that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub value: u64,
    pub sysctl: &'static str,
}

const WATCHES: &[(&str, &str)] = &[
    (
        "/proc/sys/fs/inotify/max_user_watches",
        "fs.inotify.max_user_watches",
    ),
    ("/proc/sys/user/max_inotify_watches", "user.max_inotify_watches"),
];
const INSTANCES: &[(&str, &str)] = &[
    (
        "/proc/sys/fs/inotify/max_user_instances",
        "fs.inotify.max_user_instances",
    ),
    (
        "/proc/sys/user/max_inotify_instances",
        "user.max_inotify_instances",
    ),
];
const QUEUE: &[(&str, &str)] = &[(
    "/proc/sys/fs/inotify/max_queued_events",
    "fs.inotify.max_queued_events",
)];

/// The lowest of the limits that can be read.
fn read_limit(files: &[(&str, &'static str)]) -> Option<Limit> {
    files
        .iter()
        .filter_map(|(file, sysctl)| {
            let value = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
            Some(Limit { value, sysctl })
        })
        .min_by_key(|limit| limit.value)
}

pub fn checks(ctx: &Context) -> Vec<Check> {
    let watcher = ctx.status.as_ref().map(|s| &s.watcher);
    let (dirs, unwatched) = match watcher {
        Some(w) => (
            (w.watched_dirs + w.unwatched_dirs) as u64,
            w.unwatched_dirs as u64,
        ),
        None => (count_dirs(&ctx.root, &ctx.state_dir), 0),
    };
    let unknown = |name: &str| Check::warning(name, "cannot read the limit from /proc/sys");
    vec![
        read_limit(WATCHES).map_or_else(
            || unknown("inotify.max_user_watches"),
            |l| watches_verdict(l, dirs, unwatched),
        ),
        read_limit(INSTANCES).map_or_else(
            || unknown("inotify.max_user_instances"),
            |l| instances_verdict(l, instances_in_use()),
        ),
        read_limit(QUEUE).map_or_else(
            || unknown("inotify.max_queued_events"),
            |l| queue_verdict(l, watcher.map_or(0, |w| w.overflows)),
        ),
    ]
}

/// `sudo sysctl KEY=VALUE`, and how to keep it over a reboot.
fn raise(limit: Limit, to: u64) -> String {
    format!(
        "sudo sysctl {key}={to} (to keep it: echo {key}={to} | sudo tee /etc/sysctl.d/90-filewatchd.conf)",
        key = limit.sysctl
    )
}

/// One watch per tracked directory; other programs' watches count against the same limit.
pub fn watches_verdict(limit: Limit, dirs: u64, unwatched: u64) -> Check {
    let name = "inotify.max_user_watches";
    let to = (dirs.saturating_mul(2)).next_power_of_two().max(524_288);
    // The root and each tracked directory: what `status` calls the watcher's dirs.
    let tracked = count(dirs, "directory to watch", "directories to watch");
    if unwatched > 0 || dirs > limit.value {
        let left = unwatched.max(dirs.saturating_sub(limit.value));
        return Check::warning(
            name,
            format!(
                "{tracked}, over the limit of {} watches: {left} of them are verified by a stat walk at every turn marker and rollback instead",
                limit.value
            ),
        )
        .fix(raise(limit, to));
    }
    if dirs.saturating_mul(10) > limit.value.saturating_mul(8) {
        return Check::warning(
            name,
            format!(
                "{tracked} use most of the limit of {} watches (other programs' watches count too)",
                limit.value
            ),
        )
        .fix(raise(limit, to));
    }
    Check::ok(name, format!("{tracked}, limit {}", limit.value))
}

/// One instance per daemon (and per editor or tool that watches files).
pub fn instances_verdict(limit: Limit, in_use: Option<u64>) -> Check {
    let name = "inotify.max_user_instances";
    let to = limit.value.saturating_mul(2).max(1024);
    let Some(in_use) = in_use else {
        return Check::ok(name, format!("limit {}", limit.value));
    };
    let message = format!("{in_use} of {} in use by your processes", limit.value);
    if in_use >= limit.value {
        return Check::problem(name, format!("{message}: a new daemon cannot watch anything"))
            .fix(raise(limit, to));
    }
    if in_use.saturating_mul(10) >= limit.value.saturating_mul(9) {
        return Check::warning(name, message).fix(raise(limit, to));
    }
    Check::ok(name, message)
}

/// An overflowing queue costs a rescan of the whole workspace each time.
pub fn queue_verdict(limit: Limit, overflows: u64) -> Check {
    let name = "inotify.max_queued_events";
    let to = limit.value.saturating_mul(4).max(65_536);
    if overflows > 0 {
        return Check::warning(
            name,
            format!(
                "the event queue ({} events) overflowed {}: each cost a rescan of the workspace",
                limit.value,
                counted(overflows, "time")
            ),
        )
        .fix(raise(limit, to));
    }
    if limit.value < 16_384 {
        return Check::warning(
            name,
            format!("{} events, below the kernel's default of 16384", limit.value),
        )
        .fix(raise(limit, to));
    }
    Check::ok(name, format!("{} events", limit.value))
}

/// The inotify instances open by processes of this user (`anon_inode:inotify` descriptors).
fn instances_in_use() -> Option<u64> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let mine = entry
            .metadata()
            .is_ok_and(|m| crate::platform::ext::owner_of(&m) == me);
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        if !mine {
            continue;
        }
        let inotify = |fd: &std::fs::DirEntry| {
            std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == "anon_inode:inotify")
        };
        count += fds.flatten().filter(inotify).count() as u64;
    }
    Some(count)
}

/// The tracked directories of the tree (the root included), by a walk that honours the ignore
/// rules as the daemon does, for when no daemon says how many it watches.
pub fn count_dirs(root: &Path, state_dir: &Path) -> u64 {
    let globs = crate::config::Config::load(root, None)
        .map(|c| c.ignore)
        .unwrap_or_default();
    let Ok(mut rules) = IgnoreRules::new(root, state_dir, &globs) else {
        return 1;
    };
    let mut count = 1;
    let mut pending: Vec<Option<RelPath>> = vec![None];
    while let Some(dir) = pending.pop() {
        let abs = dir
            .as_ref()
            .map_or_else(|| root.to_path_buf(), |d| d.to_abs(root));
        let Ok(entries) = std::fs::read_dir(&abs) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Some(rel) = RelPath::from_abs(root, &entry.path()) else {
                continue;
            };
            if rules.is_ignored(&rel, true) {
                continue;
            }
            rules.reload_dir(Some(&rel));
            count += 1;
            pending.push(Some(rel));
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;

    const LIMIT: Limit = Limit {
        value: 10,
        sysctl: "fs.inotify.max_user_watches",
    };

    #[test]
    fn a_tree_with_more_directories_than_the_limit_is_a_warning_naming_the_sysctl() {
        let tree = tempfile::tempdir().expect("tempdir");
        let state = tempfile::tempdir().expect("state");
        for i in 0..30 {
            std::fs::create_dir_all(tree.path().join(format!("d{i}/inner"))).expect("mkdir");
        }
        std::fs::create_dir_all(tree.path().join(".git/objects")).expect("mkdir");
        std::fs::create_dir_all(tree.path().join("target/debug")).expect("mkdir");
        std::fs::write(tree.path().join(".gitignore"), "target/\n").expect("write");
        let dirs = count_dirs(tree.path(), state.path());
        assert_eq!(
            dirs, 61,
            "the root and d*/inner; .git and the ignored target/ are not tracked"
        );

        let check = watches_verdict(LIMIT, dirs, 0);
        assert_eq!(check.verdict, Verdict::Warning, "{check:?}");
        assert!(
            check
                .message
                .contains("61 directories to watch, over the limit of 10"),
            "{check:?}"
        );
        let fix = check.fix.unwrap_or_default();
        assert!(
            fix.starts_with("sudo sysctl fs.inotify.max_user_watches=524288"),
            "{fix}"
        );

        assert_eq!(
            watches_verdict(LIMIT, 9, 0).verdict,
            Verdict::Warning,
            "90 % of the limit"
        );
        assert_eq!(watches_verdict(LIMIT, 5, 0).verdict, Verdict::Ok);
        assert_eq!(
            watches_verdict(LIMIT, 5, 2).verdict,
            Verdict::Warning,
            "the daemon says some are unwatched"
        );
    }

    #[test]
    fn instances_and_the_queue_are_judged_by_what_is_used() {
        let limit = Limit {
            value: 128,
            sysctl: "fs.inotify.max_user_instances",
        };
        assert_eq!(instances_verdict(limit, Some(128)).verdict, Verdict::Problem);
        assert_eq!(instances_verdict(limit, Some(120)).verdict, Verdict::Warning);
        assert_eq!(instances_verdict(limit, Some(3)).verdict, Verdict::Ok);
        let queue = Limit {
            value: 16_384,
            sysctl: "fs.inotify.max_queued_events",
        };
        let overflowed = queue_verdict(queue, 2);
        assert_eq!(overflowed.verdict, Verdict::Warning);
        assert!(
            overflowed
                .fix
                .is_some_and(|f| f.contains("fs.inotify.max_queued_events=65536"))
        );
        assert_eq!(queue_verdict(queue, 0).verdict, Verdict::Ok);
    }
}
