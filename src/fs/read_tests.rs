//! Unit tests of `fs::read`: what the index lets an observation skip, and what it may not.

use super::*;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: RootDir,
    blobs: BlobDir,
    rel: RelPath,
}

fn fixture(content: &[u8]) -> Fixture {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(tmp.path().join("ws")).expect("ws");
    std::fs::write(tmp.path().join("ws/f.txt"), content).expect("write");
    set_mode(&tmp.path().join("ws/f.txt"), 0o644);
    let root = RootDir::open(&tmp.path().join("ws")).expect("root");
    let blobs = BlobDir::open(tmp.path().join("blobs")).expect("blobs");
    let rel = RelPath::parse("f.txt").expect("path");
    Fixture {
        _tmp: tmp,
        root,
        blobs,
        rel,
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn observe_with(f: &Fixture, expected: &Expected) -> Present {
    match observe_expecting(&f.root, &f.rel, u64::MAX, &f.blobs, Some(expected)) {
        Observation::Present(present) => present,
        other => panic!("not present: {other:?}"),
    }
}

fn stat_of(f: &Fixture) -> StatKey {
    let meta = std::fs::metadata(f.rel.to_abs(&f.root.path)).expect("stat");
    StatKey::from_metadata(&meta)
}

#[test]
fn a_proving_stat_is_trusted_without_opening_the_file_and_a_racy_one_is_not() {
    let f = fixture(b"on disk\n");
    // What the index claims: other content. Only an observation that never read the file
    // can answer with it.
    let claimed = file_state(Hash::of(b"recorded\n"), 8, 0o644, false);
    let mut expected = Expected {
        stat: stat_of(&f),
        stat_proves: true,
        state: claimed.clone(),
    };
    let trusted = observe_with(&f, &expected);
    assert_eq!((trusted.state, trusted.saved), (claimed.clone(), Saved::Read));
    assert!(trusted.blob.is_none());
    let Observation::Present(probed) = probe_expecting(&f.root, &f.rel, u64::MAX, Some(&expected)) else {
        panic!("not present");
    };
    assert_eq!((probed.state, probed.saved), (claimed.clone(), Saved::Read));

    expected.stat_proves = false;
    let Observation::Present(probed) = probe_expecting(&f.root, &f.rel, u64::MAX, Some(&expected)) else {
        panic!("not present");
    };
    assert_eq!(probed.state, file_state(Hash::of(b"on disk\n"), 8, 0o644, false));
    let read = observe_with(&f, &expected);
    assert_eq!(read.state, file_state(Hash::of(b"on disk\n"), 8, 0o644, false));
    assert_eq!(read.saved, Saved::Nothing);
    assert!(read.blob.is_some(), "new content is stored");
}

#[test]
fn content_the_latest_version_holds_is_hashed_but_not_stored_again() {
    let f = fixture(b"same bytes\n");
    let latest = file_state(Hash::of(b"same bytes\n"), 11, 0o644, false);
    let expected = Expected {
        stat: StatKey {
            ino: 0,
            ..stat_of(&f)
        },
        stat_proves: true,
        state: latest.clone(),
    };
    let present = observe_with(&f, &expected);
    assert_eq!((present.state, present.saved), (latest, Saved::Store));
    assert!(present.blob.is_none() && present.streamed.is_none());
}

#[test]
fn a_large_file_the_store_holds_is_not_streamed_into_it_again() {
    let big = vec![7u8; (STREAM_ABOVE + 1) as usize];
    let f = fixture(&big);
    let latest = file_state(Hash::of(&big), big.len() as u64, 0o644, false);
    let expected = Expected {
        stat: StatKey {
            ino: 0,
            ..stat_of(&f)
        },
        stat_proves: false,
        state: latest.clone(),
    };
    let present = observe_with(&f, &expected);
    assert_eq!((present.state, present.saved), (latest, Saved::Store));
    assert!(present.streamed.is_none());

    // Another large content of the same size is streamed in as ever.
    let other = Expected {
        state: file_state(Hash::of(b"else"), big.len() as u64, 0o644, false),
        ..expected
    };
    let streamed = observe_with(&f, &other);
    assert_eq!(
        streamed.state,
        file_state(Hash::of(&big), big.len() as u64, 0o644, false)
    );
    assert!(
        streamed.streamed.is_some(),
        "new content is streamed into the store"
    );
    f.blobs.discard(streamed.streamed.as_deref().expect("temp"));
}

#[test]
fn a_chmod_is_seen_through_a_stat_that_proved_the_file_unchanged() {
    let f = fixture(b"secret\n");
    let recorded = file_state(Hash::of(b"secret\n"), 7, 0o644, false);
    let expected = Expected {
        stat: stat_of(&f),
        stat_proves: true,
        state: recorded.clone(),
    };
    assert_eq!(observe_with(&f, &expected).state, recorded);

    set_mode(&f.rel.to_abs(&f.root.path), 0o600);
    let seen = observe_with(&f, &expected);
    assert_eq!(seen.saved, Saved::Store, "re-read: the stat no longer proves it");
    assert_eq!(seen.state, file_state(Hash::of(b"secret\n"), 7, 0o600, false));
    assert_ne!(seen.state, recorded, "a chmod alone is a new state");
}
