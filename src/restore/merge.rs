//! A session's change taken back from a file someone changed after it (docs/rollback.md,
//! "Several agents"): a three-way merge of lines, as `git revert` does. The base is what the
//! session left, one side what the file held before the session wrote it, the other the file
//! now. Changes that do not touch each other merge; changes to the same or adjacent lines
//! overlap, and the path is a conflict naming them. Text only: binary content never merges.

use std::ops::Range;

use similar::{Algorithm, DiffTag, TextDiff};

/// What the merge gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged {
    /// The file now, with the session's change taken back.
    Clean(Vec<u8>),
    /// The lines of the file now (1-based, inclusive) whose later change overlaps the
    /// session's.
    Overlap(Vec<(usize, usize)>),
    /// One side is not text (not UTF-8, or holds a NUL byte).
    NotText,
}

/// `now` with the change from `before` to `left` taken back.
pub fn take_back(left: &[u8], before: &[u8], now: &[u8]) -> Merged {
    let (Some(left), Some(before), Some(now)) = (text(left), text(before), text(now)) else {
        return Merged::NotText;
    };
    match diffy::merge(left, before, now) {
        Ok(merged) => Merged::Clean(merged.into_bytes()),
        Err(_) => Merged::Overlap(overlapping(left, before, now)),
    }
}

fn text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok().filter(|t| !t.contains('\0'))
}

/// The changes from `base` to `now` whose lines of `base` meet one of the changes from
/// `base` to `other` (the same lines, or lines next to them), as lines of `now`.
fn overlapping(base: &str, other: &str, now: &str) -> Vec<(usize, usize)> {
    let ours = changed(base, other);
    changed_with_new(base, now)
        .into_iter()
        .filter(|(old, _)| ours.iter().any(|o| touches(o, old)))
        .map(|(_, new)| (new.start + 1, new.end.max(new.start + 1)))
        .collect()
}

/// Two ranges of lines that share a line or lie next to each other (an insertion is an empty
/// range: it touches the lines on both sides).
fn touches(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start <= b.end && b.start <= a.end
}

fn changed(base: &str, side: &str) -> Vec<Range<usize>> {
    changed_with_new(base, side)
        .into_iter()
        .map(|(old, _)| old)
        .collect()
}

/// Each change's lines in `base` and in `side`.
fn changed_with_new(base: &str, side: &str) -> Vec<(Range<usize>, Range<usize>)> {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(base, side);
    diff.ops()
        .iter()
        .filter(|op| op.tag() != DiffTag::Equal)
        .map(|op| (op.old_range(), op.new_range()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEFT: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";

    fn back(before: &str, now: &str) -> Merged {
        take_back(LEFT.as_bytes(), before.as_bytes(), now.as_bytes())
    }

    #[test]
    fn changes_apart_merge_and_keep_the_later_one() {
        // The session changed line 2; someone changed line 6 after it.
        let before = LEFT.replace("two", "TWO-before");
        let now = LEFT.replace("six", "six, edited by the person");
        let expected = before.replace("six", "six, edited by the person");
        assert_eq!(back(&before, &now), Merged::Clean(expected.into_bytes()));
    }

    #[test]
    fn changes_to_the_same_lines_overlap_and_are_named() {
        let before = LEFT.replace("three", "3");
        let now = LEFT.replace("three", "three and more");
        assert_eq!(back(&before, &now), Merged::Overlap(vec![(3, 3)]));
    }

    #[test]
    fn changes_to_adjacent_lines_overlap() {
        let before = LEFT.replace("three", "3");
        let now = LEFT.replace("four", "4");
        assert!(matches!(back(&before, &now), Merged::Overlap(lines) if lines == vec![(4, 4)]));
    }

    #[test]
    fn a_session_that_added_lines_has_them_taken_out_around_a_later_edit() {
        let before = "one\ntwo\nsix\nseven\n";
        let left = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
        let now = "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\n";
        let merged = take_back(left.as_bytes(), before.as_bytes(), now.as_bytes());
        assert_eq!(merged, Merged::Clean(b"ONE\ntwo\nsix\nseven\n".to_vec()));
    }

    #[test]
    fn binary_content_never_merges() {
        let binary = b"\x00\x01\x02";
        assert_eq!(take_back(binary, b"a\n", b"b\n"), Merged::NotText);
        assert_eq!(take_back(b"a\n", b"\xff\xfe", b"b\n"), Merged::NotText);
    }

    #[test]
    fn nothing_changed_since_gives_the_before_state() {
        let before = LEFT.replace("five", "5");
        assert_eq!(back(&before, LEFT), Merged::Clean(before.into_bytes()));
    }
}
