//! Blame: each line of a text version attributed to the version that introduced it, by
//! walking the path's versions in order and diffing each with the one before (Myers, line by
//! line: O((N+M)·D) per pair, so a file's whole life costs its total edit distance). A line
//! an edit leaves alone keeps its version; a line it adds or changes takes the new one. A
//! file deleted (or replaced by a directory or symlink, or hidden by an ignore rule) and made
//! again starts over: its lines are the new file's. A version whose content cannot be read as
//! text (binary, too large, unreadable) breaks the chain the same way.
//!
//! A rollback (an undo, a redo, a rollback to a boundary or a time, a revert of a file) does
//! not write lines: it brings a past state back. A version a rollback wrote whose content is
//! the content of the path's version at the point the rollback went to is blamed as that
//! version was: each line keeps the turn (and prompt) that wrote it. So after an undo and a
//! redo of a turn its lines are the turn's again; the redo of a rollback of several turns
//! gives each line back to the turn of its own; an undo of a deletion brings the file's lines
//! back with their turns; a redo restricted to some paths (or with conflicts skipped) does so
//! for the paths it wrote. Content no recorded state held (a hunk's revert) is diffed as any
//! edit: the lines it changes are the rollback's.

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;
use similar::{Algorithm, DiffOp};

use super::{PathVersion, path_versions};
use crate::model::State;
use crate::paths::RelPath;
use crate::store::blobs::{BlobDir, BlobError};
use crate::store::read_blob;

