//! G13 after a power cut: the workspace and the state dir on LazyFS, which drops
//! every write not fsynced when told to (`lazyfs.sh crash`), as a power cut does. The power is
//! cut (the daemon killed with `kill -9`, LazyFS's unsynced writes dropped, the file system
//! unmounted and mounted again) during capture, right after a turn end answered 200, during a
//! rollback, right after a rollback answered 200, during a collection, and once a version
//! recorded while nobody waited has been checkpointed. After each restart
//! every acknowledged turn is listed with its changes, every version the record lists reads
//! back intact, an acknowledged rollback is on disk (an interrupted one is finished by the
//! restart, which says so), the record equals the disk, and no blob the index names is gone
//! (`power_loss/checks.rs`).
//!
//! LazyFS loses file data only: a create, rename or unlink reaches its backing directory at
//! once, so these tests cannot catch a missing fsync of a directory. Where LazyFS cannot be
//! built or mounted the tests say why and skip; under CI=true a skip is a failure.

mod checks;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::*;
use checks::*;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);
const PAUSED: &str = "FILEWATCHD_TEST_PAUSE_AFTER reached";
const GC_HELD: &str = "the collection is held";

/// A workspace and its state dir on a LazyFS mount.
struct Power {
    ws: Workspace,
    lazy: LazyFs,
}

impl Power {
    /// `None` (the test skips, saying why) where LazyFS cannot run.
    fn on_lazyfs() -> Option<Power> {
        let lazy = match LazyFs::mount() {
            Ok(lazy) => lazy,
            Err(why) => {
                skip(&format!("LazyFS cannot run here: {why}"));
                return None;
            }
        };
        let ws = Workspace::at(&lazy.mnt.join("ws"), &lazy.mnt.join("state"));
        Some(Power { ws, lazy })
    }

    /// The power cut once the daemon is dead: every write not fsynced is dropped, and the file
    /// system is mounted again.
    fn cut_after_kill(&mut self) {
        self.lazy.crash();
        self.lazy.remount();
    }

    fn cut(&mut self, d: Daemon) {
        d.kill9();
        self.cut_after_kill();
    }

    /// A clean stop, and the remount LazyFS needs before the next start (`common::lazyfs`).
    fn stop(&mut self, d: Daemon) {
        d.stop();
        self.lazy.remount_clean();
    }

    /// Writes a file as a careful program does: the file and its directory fsynced.
    fn write_synced(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        write_synced(&self.ws.path(rel), bytes.as_ref());
    }

    /// Everything the record must still say after the cut.
    #[track_caller]
    fn check(&self, d: &Daemon, acked: &[Acked], what: &str) {
        assert_turns_kept(d, acked, what);
        let paths = known_paths(self.ws.root(), acked, d);
        assert_versions_intact(d, &paths, what);
        assert_record_is_disk(d, self.ws.root(), what);
        assert_blobs_intact(self.ws.state_dir(), what);
    }
}

fn write_synced(path: &Path, bytes: &[u8]) {
    let sync = || -> std::io::Result<()> {
        let parent = path.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(parent)?;
        let mut file = std::fs::File::create(path)?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.sync_all()?;
        std::fs::File::open(parent)?.sync_all()
    };
    sync().unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Files the rollback scenarios' turn rewrites, in two directories.
const FILES: usize = 6;

fn file(i: usize) -> String {
    format!("d{}/f{i}.txt", i % 2)
}

/// A turn that rewrote every file and made one (all fsynced); the daemon stopped. Returns the
/// turn as acknowledged and the trees before and after it.
fn turn_to_undo(p: &mut Power) -> (Acked, Tree, Tree) {
    for i in 0..FILES {
        p.write_synced(&file(i), format!("before {i}\n"));
    }
    let d = Daemon::start(&p.ws);
    let before = snapshot(p.ws.root());
    d.turn_start("s", "rewrite everything");
    for i in 0..FILES {
        p.write_synced(&file(i), format!("after {i}, a longer line than before\n"));
    }
    p.write_synced("d0/new.txt", "made by the turn\n");
    let acked = Acked::of("s", &d.turn_end("s"));
    let after = snapshot(p.ws.root());
    p.stop(d);
    (acked, before, after)
}

#[test]
fn a_power_cut_during_capture_loses_no_acknowledged_turn() {
    let Some(mut p) = Power::on_lazyfs() else {
        return;
    };
    p.write_synced("base.txt", "there from the start\n");
    let d = Daemon::start(&p.ws);
    d.turn_start("s", "one");
    p.write_synced("one/a.txt", noise(1, 100_000));
    p.write_synced("one/b.txt", "small\n");
    let acked = vec![Acked::of("s", &d.turn_end("s"))];
    d.turn_start("s", "two, cut short");
    let seq = d.status()["latest_seq"].as_u64().unwrap_or(0);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, dir) = (stop.clone(), p.ws.path("stream"));
        std::thread::spawn(move || {
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                write_synced(&dir.join(format!("f{}.bin", i % 40)), &noise(i, 20_000));
            }
        })
    };
    // The cut comes while capture records the stream: some of it is recorded, more is coming.
    let recording = poll_until(DEADLINE, || {
        let now = d.status()["latest_seq"].as_u64().unwrap_or(0);
        (now > seq + 5).then_some(())
    });
    assert!(recording.is_some(), "capture never recorded the stream");
    d.kill9();
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("the writer");
    p.cut_after_kill();

    let d = Daemon::start(&p.ws);
    p.check(&d, &acked, "cut during capture");
    d.stop();
}

