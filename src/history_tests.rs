//! Rename pairing (`pair_renames`) on changes built by hand: no index, no daemon.

use super::{Change, ChangeKind, pair_renames};
use crate::model::fixtures::{file, path};
use crate::model::{FileState, State};

fn change(p: &str, kind: ChangeKind, before: State, after: State) -> Change {
    Change {
        path: path(p),
        from: None,
        kind,
        before,
        after,
        ambiguous: false,
        decided: None,
        last_present: None,
    }
}

fn added(p: &str, state: State) -> Change {
    change(p, ChangeKind::Added, State::Absent, state)
}

fn deleted(p: &str, state: State) -> Change {
    change(p, ChangeKind::Deleted, state, State::Absent)
}

/// Each change as "path" or "from -> path", with its kind.
fn shown(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .map(|c| match &c.from {
            Some(from) => format!("{} {} -> {}", c.kind.name(), from.to_text(), c.path.to_text()),
            None => format!("{} {}", c.kind.name(), c.path.to_text()),
        })
        .collect()
}

#[test]
fn a_deleted_and_an_added_file_with_the_same_content_are_one_rename() {
    let paired = pair_renames(vec![added("new.txt", file(1)), deleted("old.txt", file(1))]);
    assert_eq!(shown(&paired), ["renamed old.txt -> new.txt"]);
    assert_eq!(paired[0].before, file(1));
}

#[test]
fn different_content_or_an_unreadable_file_is_no_rename() {
    let unreadable = State::File(FileState::unreadable(1, 0o100644));
    let paired = pair_renames(vec![
        added("b", file(2)),
        deleted("a", file(1)),
        added("u2", unreadable.clone()),
        deleted("u1", unreadable),
    ]);
    assert_eq!(shown(&paired), ["added b", "deleted a", "added u2", "deleted u1"]);
}

/// `mv a b && chmod 600 b` is no rename (as `chmod +x` never was): the bits are part of what
/// moved. A version recorded before bits were pairs by its executable bit alone.
#[test]
fn other_permission_bits_are_no_rename() {
    let with_mode = |mode| match file(1) {
        State::File(f) => State::File(FileState { mode, ..f }),
        other => other,
    };
    let paired = pair_renames(vec![added("b", with_mode(Some(0o600))), deleted("a", file(1))]);
    assert_eq!(shown(&paired), ["added b", "deleted a"]);
    let paired = pair_renames(vec![added("b", with_mode(None)), deleted("a", with_mode(None))]);
    assert_eq!(shown(&paired), ["renamed a -> b"]);
}

#[test]
fn the_same_file_name_is_preferred_among_equal_contents() {
    let paired = pair_renames(vec![
        deleted("x/one.txt", file(1)),
        deleted("y/two.txt", file(1)),
        added("z/two.txt", file(1)),
    ]);
    assert_eq!(
        shown(&paired),
        ["deleted x/one.txt", "renamed y/two.txt -> z/two.txt"]
    );
}

#[test]
fn a_symlink_pairs_by_its_target_and_a_directory_by_its_renamed_children() {
    let link = |t: &[u8]| State::Symlink { target: t.to_vec() };
    let paired = pair_renames(vec![
        deleted("old", State::Dir),
        deleted("old/a.txt", file(1)),
        added("new", State::Dir),
        added("new/a.txt", file(1)),
        deleted("l1", link(b"target")),
        added("l2", link(b"target")),
    ]);
    assert_eq!(
        shown(&paired),
        [
            "renamed old -> new",
            "renamed old/a.txt -> new/a.txt",
            "renamed l1 -> l2"
        ]
    );
}

#[test]
fn a_file_edited_then_moved_pairs_by_what_it_last_held() {
    let mut gone = deleted("old.txt", file(1));
    gone.last_present = Some(file(2));
    let paired = pair_renames(vec![gone, added("new.txt", file(2))]);
    assert_eq!(shown(&paired), ["renamed old.txt -> new.txt"]);
    assert_eq!(paired[0].before, file(1), "before: as the turn began");
}

/// Many crates moved at once, each holding the same license file: every listing pairs each
/// license with the crate its other files came from, whatever order the changes come in.
#[test]
fn equal_files_pair_with_the_directory_the_other_moves_came_from() {
    let mut changes = Vec::new();
    for (n, (old, new)) in [
        ("grep-cli", "crates/cli"),
        ("globset", "crates/globset"),
        ("ignore", "crates/ignore"),
    ]
    .into_iter()
    .enumerate()
    {
        changes.push(deleted(old, State::Dir));
        changes.push(deleted(&format!("{old}/COPYING"), file(100)));
        changes.push(deleted(&format!("{old}/lib.rs"), file(n as u8 + 1)));
        changes.push(added(new, State::Dir));
        changes.push(added(&format!("{new}/COPYING"), file(100)));
        changes.push(added(&format!("{new}/lib.rs"), file(n as u8 + 1)));
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    let expected = [
        "renamed grep-cli -> crates/cli",
        "renamed grep-cli/COPYING -> crates/cli/COPYING",
        "renamed globset -> crates/globset",
        "renamed globset/COPYING -> crates/globset/COPYING",
        "renamed ignore -> crates/ignore",
        "renamed ignore/COPYING -> crates/ignore/COPYING",
    ];
    for _ in 0..20 {
        let paired = shown(&pair_renames(changes.clone()));
        for rename in expected {
            assert!(
                paired.iter().any(|p| p == rename),
                "{rename} missing from {paired:?}"
            );
        }
        assert!(paired.iter().all(|p| p.starts_with("renamed")), "{paired:?}");
    }
}

/// Without other moves to follow, equal files pair by the nearest path.
#[test]
fn equal_files_pair_by_the_nearest_path() {
    let paired = pair_renames(vec![
        added("a/x/LICENSE", file(7)),
        added("b/y/LICENSE", file(7)),
        deleted("a/old/LICENSE", file(7)),
        deleted("b/old/LICENSE", file(7)),
    ]);
    assert_eq!(
        shown(&paired),
        [
            "renamed a/old/LICENSE -> a/x/LICENSE",
            "renamed b/old/LICENSE -> b/y/LICENSE"
        ]
    );
}
