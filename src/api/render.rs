//! Turning history into the JSON shapes of docs/api.md.

use rusqlite::Connection;
use serde_json::{Map, Value, json};

use crate::history::{self, Change, Counts, Diff};
use crate::model::{State, format_time};
use crate::store::blobs::BlobDir;
use crate::store::sql::{self, SessionRow, TurnRow, VersionRow};

pub fn turn(conn: &Connection, blobs: &BlobDir, turn: &TurnRow, with_diff: bool) -> rusqlite::Result<Value> {
    let changes = history::turn_changes(conn, turn)?;
    let mut value = turn_summary(turn, Counts::of(&changes));
    if turn.start_seq < crate::store::gc::horizon(conn)? {
        // Retention collapsed the history before this turn's start: its list may be partial.
        value["expired"] = json!(true);
    }
    let rendered: Vec<Value> = changes
        .iter()
        .map(|c| change(c, with_diff.then(|| history::diff(conn, blobs, c))))
        .collect();
    value["changes"] = Value::Array(rendered);
    Ok(value)
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

fn change(change: &Change, diff: Option<Diff>) -> Value {
    let mut out = Map::new();
    out.insert("path".into(), json!(change.path.to_text()));
    if let Some(from) = &change.from {
        out.insert("from".into(), json!(from.to_text()));
    }
    out.insert("change".into(), json!(change.kind.name()));
    let shown = if change.after.is_present() {
        &change.after
    } else {
        &change.before
    };
    out.insert("kind".into(), json!(shown.kind().name()));
    if change.after.is_present() {
        state_fields(&change.after, &mut out);
    }
    if let (State::File(before), State::File(after)) = (&change.before, &change.after) {
        out.insert(
            "mode_changed".into(),
            json!(before.executable != after.executable),
        );
    }
    match diff {
        Some(Diff::Text(text)) => {
            out.insert("diff".into(), json!(text));
        }
        Some(Diff::Binary) => {
            out.insert("binary".into(), json!(true));
        }
        Some(Diff::TooLarge | Diff::None) | None => {}
    }
    Value::Object(out)
}

fn state_fields(state: &State, out: &mut Map<String, Value>) {
    match state {
        State::File(f) => {
            out.insert("size".into(), json!(f.size));
            out.insert("hash".into(), json!(f.hash.to_hex()));
            out.insert("executable".into(), json!(f.executable));
            if f.too_large {
                out.insert("too_large".into(), json!(true));
            }
        }
        State::Symlink { target } => {
            let target = crate::paths::RelPath::from_fs_bytes(target.clone());
            out.insert("target".into(), json!(target.to_text()));
        }
        State::Dir | State::Absent => {}
    }
}

pub fn version(conn: &Connection, version: &VersionRow) -> rusqlite::Result<Value> {
    let turn = match version.turn_id {
        Some(id) => sql::turn_by_id(conn, id)?,
        None => None,
    };
    let mut out = Map::new();
    out.insert("seq".into(), json!(version.seq));
    out.insert("time".into(), json!(format_time(version.recorded_at)));
    out.insert("origin".into(), json!(version.origin.name()));
    out.insert("session".into(), json!(turn.as_ref().map(|t| t.session.clone())));
    out.insert("turn".into(), json!(turn.as_ref().map(|t| t.number)));
    out.insert("kind".into(), json!(version.state.kind().name()));
    if let State::File(f) = &version.state {
        out.insert("too_large".into(), json!(f.too_large));
    }
    state_fields(&version.state, &mut out);
    Ok(Value::Object(out))
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
    })
}

/// One rollback in a session's listing: what it did and how it ended.
pub fn rollback_summary(row: &crate::store::journal::RollbackRow) -> Value {
    let outcome: Value = row
        .outcome
        .as_deref()
        .and_then(|o| serde_json::from_str(o).ok())
        .unwrap_or(Value::Null);
    let done = outcome["actions"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|x| x["status"] == "done").count());
    json!({
        "rollback_id": row.id,
        "operation": row.kind,
        "target": outcome["target"],
        "status": row.status,
        "time": format_time(row.created_at),
        "paths_done": done,
        "skipped": outcome["skipped"].as_array().map_or(0, Vec::len),
        "recovery": outcome["recovery"],
    })
}
