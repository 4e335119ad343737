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
    let unreadable = State::File(FileState::unreadable(1, false));
    let paired = pair_renames(vec![
        added("b", file(2)),
        deleted("a", file(1)),
        added("u2", unreadable.clone()),
        deleted("u1", unreadable),
    ]);
    assert_eq!(shown(&paired), ["added b", "deleted a", "added u2", "deleted u1"]);
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
