//! The doctor's checks of the workspace's own state: its daemon, the state directory's
//! permissions, the store's integrity and the free disk space under it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Check, Context};
use crate::cli::flags::ServeArgs;
use crate::cli::style::{count, size};
use crate::client::Client;
use crate::state;
use crate::wire::status::Status;

/// How long the daemon may take to answer `status`.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The daemon check (and, when it answers, what it says of capture), with what the other
/// checks need to know.
pub fn daemon(args: &ServeArgs) -> (Vec<Check>, Context) {
    let (root, state_dir) = locate(args);
    let answer = Client::discover_within(Some(&root), args.state_dir.as_deref(), ANSWER_WITHIN)
        .and_then(|client| client.get_as::<Status>("/v1/status"));
    let status = match answer {
        Ok(status) => status,
        Err(err) => {
            let check = not_answering(&root, &state_dir, &err);
            let ctx = Context {
                root,
                state_dir,
                status: None,
            };
            return (vec![check], ctx);
        }
    };
    let checks = vec![answering(&status), capture(&status), filesystem(&status)];
    let ctx = Context {
        root: status.root.clone(),
        state_dir: status.state_dir.clone(),
        status: Some(status),
    };
    (checks, ctx)
}

/// The workspace's file system and how a rollback installs files there.
fn filesystem(status: &Status) -> Check {
    let (kind, mode, probed) = match &status.filesystem {
        Some(fs) => (fs.kind.as_str(), fs.install_mode.as_str(), fs.probed),
        None => ("?", "?", false),
    };
    let how = match mode {
        "rename" => {
            "it refuses RENAME_EXCHANGE: files are installed by rename, a replaced file compared after (docs/tracking.md, Limits)"
        }
        _ => "files are installed by RENAME_EXCHANGE",
    };
    let probed = if probed {
        ""
    } else {
        " (by its type; the first rollback probes it)"
    };
    Check::ok(
        "filesystem",
        format!("{kind}, install mode {mode}: {how}{probed}"),
    )
}

/// The workspace and its state directory as the CLI would find them: `--state-dir`, else the
/// nearest directory at or above `--root` (or the current one) that has a state directory.
fn locate(args: &ServeArgs) -> (PathBuf, PathBuf) {
    let start = args
        .root
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let start = crate::platform::ext::canonical(&start).unwrap_or(start);
    if let Some(dir) = &args.state_dir {
        let recorded = std::fs::read(dir.join("root")).ok();
        let root = recorded.map_or(start, |bytes| {
            PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
        });
        return (root, dir.clone());
    }
    let Ok(home) = state::state_home() else {
        return (start.clone(), start.join(".filewatchd-state-unknown"));
    };
    let found = start.ancestors().find_map(|dir| {
        let candidate = state::project_dir(&home, dir);
        candidate
            .join("root")
            .is_file()
            .then(|| (dir.to_path_buf(), candidate))
    });
    found.unwrap_or_else(|| {
        let dir = state::project_dir(&home, &start);
        (start, dir)
    })
}

fn not_answering(root: &Path, state_dir: &Path, err: &anyhow::Error) -> Check {
    if state_dir.join("daemon.json").is_file() && state::is_held(state_dir) {
        return Check::problem(
            "daemon",
            format!("the daemon for {} does not answer: {err:#}", root.display()),
        )
        .fix("filewatchd restart");
    }
    if state::is_held(state_dir) {
        return Check::warning(
            "daemon",
            format!("the daemon for {} is still indexing it", root.display()),
        )
        .fix("wait until `filewatchd status` answers");
    }
    Check::problem("daemon", format!("no filewatchd runs for {}", root.display())).fix("filewatchd start")
}

fn answering(status: &Status) -> Check {
    let version = &status.version;
    let message = format!(
        "pid {} answers for {} (filewatchd {version})",
        status.pid,
        status.root.display()
    );
    let ours = env!("CARGO_PKG_VERSION");
    if version != ours {
        return Check::warning("daemon", format!("{message}, but this filewatchd is {ours}"))
            .fix("filewatchd restart");
    }
    Check::ok("daemon", message)
}

/// What the daemon says of capture: a lost workspace root or a storage fault is a problem.
fn capture(status: &Status) -> Check {
    if let Some(lost) = &status.workspace_lost {
        let what = format!("{} {}", lost.root, lost.what);
        return Check::problem("capture", format!("stopped: the workspace root {what}"))
            .fix(lost.remedy.clone());
    }
    if let Some(storage) = &status.watcher.storage_error {
        let message = &storage.message;
        return Check::problem("capture", format!("the store cannot take writes: {message}"))
            .fix(storage.remedy.clone());
    }
    let files = status.tracked_files.max(0) as u64;
    Check::ok(
        "capture",
        format!("recording {}", count(files, "tracked file", "tracked files")),
    )
}

