//! Turns: how a request names one (`TurnSelector`), finding it (`find`, `LookupError`), and
//! opening, closing and forking them (`start`, `end`, `fork`: called by the worker once the
//! barrier has recorded every write that came before the marker, so a turn's `start_seq` /
//! `end_seq` split the history exactly).

use rusqlite::{Connection, TransactionBehavior};

use super::Lineage;
use crate::model::now_ms;
use crate::store::sql::{self, TurnRow};

/// A session or turn a request names that does not exist.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error("no session named {0:?}")]
    UnknownSession(String),
    #[error("session {session:?} has no turn {turn}")]
    UnknownTurn { session: String, turn: String },
    #[error("the index failed: {0}")]
    Store(#[from] rusqlite::Error),
}

#[derive(Debug)]
pub struct TurnStarted {
    pub turn: TurnRow,
    /// The session's turn that was still open and was ended first.
    pub ended: Option<TurnRow>,
}

/// How a request names a turn: by number, by the agent's ref, or the open one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnSelector {
    Number(i64),
    Ref(String),
    Current,
}

impl TurnSelector {
    pub fn parse(text: &str) -> Self {
        if text == "current" {
            return Self::Current;
        }
        match text.parse::<i64>() {
            Ok(n) => Self::Number(n),
            Err(_) => Self::Ref(text.to_string()),
        }
    }
}

/// On the wire a turn is its number, or a string read as `parse` reads it (a ref or `current`).
impl serde::Serialize for TurnSelector {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => serializer.serialize_i64(*n),
            Self::Ref(text) => serializer.serialize_str(text),
            Self::Current => serializer.serialize_str("current"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for TurnSelector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Number(i64),
            Text(String),
        }
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Number(n) => Self::Number(n),
            Wire::Text(text) => Self::parse(&text),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Lookup(#[from] LookupError),
    #[error("turn {turn} of session {session:?} is not open")]
    NotOpen { session: String, turn: i64 },
    #[error("turn {turn} of session {session:?} is still open: end it first")]
    StillOpen { session: String, turn: i64 },
    #[error("a session named {0:?} already exists")]
    SessionExists(String),
    #[error("the index failed: {0}")]
    Store(#[from] rusqlite::Error),
    #[error(transparent)]
    Refused(#[from] crate::refusal::Refusal),
}

/// What a turn-start marker says besides its session.
#[derive(Debug, Clone, Default)]
pub struct TurnMarker {
    pub turn_ref: Option<String>,
    pub label: Option<String>,
    /// The agent whose hook sent it: stored on the session.
    pub agent: Option<String>,
}

pub fn start(conn: &mut Connection, session: &str, marker: &TurnMarker) -> Result<TurnStarted, TurnError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_ms();
    let seq = sql::latest_seq(&tx)?;
    let session_id = match sql::session_id(&tx, session)? {
        Some(id) => id,
        None => sql::create_session(&tx, session, now)?,
    };
    if let Some(agent) = &marker.agent {
        crate::store::timeline::set_session_agent(&tx, session_id, agent)?;
    }
    let (turn_ref, label) = (marker.turn_ref.as_deref(), marker.label.as_deref());
    let last = Lineage::of(&tx, session_id)?.last_turn(&tx)?;
    let ended = match last.as_ref() {
        Some(turn) if turn.end_seq.is_none() && turn.session_id == session_id => {
            sql::end_turn(&tx, turn.id, seq, now)?;
            sql::turn_by_number(&tx, session_id, turn.number)?
        }
        _ => None,
    };
    let number = last.map_or(1, |t| t.number + 1);
    sql::insert_turn(&tx, session_id, number, turn_ref, label, seq, now)?;
    let turn = sql::turn_by_number(&tx, session_id, number)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    crate::store::owners::inherit_windowed(&tx, turn.id, session_id)?;
    tx.commit()?;
    Ok(TurnStarted { turn, ended })
}

pub fn end(
    conn: &mut Connection,
    session: &str,
    selector: &TurnSelector,
    label: Option<&str>,
) -> Result<TurnRow, TurnError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let turn = find(&tx, session, selector)?;
    if turn.end_seq.is_some() {
        return Err(TurnError::NotOpen {
            session: session.to_string(),
            turn: turn.number,
        });
    }
    let seq = sql::latest_seq(&tx)?;
    sql::end_turn(&tx, turn.id, seq, now_ms())?;
    if let Some(label) = label.filter(|_| turn.label.is_none()) {
        sql::set_turn_label(&tx, turn.id, label)?;
    }
    let ended = sql::turn_by_number(&tx, turn.session_id, turn.number)?
        .ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    tx.commit()?;
    Ok(ended)
}

/// Resolves a session name and a turn selector, or says which of the two is unknown.
pub fn find(conn: &Connection, session: &str, selector: &TurnSelector) -> Result<TurnRow, LookupError> {
    let lineage = super::named(conn, session)?;
    let found = match selector {
        TurnSelector::Number(n) => lineage.turn(conn, *n)?,
        TurnSelector::Ref(r) => lineage.turn_by_ref(conn, r)?,
        TurnSelector::Current => lineage.last_turn(conn)?,
    };
    found.ok_or_else(|| LookupError::UnknownTurn {
        session: session.to_string(),
        turn: match selector {
            TurnSelector::Number(n) => n.to_string(),
            TurnSelector::Ref(r) => r.clone(),
            TurnSelector::Current => "yet".to_string(),
        },
    })
}

/// Every open turn, of every session, oldest first.
pub fn open(conn: &Connection) -> rusqlite::Result<Vec<TurnRow>> {
    sql::open_turns(conn)
}

/// Forks `parent` after one of its ended turns into a new session (docs/rollback.md, "Forks").
pub fn fork(
    conn: &mut Connection,
    parent: &str,
    new_session: &str,
    selector: &TurnSelector,
) -> Result<TurnRow, TurnError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let turn = find(&tx, parent, selector)?;
    if turn.end_seq.is_none() {
        return Err(TurnError::StillOpen {
            session: parent.to_string(),
            turn: turn.number,
        });
    }
    if sql::session_id(&tx, new_session)?.is_some() {
        return Err(TurnError::SessionExists(new_session.to_string()));
    }
    let parent_id =
        sql::session_id(&tx, parent)?.ok_or_else(|| LookupError::UnknownSession(parent.to_string()))?;
    sql::create_fork(&tx, new_session, parent_id, turn.number, now_ms())?;
    tx.commit()?;
    Ok(turn)
}
