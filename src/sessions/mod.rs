//! Sessions and forks (docs/rollback.md, "Forks"): a fork's history up to its fork point is its
//! parent's. A `Lineage` is a session with its ancestors, each up to where the next one
//! forked: it finds turns by number across the fork (inherited turns keep their numbers) and
//! says which versions are the session's own work.

pub(crate) mod pick;
pub mod review;
pub mod turns;

use rusqlite::Connection;

use crate::store::sql::{self, SessionRow, TurnRow};
use turns::LookupError;

/// What a session name may be (docs/guarantees.md, "Words"), as the API and the command line say it.
pub const NAME_RULE: &str =
    "a session name is 1 to 128 characters of A-Z a-z 0-9 . _ : -, and not dots alone";

/// Whether `name` may name a session: 1 to 128 characters of `A-Za-z0-9._:-`, not only dots
/// (a URL path segment `.` or `..` is resolved away by browsers and HTTP clients, so the
/// session's turns could never be asked for).
pub fn is_valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
        && !name.bytes().all(|b| b == b'.')
}

/// The session named `name`, with its ancestors.
pub fn named(conn: &Connection, name: &str) -> Result<Lineage, LookupError> {
    let id = sql::session_id(conn, name)?.ok_or_else(|| LookupError::UnknownSession(name.to_string()))?;
    Ok(Lineage::of(conn, id)?)
}

/// Every session, oldest first, with its turn counts and fork point.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<SessionRow>> {
    crate::store::timeline::list_sessions(conn)
}

/// One link: a session, and the part of it that belongs to the lineage.
#[derive(Debug, Clone)]
struct Link {
    session_id: i64,
    /// Turns numbered up to this (inclusive) are taken from this link.
    max_turn: i64,
    /// Versions up to this sequence number are this link's work in the lineage.
    max_seq: i64,
}

#[derive(Debug, Clone)]
pub struct Lineage {
    links: Vec<Link>,
}

/// Forks deeper than this are refused (and a cycle could never be built through the API).
const MAX_DEPTH: usize = 64;

impl Lineage {
    pub fn of(conn: &Connection, session_id: i64) -> rusqlite::Result<Self> {
        let mut links = vec![Link {
            session_id,
            max_turn: i64::MAX,
            max_seq: i64::MAX,
        }];
        let mut current = session_id;
        while let Some((parent, fork_turn)) = sql::session_parent(conn, current)? {
            let fork_seq = sql::turn_by_number(conn, parent, fork_turn)?
                .and_then(|t| t.end_seq)
                .unwrap_or(0);
            let max_turn = links.last().map_or(fork_turn, |l| l.max_turn.min(fork_turn));
            links.push(Link {
                session_id: parent,
                max_turn,
                max_seq: fork_seq,
            });
            current = parent;
            if links.len() > MAX_DEPTH {
                break;
            }
        }
        Ok(Self { links })
    }

    pub fn session_id(&self) -> i64 {
        self.links[0].session_id
    }

    /// Turn numbers above this come from link `i` (the next link's fork turn, or 0).
    fn floor(&self, i: usize) -> i64 {
        self.links.get(i + 1).map_or(0, |next| next.max_turn)
    }

    /// The turn numbered `n` in this session's history (its own, or inherited).
    pub fn turn(&self, conn: &Connection, n: i64) -> rusqlite::Result<Option<TurnRow>> {
        for (i, link) in self.links.iter().enumerate() {
            if n > self.floor(i) && n <= link.max_turn {
                return sql::turn_by_number(conn, link.session_id, n);
            }
        }
        Ok(None)
    }

    /// The latest turn carrying this ref, own turns first.
    pub fn turn_by_ref(&self, conn: &Connection, turn_ref: &str) -> rusqlite::Result<Option<TurnRow>> {
        for (i, link) in self.links.iter().enumerate() {
            let floor = self.floor(i);
            let found = sql::turn_by_ref(conn, link.session_id, turn_ref)?;
            if let Some(turn) = found.filter(|t| t.number > floor && t.number <= link.max_turn) {
                return Ok(Some(turn));
            }
        }
        Ok(None)
    }

    /// The session's latest turn: its own, else the turn it was forked after.
    pub fn last_turn(&self, conn: &Connection) -> rusqlite::Result<Option<TurnRow>> {
        if let Some(own) = sql::last_turn(conn, self.session_id())? {
            return Ok(Some(own));
        }
        match self.links.get(1) {
            Some(parent) => self.turn(conn, parent.max_turn),
            None => Ok(None),
        }
    }

    /// Every turn of the session's history, inherited ones first, in number order.
    pub fn turns(&self, conn: &Connection) -> rusqlite::Result<Vec<TurnRow>> {
        let mut out = Vec::new();
        for (i, link) in self.links.iter().enumerate().rev() {
            let floor = self.floor(i);
            let turns = sql::list_turns(conn, link.session_id)?;
            out.extend(
                turns
                    .into_iter()
                    .filter(|t| t.number > floor && t.number <= link.max_turn),
            );
        }
        Ok(out)
    }

    /// Whether a version made by `session_id` at `seq` (a turn or a rollback of that session)
    /// is this session's own work: its own, or an ancestor's up to the fork point.
    pub fn owns(&self, session_id: Option<i64>, seq: i64) -> bool {
        let Some(session_id) = session_id else {
            return false;
        };
        self.links
            .iter()
            .any(|l| l.session_id == session_id && seq <= l.max_seq)
    }
}
