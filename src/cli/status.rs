//! `filewatchd status`: the daemon's answer (`wire::status::Status`) in lines, or as JSON.

use std::time::Duration;

use super::escape::text;
use super::print;
use super::style::{count, counted, size};
use crate::client::Client;
use crate::wire::status::{
    FailedRollback, Recovery, RescanReport, Status, StorageStatus, VerifyStatus, Watcher, WorkspaceLost,
};

pub fn run(client: &Client, json: bool) -> anyhow::Result<()> {
    let answer: Status = client.get_as("/v1/status")?;
    print::answer(&answer, json, show)
}

fn show(a: &Status) {
    if let Some(lost) = &a.workspace_lost {
        workspace_lost(lost);
    }
    println!("root:          {}", text(&a.root.to_string_lossy()));
    println!("state:         {}", text(&a.state_dir.to_string_lossy()));
    println!("daemon:        pid {}, version {}", a.pid, text(&a.version));
    println!(
        "tracked:       {}, {}, {}",
        counted(a.tracked_files.max(0) as u64, "file"),
        count(a.tracked_dirs.max(0) as u64, "directory", "directories"),
        counted(a.tracked_symlinks.max(0) as u64, "symlink")
    );
    println!(
        "store:         {} of content, index {}, latest seq {}",
        size(a.store_bytes.max(0) as u64),
        size(a.index_bytes),
        a.latest_seq
    );
    let open: Vec<String> = a
        .open_turns
        .iter()
        .map(|t| format!("{} turn {}", text(&t.session), t.turn))
        .collect();
    let open = if open.is_empty() {
        "none".to_string()
    } else {
        open.join(", ")
    };
    println!("open turns:    {open}");
    ownership(&a.ownership);
    watcher(&a.watcher);
    verify(&a.verify);
    for f in &a.failed_rollbacks {
        failed(f);
    }
    if let Some(r) = &a.recovery {
        recovered(r);
    }
}

/// Whose a write is: by process (fanotify) or by the agents' tool-call windows alone.
fn ownership(o: &crate::wire::status::Ownership) {
    match (o.by.as_str(), &o.why_not_process) {
        ("process", _) => {
            println!("owners:        by process (fanotify names each writer) and tool-call windows")
        }
        (_, Some(why)) => println!("owners:        by tool-call windows ({})", text(why)),
        _ => println!("owners:        by tool-call windows"),
    }
}

fn watcher(w: &Watcher) {
    println!(
        "watcher:       {}, {}, {}, {} vanished, {} unreadable, {} unstable",
        count(w.watched_dirs as u64, "dir watched", "dirs watched"),
        counted(w.rescans, "rescan"),
        counted(w.overflows, "overflow"),
        w.vanished,
        w.unreadable,
        w.unstable
    );
    if let Some(r) = &w.last_rescan {
        last_rescan(r);
    }
    if let Some(storage) = &w.storage_error {
        storage_error(storage);
    }
    unwatched(w);
    if let Some(degraded) = &w.degraded {
        println!("degraded:      {}", text(degraded));
    }
    if let Some(error) = &w.last_error {
        println!("last error:    {}", text(error));
    }
}

fn last_rescan(r: &RescanReport) {
    let dir = r.dir.as_deref().map_or("workspace".into(), text);
    println!(
        "last rescan:   {dir}: {} walked in {} ms, {} recorded, {} ms in all",
        counted(r.walked as u64, "path"),
        r.survey_ms,
        counted(r.recorded as u64, "version"),
        r.total_ms
    );
}

fn storage_error(storage: &StorageStatus) {
    println!(
        "storage error: {} ({}): {} not yet recorded, retried until they are; {}",
        text(&storage.message),
        storage.cause,
        counted(storage.pending as u64, "write"),
        text(&storage.remedy)
    );
}

/// The first lines of `status` when the root is lost: what happened and what to do.
fn workspace_lost(lost: &WorkspaceLost) {
    println!(
        "WORKSPACE LOST: {} {} (noticed {}).",
        text(&lost.root),
        text(&lost.what),
        text(&lost.since)
    );
    println!(
        "capture:       stopped; turn markers, rollbacks, undo and redo are refused, nothing is written"
    );
    println!("what to do:    {}", text(&lost.remedy));
}

/// The directories the inotify watch limit left unwatched, and the cost of walking them.
fn unwatched(w: &Watcher) {
    if w.unwatched_dirs == 0 {
        return;
    }
    println!(
        "unwatched:     {} over the inotify watch limit: raise fs.inotify.max_user_watches",
        counted(w.unwatched_dirs as u64, "dir")
    );
    if let Some(v) = &w.last_unwatched_verify {
        println!(
            "               verified by a stat walk at every marker and rollback: last {} ms ({} walked, {} recorded)",
            v.ms,
            counted(v.walked as u64, "path"),
            counted(v.recorded as u64, "version")
        );
    }
}

/// The verification pass's line.
fn verify(v: &VerifyStatus) {
    let span = |ms: u64| humantime::format_duration(Duration::from_millis(ms));
    let schedule = match v.interval_ms {
        None => "background pass off".to_string(),
        Some(every) => format!("at most every {} once quiet {}", span(every), span(v.quiet_ms)),
    };
    let last = match &v.last_run {
        Some(at) => format!(
            "last {}: {} in {} ms, {} changed",
            text(at),
            counted(v.last_walked as u64, "path"),
            v.last_duration_ms,
            v.last_changed
        ),
        None => "not run yet".to_string(),
    };
    println!(
        "verify:        {schedule}; {}, {} changed in all; {last}",
        counted(v.runs, "run"),
        v.changed_total
    );
}

fn failed(f: &FailedRollback) {
    println!(
        "failed:        {} #{}: {}",
        f.operation.name(),
        f.rollback_id,
        text(&f.note)
    );
}

fn recovered(r: &Recovery) {
    let note = r.note.as_deref().map_or("-".into(), text);
    println!(
        "recovered:     {} #{} interrupted by a crash, finished at start-up: {note}",
        r.operation.name(),
        r.rollback_id,
    );
}