#[test]
fn a_power_cut_right_after_a_turn_end_keeps_the_turn() {
    let Some(mut p) = Power::on_lazyfs() else {
        return;
    };
    p.write_synced("kept.txt", "before\n");
    p.write_synced("gone.txt", "deleted by the turn\n");
    let d = Daemon::start(&p.ws);
    d.turn_start("s", "the turn");
    p.write_synced("kept.txt", "after, fsynced by the agent\n");
    p.write_synced("big.bin", noise(7, 200_000));
    std::fs::remove_file(p.ws.path("gone.txt")).expect("rm");
    // An agent that never fsyncs: the power cut takes this file's bytes from the disk.
    p.ws.write("unsynced.txt", "written, never fsynced\n");
    let acked = vec![Acked::of("s", &d.turn_end("s"))];
    p.cut(d);

    assert_eq!(
        p.ws.read("unsynced.txt"),
        b"",
        "the power cut dropped what was not fsynced"
    );
    let d = Daemon::start(&p.ws);
    p.check(&d, &acked, "cut right after the turn end");
    let history = d.history("unsynced.txt");
    assert_eq!(latest(&history)["origin"], "offline", "{history:#}");
    d.stop();
}

/// A batch nobody waited for commits without an fsync (`engine::checkpoint`); once the
/// worker has been quiet, a checkpoint makes it durable, and a power cut after it keeps it.
#[test]
fn a_version_recorded_while_nobody_waited_is_durable_once_the_workspace_is_quiet() {
    let Some(mut p) = Power::on_lazyfs() else {
        return;
    };
    const CHECKPOINT: &str = "engine::checkpoint: checkpoint";
    let d = Daemon::start_with_env(&p.ws, &[], &[("RUST_LOG", "filewatchd=debug")]);
    d.turn_start("s", "a turn, ended before the write");
    let acked = vec![Acked::of("s", &d.turn_end("s"))];
    // The turn's own commits are checkpointed first: the next checkpoint comes after the write.
    wait_for_log(&d, CHECKPOINT, || None);
    let before = d.stderr().matches(CHECKPOINT).count();
    let seq = d.status()["latest_seq"].as_u64().unwrap_or(0);
    p.write_synced("outside.txt", "written with no turn open, by a careful program\n");
    // Watched through `status`, which passes no barrier: a read that does (`history`) would
    // have the worker record the write at once, as a command waiting for it, with an fsync.
    let recorded = poll_until(DEADLINE, || {
        (d.status()["latest_seq"].as_u64().unwrap_or(0) > seq).then_some(())
    });
    assert!(recorded.is_some(), "never recorded:\n{}", d.stderr());
    let checkpointed = poll_until(DEADLINE, || {
        (d.stderr().matches(CHECKPOINT).count() > before).then_some(())
    });
    assert!(
        checkpointed.is_some(),
        "no checkpoint after the write:\n{}",
        d.stderr()
    );
    p.cut(d);

    let d = Daemon::start(&p.ws);
    p.check(&d, &acked, "cut once quiet");
    let history = d.history("outside.txt");
    assert_eq!(latest(&history)["origin"], "outside", "{history:#}");
    d.stop();
}

