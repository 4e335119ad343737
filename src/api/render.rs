//! Turning history into the JSON shapes of docs/api.md.

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::history::{self, Change, ChangeKind, Counts, Diff};
use crate::model::{Kind, State, format_time};
use crate::retention;
use crate::store::blobs::BlobDir;
use crate::store::sql::{SessionRow, TurnRow};

/// A turn and its net changes, serialized straight into the answer: a turn can list tens of
/// thousands of changes, and a tree of JSON values per change held several times their text.
#[derive(serde::Serialize)]
pub struct TurnView {
    #[serde(flatten)]
    summary: Value,
    /// With a `Changes` filter or page: how many changes the filter leaves (before paging).
    #[serde(skip_serializing_if = "Option::is_none")]
    changes_total: Option<usize>,
    changes: Vec<ChangeView>,
}

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

    fn keeps(&self, change: &Change) -> bool {
        let Some(dir) = &self.under else {
            return true;
        };
        change.path.starts_with(dir) || change.from.as_ref().is_some_and(|f| f.starts_with(dir))
    }
}

pub fn turn(
    conn: &Connection,
    blobs: &BlobDir,
    turn: &TurnRow,
    with_diff: bool,
) -> rusqlite::Result<TurnView> {
    turn_page(conn, blobs, turn, with_diff, &Changes::default())
}

/// A turn with the changes `page` picks (diffs for those only).
pub fn turn_page(
    conn: &Connection,
    blobs: &BlobDir,
    turn: &TurnRow,
    with_diff: bool,
    page: &Changes,
) -> rusqlite::Result<TurnView> {
    let changes = history::turn_changes(conn, turn)?;
    let review = crate::sessions::review::of_turn(conn, turn.id, &turn.session, turn.number)?;
    let mut summary = turn_summary(turn, Counts::of(&changes));
    summary["reviewed"] = json!(review.reviewed);
    if retention::expired(conn, turn.start_seq)?.is_some() {
        // Retention collapsed the history before this turn's start: its list may be partial.
        summary["expired"] = json!(true);
    }
    let kept: Vec<&Change> = changes.iter().filter(|c| page.keeps(c)).collect();
    let changes_total = (!page.is_all()).then_some(kept.len());
    let changes = kept
        .into_iter()
        .skip(page.offset)
        .take(page.limit.unwrap_or(usize::MAX))
        .map(|c| {
            let mut view = ChangeView::of(c, with_diff.then(|| history::diff(conn, blobs, c)));
            view.reviewed = review.covers(&c.path);
            view
        })
        .collect();
    Ok(TurnView {
        summary,
        changes_total,
        changes,
    })
}

pub fn turn_summary(turn: &TurnRow, counts: Counts) -> Value {
    json!({
        "session": turn.session,
        "turn": turn.number,
        "ref": turn.turn_ref,
        "label": turn.label,
        "started_at": format_time(turn.started_at),
        "ended_at": turn.ended_at.map(format_time),
        "start_seq": turn.start_seq,
        "end_seq": turn.end_seq,
        "counts": counts,
    })
}

/// One change of a turn (docs/api.md): absent fields are left out.
#[derive(serde::Serialize)]
struct ChangeView {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    change: ChangeKind,
    kind: Kind,
    #[serde(flatten)]
    state: StateFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode_changed: Option<bool>,
    /// Only when true: see `Change::ambiguous`.
    #[serde(skip_serializing_if = "Option::is_none")]
    ambiguous: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    binary: Option<bool>,
    /// The file, or its whole turn, is marked reviewed.
    reviewed: bool,
}

impl ChangeView {
    fn of(change: &Change, diff: Option<Diff>) -> Self {
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
            Some(Diff::Text(text)) => (Some(text), None),
            Some(Diff::Binary) => (None, Some(true)),
            Some(Diff::TooLarge | Diff::None) | None => (None, None),
        };
        Self {
            path: change.path.to_text(),
            from: change.from.as_ref().map(|from| from.to_text()),
            change: change.kind,
            kind: shown.kind(),
            state: if change.after.is_present() {
                StateFields::of(&change.after)
            } else {
                StateFields::default()
            },
            mode_changed,
            ambiguous: change.ambiguous.then_some(true),
            diff,
            binary,
            reviewed: false,
        }
    }
}

/// What a state says beyond its kind: a file's size, hash and mode, a symlink's target.
#[derive(Default, serde::Serialize)]
struct StateFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    executable: Option<bool>,
    /// The permission bits in octal ("0600"), when the version recorded them.
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
    /// Only when true.
    #[serde(skip_serializing_if = "Option::is_none")]
    too_large: Option<bool>,
    /// Only when true: the daemon could not read the file, it has no hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
}

impl StateFields {
    fn of(state: &State) -> Self {
        match state {
            State::File(f) => Self {
                size: Some(f.size),
                hash: (!f.unreadable).then(|| f.hash.to_hex()),
                executable: Some(f.executable),
                mode: f.mode_text(),
                too_large: f.too_large.then_some(true),
                unreadable: f.unreadable.then_some(true),
                target: None,
            },
            State::Symlink { target } => Self {
                target: Some(crate::paths::RelPath::from_fs_bytes(target.clone()).to_text()),
                ..Self::default()
            },
            State::Dir | State::Absent | State::Untracked => Self::default(),
        }
    }
}

pub fn session(session: &SessionRow) -> Value {
    json!({
        "session": session.name,
        "turns": session.turns,
        "open_turn": session.open_turn,
        "created_at": format_time(session.created_at),
        "last_activity": format_time(session.last_activity),
        "parent": session.parent,
        "fork_turn": session.fork_turn,
        "agent": session.agent,
        "first_prompt": session.first_label.as_deref().map(first_line),
    })
}

/// A label's first line, trimmed: what a one-line listing shows of a prompt.
pub fn first_line(label: &str) -> &str {
    label.trim_start().lines().next().unwrap_or_default().trim_end()
}
