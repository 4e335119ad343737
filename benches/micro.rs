//! Micro-benchmarks (criterion): blob put/get (small and large), hashing, version insert
//! batches, planning a 1,000-path rollback, and the state of all paths at a boundary.
//!
//! `cargo bench --bench micro` (add `-- --quick` for a short run).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use rusqlite::Connection;

use filewatchd::fs::read::RootDir;
use filewatchd::model::{Content, FileState, Hash, Origin, StatKey, State};
use filewatchd::paths::RelPath;
use filewatchd::restore::{Workspace, plan};
use filewatchd::store::blobs::BlobDir;
use filewatchd::store::{db, read_blob, sql};

const SMALL: usize = 4 * 1024;
const LARGE: usize = 1024 * 1024;

/// Source-like text, different for every `seed`.
fn text(len: usize, seed: u64) -> Vec<u8> {
    let words = [
        "fn", "let", "mut", "self", "match", "impl", "struct", "Result", "value", "index",
    ];
    let mut out = format!("// {seed}\n").into_bytes();
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.extend_from_slice(words[(x >> 33) as usize % words.len()].as_bytes());
        out.push(if x.is_multiple_of(7) { b'\n' } else { b' ' });
    }
    out.truncate(len);
    out
}

fn store() -> (tempfile::TempDir, Connection, BlobDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = db::open_writer(&dir.path().join("index.sqlite")).expect("db");
    let blobs = BlobDir::open(dir.path().join("blobs")).expect("blobs");
    (dir, conn, blobs)
}

fn blobs_and_hashing(c: &mut Criterion) {
    let (_dir, conn, blobs) = store();
    let mut seed = 0u64;
    for (name, len) in [("small", SMALL), ("large", LARGE)] {
        c.bench_function(&format!("hash {name}"), |b| {
            let data = text(len, 1);
            b.iter(|| Hash::of(black_box(&data)));
        });
        c.bench_function(&format!("blob put {name}"), |b| {
            b.iter_batched(
                || {
                    seed += 1;
                    text(len, seed)
                },
                |data| {
                    let blob = blobs.prepare(Hash::of(&data), &data).expect("put");
                    sql::insert_blob(&conn, &blob).expect("row");
                },
                BatchSize::SmallInput,
            );
        });
        let data = text(len, u64::MAX - len as u64);
        let hash = Hash::of(&data);
        sql::insert_blob(&conn, &blobs.prepare(hash, &data).expect("put")).expect("row");
        c.bench_function(&format!("blob get {name}"), |b| {
            b.iter(|| read_blob(&conn, &blobs, black_box(hash)).expect("get"));
        });
    }
}

fn file_state(n: u64) -> State {
    State::File(FileState {
        content: Content::Stored(Hash::of(&n.to_le_bytes())),
        size: n,
        executable: false,
        mode: Some(0o644),
    })
}

fn stat(n: u64) -> StatKey {
    StatKey {
        dev: 1,
        ino: n,
        size: n,
        mtime_ns: n as i64,
        ctime_ns: n as i64,
        mode: 0o100644,
    }
}

/// Records one version of each of `paths` in one transaction, as a capture batch does.
fn record_batch(conn: &mut Connection, paths: &[RelPath], generation: u64) {
    let tx = conn.transaction().expect("tx");
    for (i, path) in paths.iter().enumerate() {
        let n = generation * 1_000_000 + i as u64;
        let id = sql::ensure_path(&tx, path).expect("path");
        let seq = sql::insert_version(&tx, id, &file_state(n), Origin::Turn, None, None, 0).expect("version");
        sql::set_path_state(&tx, id, seq, &stat(n), 0).expect("state");
    }
    tx.commit().expect("commit");
}

fn paths(n: usize) -> Vec<RelPath> {
    (0..n)
        .map(|i| RelPath::from_fs_bytes(format!("d{:03}/f{i:06}.rs", i % 700).into_bytes()))
        .collect()
}

fn versions_and_boundaries(c: &mut Criterion) {
    let (_dir, mut conn, _blobs) = store();
    let batch = paths(1000);
    let mut generation = 0;
    c.bench_function("insert 1,000 versions in one transaction", |b| {
        b.iter(|| {
            generation += 1;
            record_batch(&mut conn, &batch, generation);
        });
    });
    let (_dir, mut conn, _blobs) = store();
    let all = paths(20_000);
    record_batch(&mut conn, &all, 1);
    let boundary = sql::latest_seq(&conn).expect("seq");
    record_batch(&mut conn, &all[..5000], 2);
    c.bench_function("state of all 20,000 paths at a boundary", |b| {
        b.iter(|| sql::states_at(&conn, black_box(boundary)).expect("states"));
    });
}

/// A workspace whose 1,000 files were all changed since a boundary, and its index.
fn planning(c: &mut Criterion) {
    let (dir, mut conn, blobs) = store();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    let files: Vec<RelPath> = (0..1000)
        .map(|i| RelPath::from_fs_bytes(format!("src/f{i:04}.rs").into_bytes()))
        .collect();
    let versions = |conn: &mut Connection, generation: u64| {
        let tx = conn.transaction().expect("tx");
        for (i, path) in files.iter().enumerate() {
            let data = text(SMALL, generation * 10_000 + i as u64);
            std::fs::write(path.to_abs(&root), &data).expect("write");
            let hash = Hash::of(&data);
            sql::insert_blob(&tx, &blobs.prepare(hash, &data).expect("put")).expect("blob");
            let state = State::File(FileState {
                content: Content::Stored(hash),
                size: data.len() as u64,
                executable: false,
                mode: Some(0o644),
            });
            let id = sql::ensure_path(&tx, path).expect("path");
            sql::insert_version(&tx, id, &state, Origin::Turn, None, None, 0).expect("version");
        }
        tx.commit().expect("commit");
    };
    versions(&mut conn, 1);
    let boundary = sql::latest_seq(&conn).expect("seq");
    versions(&mut conn, 2);
    let ws = workspace(&root, blobs);
    c.bench_function("plan a 1,000-path rollback (dry run)", |b| {
        b.iter(|| {
            let plan = plan::build(&conn, &ws, None, boundary, &[]).expect("plan");
            assert_eq!(plan.steps.len(), 1000);
            plan
        });
    });
}

/// What planning needs: the root and the blobs, no watcher.
fn workspace(root: &Path, blobs: BlobDir) -> Workspace {
    Workspace::new(
        Arc::new(RootDir::open(root).expect("root")),
        Arc::new(blobs),
        64 * 1024 * 1024,
    )
}

criterion_group!(benches, blobs_and_hashing, versions_and_boundaries, planning);
criterion_main!(benches);
