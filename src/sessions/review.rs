//! Reviewed marks: a user marks a turn reviewed, or one file of it; the turn's
//! answer and the timeline say so. Unmarking a turn clears its files' marks too.

use rusqlite::Connection;

use super::turns::{self, LookupError, TurnSelector};
use crate::model::now_ms;
use crate::paths::RelPath;
use crate::store::reviews;

/// A turn's marks: itself, and the files marked reviewed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    pub session: String,
    pub turn: i64,
    pub reviewed: bool,
    pub paths: Vec<RelPath>,
}

impl Review {
    /// Whether a change of the turn is reviewed: the turn is, or the file is.
    pub fn covers(&self, path: &RelPath) -> bool {
        self.reviewed || self.paths.contains(path)
    }
}

/// Marks (or with `reviewed` false, unmarks) a turn or one of its files.
pub fn mark(
    conn: &Connection,
    session: &str,
    turn: &TurnSelector,
    path: Option<&RelPath>,
    reviewed: bool,
) -> Result<Review, LookupError> {
    let found = turns::find(conn, session, turn)?;
    match (path, reviewed) {
        (None, false) => reviews::clear(conn, found.id)?,
        (path, reviewed) => reviews::set(conn, found.id, path, reviewed, now_ms())?,
    }
    Ok(of_turn(conn, found.id, &found.session, found.number)?)
}

/// The marks of the turn with this id.
pub fn of_turn(conn: &Connection, turn_id: i64, session: &str, number: i64) -> rusqlite::Result<Review> {
    let (reviewed, paths) = reviews::of_turn(conn, turn_id)?;
    Ok(Review {
        session: session.to_string(),
        turn: number,
        reviewed,
        paths,
    })
}
