//! What a path held at a point of the history (`GET /v1/content`): a file's bytes or a
//! symlink's target, or why the history has none to give.

use rusqlite::Connection;

use super::BeforeHistory;
use crate::model::{self, Kind, State};
use crate::paths::RelPath;
use crate::retention::{self, Expired};
use crate::sessions::turns::{self, LookupError, TurnSelector};
use crate::store::blobs::{BlobDir, BlobError};
use crate::store::{journal, read_blob, sql};

/// A point of the history, as a content query names it.
#[derive(Debug, Clone)]
pub enum Point {
    /// The latest recorded state.
    Latest,
    Seq(i64),
    /// A time, in milliseconds since the epoch.
    Time(i64),
    /// The start of a turn.
    Before {
        session: String,
        turn: TurnSelector,
    },
    /// The end of a turn (of an open one: the latest state).
    After {
        session: String,
        turn: TurnSelector,
    },
}

/// What a path held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    File(Vec<u8>),
    /// The link's target.
    Symlink(Vec<u8>),
}

impl Content {
    pub fn kind(&self) -> Kind {
        match self {
            Self::File(_) => Kind::File,
            Self::Symlink(_) => Kind::Symlink,
        }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Self::File(bytes) | Self::Symlink(bytes) => bytes,
        }
    }
}

/// Why the history has no content to give for a path at a point.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    #[error(transparent)]
    Lookup(#[from] LookupError),
    #[error(transparent)]
    BeforeHistory(#[from] BeforeHistory),
    #[error("that state (seq {}) was removed by retention; the oldest is seq {}", .0.seq, .0.horizon)]
    Expired(Expired),
    #[error("{0} has no recorded version")]
    NeverRecorded(RelPath),
    #[error("{0} did not exist then")]
    Absent(RelPath),
    #[error("{0} was not tracked then (an ignore rule hid it): its content was not recorded")]
    Untracked(RelPath),
    #[error("{0} was over max_file_size: only its size and hash were recorded")]
    TooLarge(RelPath),
    #[error("filewatchd could not read {0} then: its content was never recorded")]
    Unreadable(RelPath),
    #[error("{0} was a directory then")]
    NotAFile(RelPath),
    /// Its recorded content cannot be read back (a damaged or missing blob).
    #[error("{0}")]
    Blob(BlobError),
    #[error("the index failed: {0}")]
    Store(#[from] rusqlite::Error),
}

/// What `path` held at `point`, with the sequence number of the version that says so.
pub fn at(
    conn: &Connection,
    blobs: &BlobDir,
    path: &RelPath,
    point: &Point,
) -> Result<(i64, Content), ContentError> {
    let seq = seq_of(conn, point)?;
    if let Some(expired) = retention::expired(conn, seq)? {
        return Err(ContentError::Expired(expired));
    }
    let path_id = sql::path_id(conn, path)?.ok_or_else(|| ContentError::NeverRecorded(path.clone()))?;
    let (seq, version) =
        journal::version_at(conn, path_id, seq)?.ok_or_else(|| ContentError::Absent(path.clone()))?;
    let content = match version {
        State::File(f) => match f.content {
            model::Content::Stored(hash) => {
                Content::File(read_blob(conn, blobs, hash).map_err(ContentError::Blob)?)
            }
            model::Content::TooLarge(_) => return Err(ContentError::TooLarge(path.clone())),
            model::Content::Unreadable => return Err(ContentError::Unreadable(path.clone())),
        },
        State::Symlink { target } => Content::Symlink(target),
        State::Dir => return Err(ContentError::NotAFile(path.clone())),
        State::Absent => return Err(ContentError::Absent(path.clone())),
        State::Untracked => return Err(ContentError::Untracked(path.clone())),
    };
    Ok((seq, content))
}

/// The sequence number a point names.
/// The sequence number a point names (the latest: `i64::MAX`).
pub fn seq_of(conn: &Connection, point: &Point) -> Result<i64, ContentError> {
    Ok(match point {
        Point::Latest => i64::MAX,
        Point::Seq(seq) => *seq,
        Point::Time(at_ms) => super::seq_at_time(conn, *at_ms)??,
        Point::Before { session, turn } => turns::find(conn, session, turn)?.start_seq,
        Point::After { session, turn } => turns::find(conn, session, turn)?.end_seq.unwrap_or(i64::MAX),
    })
}
