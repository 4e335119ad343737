//! Pins (docs/guarantees.md, "Words"): named checkpoints. A pin names one point of the history, the end of a
//! turn, a time, or the moment it is made, as the sequence number whose state it stands for;
//! retention keeps every version that state needs (`store::gc`), and a rollback to the pin
//! (`restore::Operation::Pin`) sets the workspace to it with the conflict checks of a time
//! rollback. Pins are made and removed by the engine, behind the barrier, so "now" means
//! every write made before the request.

use rusqlite::Connection;

use crate::history::{self, BeforeHistory};
use crate::model::now_ms;
use crate::retention;
use crate::sessions::turns::{self, LookupError, TurnSelector};
use crate::store::pins::{self as sql, NewPin, PinRow};
use crate::store::sql::latest_seq;

pub const NAME_RULE: &str = "a pin name is 1 to 128 characters of A-Z a-z 0-9 . _ : -";

/// Whether `name` may name a pin: the characters of a session name.
pub fn is_valid_name(name: &str) -> bool {
    crate::sessions::is_valid_name(name)
}

/// The point a new pin stands for.
#[derive(Debug, Clone)]
pub enum Point {
    /// The workspace now: every write made before the request.
    Now,
    /// The end of a turn of a session.
    TurnEnd { session: String, turn: TurnSelector },
    /// The workspace as recorded at a time (milliseconds since the epoch).
    Time { at_ms: i64 },
}

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("{0:?} is not a pin name: {NAME_RULE}")]
    BadName(String),
    #[error("a pin named {0:?} already exists: choose another name, or unpin it first")]
    Exists(String),
    #[error("no pin named {0:?}")]
    Unknown(String),
    #[error(transparent)]
    Lookup(#[from] LookupError),
    #[error("turn {turn} of session {session:?} is still open: a pin at its end waits until it ends")]
    TurnOpen { session: String, turn: i64 },
    #[error("{0} is in the future: a pin names a point of the history already recorded")]
    Future(String),
    #[error(transparent)]
    BeforeHistory(#[from] BeforeHistory),
    #[error("that state (seq {seq}) was removed by retention; the oldest exact state is seq {horizon}")]
    Expired { seq: i64, horizon: i64 },
    #[error("the index failed: {0}")]
    Store(#[from] rusqlite::Error),
    #[error(transparent)]
    Refused(#[from] crate::refusal::Refusal),
}

/// Makes the pin `name` at `point`, in one transaction.
pub fn create(conn: &mut Connection, name: &str, point: &Point) -> Result<PinRow, PinError> {
    if !is_valid_name(name) {
        return Err(PinError::BadName(name.to_string()));
    }
    let tx = conn.transaction()?;
    if sql::find(&tx, name)?.is_some() {
        return Err(PinError::Exists(name.to_string()));
    }
    let pin = resolve(&tx, name, point)?;
    if let Some(expired) = retention::expired(&tx, pin.seq)? {
        return Err(PinError::Expired {
            seq: expired.seq,
            horizon: expired.horizon,
        });
    }
    sql::insert(&tx, &pin)?;
    let row = sql::find(&tx, name)?.ok_or_else(|| PinError::Unknown(name.to_string()))?;
    tx.commit()?;
    tracing::info!(pin = name, seq = row.seq, "pinned");
    Ok(row)
}

/// The pin `name` at `point`: the sequence number it stands for, with the session, turn and
/// time it was asked by.
fn resolve<'a>(conn: &Connection, name: &'a str, point: &Point) -> Result<NewPin<'a>, PinError> {
    let mut pin = NewPin {
        name,
        seq: 0,
        session_id: None,
        turn: None,
        at: None,
        created_at: now_ms(),
    };
    match point {
        Point::Now => pin.seq = latest_seq(conn)?,
        Point::TurnEnd { session, turn } => {
            let row = turns::find(conn, session, turn)?;
            let Some(end) = row.end_seq else {
                return Err(PinError::TurnOpen {
                    session: session.clone(),
                    turn: row.number,
                });
            };
            pin.seq = end;
            pin.session_id = crate::store::sql::session_id(conn, session)?;
            pin.turn = Some(row.number);
        }
        Point::Time { at_ms } => {
            if *at_ms > pin.created_at {
                return Err(PinError::Future(crate::model::format_time(*at_ms)));
            }
            pin.seq = history::seq_at_time(conn, *at_ms)??;
            pin.at = Some(*at_ms);
        }
    }
    Ok(pin)
}

/// Removes the pin `name`; the answer is the pin it was.
pub fn remove(conn: &mut Connection, name: &str) -> Result<PinRow, PinError> {
    let tx = conn.transaction()?;
    let pin = sql::find(&tx, name)?.ok_or_else(|| PinError::Unknown(name.to_string()))?;
    sql::delete(&tx, name)?;
    tx.commit()?;
    tracing::info!(pin = name, seq = pin.seq, "unpinned");
    Ok(pin)
}

/// Every pin, oldest point first.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<PinRow>> {
    sql::all(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db;

    fn index() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = db::open_writer(&dir.path().join("index.sqlite")).expect("open");
        (dir, conn)
    }

    #[test]
    fn a_pin_is_made_once_listed_and_removed() {
        let (_dir, mut conn) = index();
        let made = create(&mut conn, "release-1", &Point::Now).expect("pin");
        assert_eq!(
            (made.name.as_str(), made.seq, made.session.as_deref()),
            ("release-1", 0, None)
        );
        assert!(matches!(
            create(&mut conn, "release-1", &Point::Now),
            Err(PinError::Exists(_))
        ));
        assert!(matches!(
            create(&mut conn, "no spaces", &Point::Now),
            Err(PinError::BadName(_))
        ));
        assert_eq!(list(&conn).expect("list"), vec![made.clone()]);
        assert_eq!(remove(&mut conn, "release-1").expect("unpin"), made);
        assert!(matches!(
            remove(&mut conn, "release-1"),
            Err(PinError::Unknown(_))
        ));
        assert!(list(&conn).expect("list").is_empty());
    }

    #[test]
    fn a_time_in_the_future_or_an_unknown_turn_is_no_point() {
        let (_dir, mut conn) = index();
        let future = Point::Time {
            at_ms: now_ms() + 60_000,
        };
        assert!(matches!(
            create(&mut conn, "p", &future),
            Err(PinError::Future(_))
        ));
        let turn = Point::TurnEnd {
            session: "nobody".into(),
            turn: TurnSelector::Number(1),
        };
        assert!(matches!(create(&mut conn, "p", &turn), Err(PinError::Lookup(_))));
        assert!(list(&conn).expect("list").is_empty());
    }
}