/// The state directory is the owner's alone (0700), and so is the token (0600).
pub fn state_dir(ctx: &Context) -> Check {
    let dir = &ctx.state_dir;
    let Ok(meta) = std::fs::metadata(dir) else {
        return Check::warning("state_dir", format!("{} does not exist yet", dir.display()))
            .fix("filewatchd start (the first start creates it)");
    };
    let me = crate::platform::ext::euid();
    if crate::platform::ext::owner_of(&meta) != me {
        return Check::problem(
            "state_dir",
            format!(
                "{} belongs to uid {}, not to you (uid {me})",
                dir.display(),
                crate::platform::ext::owner_of(&meta)
            ),
        )
        .fix(format!("sudo chown -R {me} {}", dir.display()));
    }
    let mode = crate::platform::ext::mode_of(&meta) & 0o777;
    if crate::platform::ext::PERMISSION_BITS && mode & 0o077 != 0 {
        return Check::problem(
            "state_dir",
            format!(
                "{} is open to others (mode {mode:o}): the token and your files' history are in it",
                dir.display()
            ),
        )
        .fix(format!("chmod 700 {}", dir.display()));
    }
    let token = dir.join("token");
    match std::fs::metadata(&token).map(|m| crate::platform::ext::mode_of(&m) & 0o777) {
        Ok(mode) if crate::platform::ext::PERMISSION_BITS && mode & 0o077 != 0 => Check::problem(
            "state_dir",
            format!(
                "{} is readable by others (mode {mode:o}): anyone could drive a rollback",
                token.display()
            ),
        )
        .fix(format!("chmod 600 {}", token.display())),
        _ => Check::ok("state_dir", format!("{} (mode 700, token 600)", dir.display())),
    }
}

/// The index passes `PRAGMA quick_check` on a read-only connection.
pub fn store(ctx: &Context) -> Check {
    let db = ctx.state_dir.join("index.sqlite");
    let Ok(meta) = std::fs::metadata(&db) else {
        return Check::warning("store", format!("no index yet at {}", db.display()))
            .fix("filewatchd start (the first start indexes the workspace)");
    };
    let checked = crate::store::db::open_reader(&db)
        .map_err(|e| e.to_string())
        .and_then(|conn| {
            conn.query_row("PRAGMA quick_check", [], |row| row.get::<_, String>(0))
                .map_err(|e| e.to_string())
        });
    match checked {
        Ok(verdict) if verdict == "ok" => Check::ok(
            "store",
            format!(
                "{} (index {}): quick_check ok",
                db.display(),
                size(crate::state::index_bytes(&ctx.state_dir).max(meta.len()))
            ),
        ),
        Ok(detail) | Err(detail) => Check::problem("store", format!("{} is damaged: {detail}", db.display())).fix(
            format!(
                "filewatchd stop, then move {} (and its -wal, -shm) aside and start again: the workspace is indexed afresh, the old history stays in the moved file",
                db.display()
            ),
        ),
    }
}

/// Below this much free space the store is about to fail writes.
const LOW: u64 = 100 << 20;
/// Below this much (or 5 % of the file system) it will soon.
const SHORT: u64 = 1 << 30;

/// Free space on the file system of the state directory.
pub fn disk(ctx: &Context) -> Check {
    let existing = ctx
        .state_dir
        .ancestors()
        .find(|dir| dir.exists())
        .unwrap_or(Path::new("/"));
    match crate::platform::ext::disk_space(existing) {
        Ok((free, total)) => disk_verdict(existing, free, total),
        Err(err) => Check::warning(
            "disk",
            format!("cannot read the free space of {}: {err}", existing.display()),
        ),
    }
}

pub(super) fn disk_verdict(dir: &Path, free: u64, total: u64) -> Check {
    let message = format!(
        "{} free of {} where {} lives",
        size(free),
        size(total),
        dir.display()
    );
    let fix = "free space there; `filewatchd gc` removes history outside the retention policy (keep_days, keep_turns, max_store_bytes in .filewatchd.toml)";
    if free < LOW {
        Check::problem("disk", message).fix(fix)
    } else if free < SHORT || free.saturating_mul(20) < total {
        Check::warning("disk", message).fix(fix)
    } else {
        Check::ok("disk", message)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;

    #[test]
    fn free_space_is_a_problem_when_nearly_gone_and_a_warning_when_short() {
        let dir = Path::new("/state");
        let verdict = |free, total| disk_verdict(dir, free, total).verdict;
        assert_eq!(verdict(50 << 20, 100 << 30), Verdict::Problem);
        assert_eq!(verdict(500 << 20, 2 << 30), Verdict::Warning);
        assert_eq!(verdict(4 << 30, 100 << 30), Verdict::Warning, "under 5 %");
        assert_eq!(verdict(20 << 30, 100 << 30), Verdict::Ok);
        assert!(
            disk_verdict(dir, 50 << 20, 1 << 40)
                .fix
                .is_some_and(|f| f.contains("filewatchd gc"))
        );
    }
}
