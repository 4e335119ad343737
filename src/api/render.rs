//! Turning history into the JSON shapes of docs/api.md.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::history::{self, Counts, Diff};
use crate::model::{Hash, Origin, State, format_time};
use crate::paths::RelPath;
use crate::retention;
use crate::store::blobs::BlobDir;
use crate::store::sql::{SessionRow, TurnRow};
use crate::wire::session::Session;
use crate::wire::turn::{Change, Difference, StateFields, Turn, TurnSummary};

/// Which of a turn's changes an answer lists: those at or beneath `under`, `offset` first, at
/// most `limit`, diffs for those only. `counts` stay the whole turn's.
#[derive(Debug, Default)]
pub struct Changes {
    pub under: Option<crate::paths::RelPath>,
    pub offset: usize,
    pub limit: Option<usize>,
}

impl Changes {
    fn is_all(&self) -> bool {
        self.under.is_none() && self.offset == 0 && self.limit.is_none()
    }

    fn keeps(&self, change: &history::Change) -> bool {
        let Some(dir) = &self.under else {
            return true;
        };
        change.path.starts_with(dir) || change.from.as_ref().is_some_and(|f| f.starts_with(dir))
    }
}

pub fn turn(conn: &Connection, blobs: &BlobDir, turn: &TurnRow, with_diff: bool) -> rusqlite::Result<Turn> {
    turn_page(conn, blobs, turn, with_diff, &Changes::default())
}

/// A turn with the changes `page` picks (diffs for those only), serialized straight into the
/// answer: a turn can list tens of thousands of changes.
pub fn turn_page(
    conn: &Connection,
    blobs: &BlobDir,
    turn: &TurnRow,
    with_diff: bool,
    page: &Changes,
) -> rusqlite::Result<Turn> {
    let changes = history::turn_changes(conn, turn)?;
    let review = crate::sessions::review::of_turn(conn, turn.id, &turn.session, turn.number)?;
    let others = others_during(conn, turn)?;
    let kept: Vec<&history::Change> = changes.iter().filter(|c| page.keeps(c)).collect();
    let changes_total = (!page.is_all()).then_some(kept.len());
    let listed = kept
        .into_iter()
        .skip(page.offset)
        .take(page.limit.unwrap_or(usize::MAX))
        .map(|c| Change {
            reviewed: review.covers(&c.path),
            also_written_by: others.get(&c.path).cloned().unwrap_or_default(),
            ..change(c, with_diff.then(|| history::diff(conn, blobs, c)))
        })
        .collect();
    Ok(Turn {
        summary: turn_summary(conn, blobs, turn.clone(), Counts::of(&changes))?,
        reviewed: review.reviewed,
        // Retention collapsed the history before this turn's start: its list may be partial.
        expired: retention::expired(conn, turn.start_seq)?.is_some(),
        changes_total,
        changes: listed,
    })
}

/// What changed between two sequence numbers, at or beneath `under`, with diffs if asked for.
pub fn difference(
    conn: &Connection,
    blobs: &BlobDir,
    (from, to): (i64, i64),
    under: Option<&crate::paths::RelPath>,
    with_diff: bool,
) -> rusqlite::Result<Difference> {
    let page = Changes {
        under: under.cloned(),
        ..Changes::default()
    };
    let changes: Vec<history::Change> = history::changes_between(conn, from, to)?
        .into_iter()
        .filter(|c| page.keeps(c))
        .collect();
    Ok(Difference {
        from_seq: from,
        to_seq: to,
        counts: Counts::of(&changes),
        changes: changes
            .iter()
            .map(|c| change(c, with_diff.then(|| history::diff(conn, blobs, c))))
            .collect(),
    })
}

pub fn turn_summary(
    conn: &Connection,
    blobs: &BlobDir,
    turn: TurnRow,
    counts: Counts,
) -> rusqlite::Result<TurnSummary> {
    let git = crate::store::git::moved_between(conn, blobs, turn.start_seq, turn.end_seq)?;
    Ok(TurnSummary {
        session: turn.session,
        turn: turn.number,
        turn_ref: turn.turn_ref,
        label: turn.label,
        started_at: format_time(turn.started_at),
        ended_at: turn.ended_at.map(format_time),
        start_seq: turn.start_seq,
        end_seq: turn.end_seq,
        counts,
        git,
    })
}

/// One change of a turn, its diff if asked for.
fn change(change: &history::Change, diff: Option<Diff>) -> Change {
    let shown = if change.after.is_present() {
        &change.after
    } else {
        &change.before
    };
    let mode_changed = match (&change.before, &change.after) {
        (State::File(before), State::File(after)) => Some(!before.same_mode(after)),
        _ => None,
    };
    let (diff, binary) = match diff {
        Some(Diff::Text(text)) => (Some(text), false),
        Some(Diff::Binary) => (None, true),
        Some(Diff::TooLarge | Diff::None) | None => (None, false),
    };
    Change {
        path: change.path.to_text(),
        from: change.from.as_ref().map(|from| from.to_text()),
        change: change.kind,
        kind: shown.kind(),
        state: if change.after.is_present() {
            state_fields(&change.after)
        } else {
            StateFields::default()
        },
        mode_changed,
        ambiguous: change.ambiguous,
        decided: change.decided,
        also_written_by: Vec::new(),
        diff,
        binary,
        reviewed: false,
        diff_omitted: false,
    }
}

/// Who else wrote each path while `turn` was open, in words, each once.
fn others_during(conn: &Connection, turn: &TurnRow) -> rusqlite::Result<HashMap<RelPath, Vec<String>>> {
    let mut others: HashMap<RelPath, Vec<String>> = HashMap::new();
    for write in crate::store::owners::others_during(conn, turn)? {
        let who = match (write.origin, write.turn) {
            (Origin::Turn, Some((session, number))) => format!("session {session} turn {number}"),
            (Origin::Rollback, _) => "a rollback".into(),
            (Origin::Offline, _) => "a change found at a start".into(),
            _ => "you".into(),
        };
        let names = others.entry(write.path).or_default();
        if !names.contains(&who) {
            names.push(who);
        }
    }
    Ok(others)
}

/// What a state says beyond its kind.
fn state_fields(state: &State) -> StateFields {
    match state {
        State::File(f) => StateFields {
            size: Some(f.size),
            hash: f.hash().map(Hash::to_hex),
            executable: Some(f.executable),
            mode: f.mode_text(),
            too_large: f.is_too_large(),
            unreadable: f.is_unreadable(),
            target: None,
        },
        State::Symlink { target } => StateFields {
            target: Some(crate::paths::RelPath::from_fs_bytes(target.clone()).to_text()),
            ..StateFields::default()
        },
        State::Dir | State::Absent | State::Untracked => StateFields::default(),
    }
}

pub fn session(session: &SessionRow) -> Session {
    Session {
        session: session.name.clone(),
        turns: session.turns,
        open_turn: session.open_turn,
        created_at: format_time(session.created_at),
        last_activity: format_time(session.last_activity),
        parent: session.parent.clone(),
        fork_turn: session.fork_turn,
        agent: session.agent.clone(),
        first_prompt: session.first_label.as_deref().map(|l| first_line(l).to_string()),
    }
}

/// A label's first line, trimmed: what a one-line listing shows of a prompt.
pub fn first_line(label: &str) -> &str {
    label.trim_start().lines().next().unwrap_or_default().trim_end()
}
