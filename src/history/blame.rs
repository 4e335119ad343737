//! Blame: each line of a text version attributed to the version that introduced it, by
//! walking the path's versions in order and diffing each with the one before (Myers, line by
//! line: O((N+M)·D) per pair, so a file's whole life costs its total edit distance). A line
//! an edit leaves alone keeps its version; a line it adds or changes takes the new one. A
//! file deleted (or replaced by a directory or symlink, or hidden by an ignore rule) and made
//! again starts over: its lines are the new file's. A version whose content cannot be read as
//! text (binary, too large, unreadable) breaks the chain the same way.

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
    let (binary, too_large) = (file.unreadable, file.too_large);
    let mut out = Blame {
        versions: Vec::new(),
        target,
        binary,
        too_large,
        lines: Vec::new(),
    };
    if !binary && !too_large {
        let life = life_start(&versions[..=target]);
        let texts = (life..=target)
            .map(|i| Ok((i, text_of(conn, blobs, &versions[i].version.state)?)))
            .collect::<Result<Vec<_>, BlameError>>()?;
        match attribute(texts.iter().map(|(i, t)| (*i, t.as_deref()))) {
            Some(lines) => out.lines = lines,
            None => out.binary = true,
        }
    }
    out.versions = versions;
    Ok(out)
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
    if file.too_large || file.unreadable {
        return Ok(None);
    }
    let bytes = read_blob(conn, blobs, file.hash)?;
    Ok(String::from_utf8(bytes).ok().filter(|t| !t.contains('\0')))
}

/// The lines of the last text given, each with the index of the version that introduced it;
/// `None` when the last is not text. A version that is not text breaks the chain: the next
/// one's lines are all its own.
pub fn attribute<'a>(texts: impl IntoIterator<Item = (usize, Option<&'a str>)>) -> Option<Vec<BlameLine>> {
    let mut previous: Option<(&str, Vec<usize>)> = None;
    for (index, text) in texts {
        previous = text.map(|text| {
            let lines = split_lines(text);
            let by = match &previous {
                Some((old, old_by)) => carry(&split_lines(old), old_by, &lines, index),
                None => vec![index; lines.len()],
            };
            (text, by)
        });
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

    fn blamed(texts: &[Option<&str>]) -> Vec<(String, usize)> {
        let lines = attribute(texts.iter().copied().enumerate()).unwrap_or_default();
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
        assert!(attribute([(0, Some("a\n")), (1, None)]).is_none());
    }

    #[test]
    fn a_line_moved_back_is_the_version_that_brought_it_back() {
        let got = blamed(&[Some("x\ny\n"), Some("y\n"), Some("x\ny\n")]);
        assert_eq!(got, pairs(&[("x", 2), ("y", 0)]));
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
        let got = attribute(texts.iter().map(|t| Some(t.as_str())).enumerate()).unwrap_or_default();
        assert_eq!(got.len(), 2000 + 499);
        assert_eq!(got[0].by, 0);
        assert_eq!((got[3].text.as_str(), got[3].by), ("edited by 1", 1));
        assert_eq!((got[1497].text.as_str(), got[1497].by), ("edited by 499", 499));
        assert_eq!((got[2498].text.as_str(), got[2498].by), ("added by 499", 499));
    }
}