/// A blamed version: its lines, each with the index (in `versions`) of the version that
/// introduced it. `binary` and `too_large` versions have no lines.
#[derive(Debug)]
pub struct Blame {
    pub versions: Vec<PathVersion>,
    /// The index of the version blamed.
    pub target: usize,
    pub binary: bool,
    pub too_large: bool,
    pub lines: Vec<BlameLine>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlameLine {
    /// The line's text, without its line break.
    pub text: String,
    /// The index in `Blame::versions` of the version that introduced it.
    pub by: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BlameError {
    #[error("{0} has no recorded version")]
    NeverRecorded(RelPath),
    #[error("{0} has no version at or before seq {1}")]
    NotYet(RelPath, i64),
    #[error("{path} was not a file at seq {seq} (it was {kind})")]
    NotAFile {
        path: RelPath,
        seq: i64,
        kind: &'static str,
    },
    #[error("{0}")]
    Blob(#[from] BlobError),
    #[error("the index failed: {0}")]
    Store(#[from] rusqlite::Error),
}

/// Blames `path`'s latest version at or before `seq` (its latest when `None`).
pub fn blame(
    conn: &Connection,
    blobs: &BlobDir,
    path: &RelPath,
    seq: Option<i64>,
) -> Result<Blame, BlameError> {
    let versions = path_versions(conn, path)?;
    if versions.is_empty() {
        return Err(BlameError::NeverRecorded(path.clone()));
    }
    let limit = seq.unwrap_or(i64::MAX);
    let target = versions
        .iter()
        .rposition(|v| v.version.seq <= limit)
        .ok_or_else(|| BlameError::NotYet(path.clone(), limit))?;
    let state = &versions[target].version.state;
    let State::File(file) = state else {
        return Err(BlameError::NotAFile {
            path: path.clone(),
            seq: versions[target].version.seq,
            kind: state.kind().name(),
        });
    };
    let (binary, too_large) = (file.is_unreadable(), file.is_too_large());
    let mut out = Blame {
        versions: Vec::new(),
        target,
        binary,
        too_large,
        lines: Vec::new(),
    };
    if !binary && !too_large {
        let restored = restored(&versions[..=target]);
        let start = walk_start(&versions, &restored, target);
        let texts = (start..=target)
            .map(|i| text_of(conn, blobs, &versions[i].version.state))
            .collect::<Result<Vec<_>, BlameError>>()?;
        let steps = (start..=target).zip(&texts).map(|(i, text)| Step {
            index: i,
            text: text.as_deref(),
            restores: restored[i],
        });
        match attribute(steps) {
            Some(lines) => out.lines = lines,
            None => out.binary = true,
        }
    }
    out.versions = versions;
    Ok(out)
}

/// For each version, the index of the earlier version whose content it brought back: the
/// path's version at the point its rollback went to, when both are files of the same content.
fn restored(versions: &[PathVersion]) -> Vec<Option<usize>> {
    let of = |i: usize| {
        let (v, to) = (&versions[i], versions[i].restores?);
        let State::File(file) = &v.version.state else {
            return None;
        };
        let then = versions[..i]
            .partition_point(|w| w.version.seq <= to)
            .checked_sub(1)?;
        let same = matches!(&versions[then].version.state, State::File(f) if f.hash() == file.hash());
        same.then_some(then)
    };
    (0..versions.len()).map(of).collect()
}

/// Where the walk that blames `target` starts: the first version of its file's current life,
/// or earlier where a version of the walk brought back one of an earlier life (an undo of a
/// deletion), from that one's life on.
fn walk_start(versions: &[PathVersion], restored: &[Option<usize>], target: usize) -> usize {
    let mut start = life_start(&versions[..=target]);
    let mut i = target + 1;
    while i > start {
        i -= 1;
        if let Some(then) = restored[i].filter(|then| *then < start) {
            start = life_start(&versions[..=then]);
        }
    }
    start
}

/// The index of the first version of the file's current life: just after the latest version
/// that was not a file.
fn life_start(versions: &[PathVersion]) -> usize {
    versions
        .iter()
        .rposition(|v| !matches!(v.version.state, State::File(_)))
        .map_or(0, |i| i + 1)
}

/// A file version's content as text; `None` when it is not text (binary, too large,
/// unreadable).
fn text_of(conn: &Connection, blobs: &BlobDir, state: &State) -> Result<Option<String>, BlameError> {
    let State::File(file) = state else {
        return Ok(None);
    };
    let Some(hash) = file.stored() else {
        return Ok(None);
    };
    let bytes = read_blob(conn, blobs, hash)?;
    Ok(String::from_utf8(bytes).ok().filter(|t| !t.contains('\0')))
}

/// One version in the walk: its index, its content as text (`None`: not text), and the index
/// of the earlier version of the walk whose content it brought back, if any.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    pub index: usize,
    pub text: Option<&'a str>,
    pub restores: Option<usize>,
}

/// The lines of the last text given, each with the index of the version that introduced it;
/// `None` when the last is not text. A version that is not text breaks the chain: the next
/// one's lines are all its own. A version that brought an earlier one's content back takes
/// that one's attribution (kept only for the versions some later step brings back).
pub fn attribute<'a>(steps: impl IntoIterator<Item = Step<'a>>) -> Option<Vec<BlameLine>> {
    let steps: Vec<Step<'a>> = steps.into_iter().collect();
    let wanted: HashSet<usize> = steps.iter().filter_map(|s| s.restores).collect();
    let mut kept: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut previous: Option<(&str, Vec<usize>)> = None;
    for step in steps {
        previous = step.text.map(|text| {
            let lines = split_lines(text);
            let by = match (step.restores.and_then(|then| kept.get(&then)), &previous) {
                (Some(then), _) if then.len() == lines.len() => then.clone(),
                (_, Some((old, old_by))) => carry(&split_lines(old), old_by, &lines, step.index),
                (_, None) => vec![step.index; lines.len()],
            };
            (text, by)
        });
        if let Some((_, by)) = previous.as_ref().filter(|_| wanted.contains(&step.index)) {
            kept.insert(step.index, by.clone());
        }
    }
    let (text, by) = previous?;
    Some(
        split_lines(text)
            .into_iter()
            .zip(by)
            .map(|(line, by)| BlameLine {
                text: line.strip_suffix('\n').unwrap_or(line).to_string(),
                by,
            })
            .collect(),
    )
}

/// The attribution of `new`'s lines: those the diff from `old` keeps carry theirs, the rest
/// are `index`'s.
fn carry(old: &[&str], old_by: &[usize], new: &[&str], index: usize) -> Vec<usize> {
    let mut by = vec![index; new.len()];
    for op in similar::capture_diff_slices(Algorithm::Myers, old, new) {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            by[new_index..new_index + len].copy_from_slice(&old_by[old_index..old_index + len]);
        }
    }
    by
}

/// The lines of a text, each with its line break.
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps<'a>(texts: &[Option<&'a str>]) -> Vec<Step<'a>> {
        let step = |(index, text): (usize, &Option<&'a str>)| Step {
            index,
            text: *text,
            restores: None,
        };
        texts.iter().enumerate().map(step).collect()
    }

    fn blamed(texts: &[Option<&str>]) -> Vec<(String, usize)> {
        blamed_steps(steps(texts))
    }

    fn blamed_steps(steps: Vec<Step<'_>>) -> Vec<(String, usize)> {
        let lines = attribute(steps).unwrap_or_default();
        lines.into_iter().map(|l| (l.text, l.by)).collect()
    }

    fn pairs(expected: &[(&str, usize)]) -> Vec<(String, usize)> {
        expected.iter().map(|(t, i)| (t.to_string(), *i)).collect()
    }

    #[test]
    fn kept_lines_keep_their_version_and_new_ones_take_theirs() {
        let got = blamed(&[Some("a\nb\nc\n"), Some("a\nB\nc\n"), Some("a\nB\nc\nd")]);
        assert_eq!(got, pairs(&[("a", 0), ("B", 1), ("c", 0), ("d", 2)]));
    }

    #[test]
    fn a_version_that_is_not_text_starts_over() {
        let got = blamed(&[Some("a\nb\n"), None, Some("a\nb\nc\n")]);
        assert_eq!(got, pairs(&[("a", 2), ("b", 2), ("c", 2)]));
        assert!(attribute(steps(&[Some("a\n"), None])).is_none());
    }

    #[test]
    fn a_line_moved_back_is_the_version_that_brought_it_back() {
        let got = blamed(&[Some("x\ny\n"), Some("y\n"), Some("x\ny\n")]);
        assert_eq!(got, pairs(&[("x", 2), ("y", 0)]));
    }

    fn restoring<'a>(steps: &mut [Step<'a>], restores: &[(usize, usize)]) -> Vec<Step<'a>> {
        for (i, then) in restores {
            steps[*i].restores = Some(*then);
        }
        steps.to_vec()
    }

    /// Turn 1 writes a, turn 2 adds b and changes a; an undo brings turn 1's file back, a
    /// redo turn 2's: each line is its turn's again, not the rollback's.
    #[test]
    fn an_undo_and_a_redo_give_the_lines_back_to_their_turns() {
        let texts = [Some("a\n"), Some("A\nb\n"), Some("a\n"), Some("A\nb\n")];
        let undone = restoring(&mut steps(&texts[..3]), &[(2, 0)]);
        assert_eq!(blamed_steps(undone), pairs(&[("a", 0)]));
        let redone = restoring(&mut steps(&texts), &[(2, 0), (3, 1)]);
        assert_eq!(blamed_steps(redone), pairs(&[("A", 1), ("b", 1)]));
        // Without knowing what they brought back, the undo and the redo wrote the lines.
        assert_eq!(blamed(&texts), pairs(&[("A", 3), ("b", 3)]));
    }

    /// A file deleted (not text: the chain breaks) and brought back by an undo keeps the lines
    /// of the turns that wrote it; content no state held (a hunk's revert) is diffed.
    #[test]
    fn an_undone_deletion_keeps_its_lines_and_new_content_is_diffed() {
        let texts = [Some("a\n"), Some("a\nb\n"), None, Some("a\nb\n")];
        let back = restoring(&mut steps(&texts), &[(3, 1)]);
        assert_eq!(blamed_steps(back), pairs(&[("a", 0), ("b", 1)]));
        let hunk = [Some("a\nb\n"), Some("a\nB\n"), Some("x\nB\n")];
        assert_eq!(blamed(&hunk), pairs(&[("x", 2), ("B", 1)]));
    }

    /// 500 versions of a 2,000-line file, each changing one line and adding one: the walk is
    /// 500 diffs of distance ≤ 3, so its work grows with the edits, not with versions × lines².
    /// (No timing assertion: the benchmark in benches/ measures it.)
    #[test]
    fn five_hundred_versions_blame_each_line_to_its_last_edit() {
        let mut lines: Vec<String> = (0..2000).map(|i| format!("line {i}\n")).collect();
        let mut texts = vec![lines.concat()];
        for v in 1..500 {
            lines[v * 3] = format!("edited by {v}\n");
            lines.push(format!("added by {v}\n"));
            texts.push(lines.concat());
        }
        let texts: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
        let got = attribute(steps(&texts)).unwrap_or_default();
        assert_eq!(got.len(), 2000 + 499);
        assert_eq!(got[0].by, 0);
        assert_eq!((got[3].text.as_str(), got[3].by), ("edited by 1", 1));
        assert_eq!((got[1497].text.as_str(), got[1497].by), ("edited by 499", 499));
        assert_eq!((got[2498].text.as_str(), got[2498].by), ("added by 499", 499));
    }
}