#[test]
fn a_power_cut_during_a_rollback_is_finished_by_the_restart() {
    let Some(mut p) = Power::on_lazyfs() else {
        return;
    };
    let (acked, before, after) = turn_to_undo(&mut p);
    let half = (FILES / 2).to_string();
    let env = [
        ("FILEWATCHD_TEST_PAUSE_AFTER", half.as_str()),
        ("RUST_LOG", "filewatchd=info"),
    ];
    let d = Daemon::start_with_env(&p.ws, &[], &env);
    let answer = d.post_detached("/v1/sessions/s/undo", json!({}));
    wait_for_log(&d, PAUSED, || answer.try_recv().ok());
    p.cut(d);

    let d = Daemon::start(&p.ws);
    assert_tree_eq(&before, &snapshot(p.ws.root()), "the restart finished the undo");
    let recovery = &d.status()["recovery"];
    assert_eq!(recovery["outcome"], "finished", "{recovery:#}");
    assert_eq!(recovery["left"], json!([]), "{recovery:#}");
    p.check(&d, &[acked], "cut during the undo");
    rollback_applied(d.redo("s", json!({})));
    assert_tree_eq(&after, &snapshot(p.ws.root()), "the redo after the recovery");
    d.stop();
}

#[test]
fn a_power_cut_right_after_a_rollback_keeps_it_on_disk() {
    let Some(mut p) = Power::on_lazyfs() else {
        return;
    };
    let (acked, before, after) = turn_to_undo(&mut p);
    let d = Daemon::start(&p.ws);
    all_done(&rollback_applied(d.undo("s", json!({}))));
    p.cut(d);

    let d = Daemon::start(&p.ws);
    assert_tree_eq(
        &before,
        &snapshot(p.ws.root()),
        "the acknowledged undo, after the cut",
    );
    assert_eq!(d.status()["recovery"], Value::Null, "nothing was left to finish");
    p.check(&d, &[acked], "cut right after the undo");
    rollback_applied(d.redo("s", json!({})));
    assert_tree_eq(&after, &snapshot(p.ws.root()), "the redo after the cut");
    d.stop();
}

/// Eight turns over twelve files of blobs stored as files (over the inline limit), retention
/// keeping the last two turns: a collection has versions to collapse and blob files to remove.
fn history_to_collect(p: &mut Power) -> Vec<Acked> {
    p.write_synced(".filewatchd.toml", "keep_days = 0\nkeep_turns = 2\n");
    let d = Daemon::start(&p.ws);
    let mut acked = Vec::new();
    for t in 1..=8u64 {
        d.turn_start("s", &format!("turn {t}"));
        for i in (t % 3..12).step_by(3) {
            p.write_synced(&format!("g/{i:02}.bin"), noise(100 * t + i, 70_000));
        }
        acked.push(Acked::of("s", &d.turn_end("s")));
    }
    p.stop(d);
    acked.split_off(acked.len() - 2)
}

#[test]
fn a_power_cut_during_a_collection_leaves_nothing_dangling() {
    let Some(mut p) = Power::on_lazyfs() else {
        return;
    };
    let kept = history_to_collect(&mut p);
    for at in ["collapse:2", "sweep:1"] {
        let env = [
            ("FILEWATCHD_TEST_GC_STEP_ROWS", "3"),
            ("FILEWATCHD_TEST_GC_HOLD_AT", at),
        ];
        let d = Daemon::start_with_env(&p.ws, &[], &env);
        let answer = d.post_detached("/v1/gc", json!({}));
        wait_for_log(&d, GC_HELD, || answer.try_recv().ok());
        p.cut(d);
        let d = Daemon::start(&p.ws);
        p.check(&d, &kept, &format!("cut during the collection, held at {at}"));
        p.stop(d);
    }
    let d = Daemon::start(&p.ws);
    let report = d.gc(false);
    assert!(report["blobs_removed"].as_u64() > Some(0), "{report:#}");
    p.check(&d, &kept, "the collection finished after the cuts");
    d.stop();
}

/// Polls the daemon's log for `needle`; fails if `answered` says the request ended first.
#[track_caller]
fn wait_for_log(d: &Daemon, needle: &str, answered: impl Fn() -> Option<Option<(u16, Value)>>) {
    let reached = poll_until(DEADLINE, || {
        if let Some(reply) = answered() {
            panic!("answered before {needle:?}: {reply:?}\n{}", d.stderr());
        }
        d.stderr().contains(needle).then_some(())
    });
    assert!(reached.is_some(), "never logged {needle:?}:\n{}", d.stderr());
}
