//! `turn_changes`: a page of a turn's changes as the daemon cuts it (`GET
//! /v1/sessions/{s}/turns/{t}?path=&offset=&limit=`), so a turn of a million paths costs one
//! page; with `diff`, the page's diffs, asked for file by file when the page's diffs together
//! are past what one answer of the daemon may hold.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::TurnArg;
use super::reach::Reached;
use super::session::Resolved;
use super::shape::{self, DIFF_TOTAL, Failure, encode, first_line, paged};
use crate::model::Kind;
use crate::wire::turn::{Change, Turn};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnChangesArgs {
    /// The session (default: this session, see the server's docs).
    pub session: Option<String>,
    /// The turn: a number or the agent's ref (default: the session's latest, open or not).
    pub turn: Option<TurnArg>,
    /// Include unified diffs of text files (cut at 8 KiB per file, 48 KiB in all).
    #[serde(default)]
    pub diff: bool,
    /// Only paths equal to this or beneath it (workspace-relative, `/` separators).
    pub path: Option<String>,
    /// Skip this many changed paths (for the next page).
    pub offset: Option<usize>,
    /// At most this many paths (default 50, at most 500).
    pub limit: Option<usize>,
}

/// An open turn's answer comes after the barrier, so a command that just ran is in it.
pub fn turn_changes(daemon: &Reached, session: &Resolved, args: &TurnChangesArgs) -> Result<Value, Failure> {
    let turn = args
        .turn
        .as_ref()
        .map_or_else(|| "current".to_string(), TurnArg::segment);
    let offset = args.offset.unwrap_or(0);
    let mut query = format!("?offset={offset}&limit={}", shape::limit(args.limit));
    if let Some(path) = &args.path {
        query.push_str(&format!("&path={}", encode(path)));
    }
    let (answer, alone_too_large) = if !args.diff {
        (
            daemon.get_as(&session.url(&format!("turns/{turn}{query}")))?,
            Vec::new(),
        )
    } else {
        with_diffs(daemon, session, &turn, &query)?
    };
    let changes: Vec<Value> = answer
        .changes
        .iter()
        .map(|c| change_line(c, alone_too_large.contains(&c.path)))
        .collect();
    let total = answer.changes_total.unwrap_or(0);
    let summary = answer.summary;
    let call = format!("turn_changes (turn={})", summary.turn);
    let mut page = paged(changes, total, offset, &call);
    let cut = args.diff && shape::fit_diffs(&mut page.items, "diff");
    page.fit();
    let mut out = json!({
        "turn": summary.turn,
        "open": summary.ended_at.is_none(),
        "prompt": first_line(&json!(summary.label)),
        "started_at": summary.started_at,
        "ended_at": summary.ended_at,
        "counts": summary.counts,
        "paths": page.total,
    });
    if let Some(path) = &args.path {
        out["path"] = json!(path);
        out["paths_are"] = json!("the changes at or beneath path; counts are the whole turn's");
    }
    out["changes"] = json!(page.items);
    out["more"] = json!(page.more);
    if cut {
        out["diffs_cut"] =
            json!("some diffs were cut or left out: ask diff_since with that path for one file's whole diff");
    }
    Ok(out)
}

/// The page with its diffs: in one answer, else (past the daemon client's limit) without
/// them, then each file's diff alone until the answer's diff budget is spent. Also the paths
/// whose diff alone is past that limit.
fn with_diffs(
    daemon: &Reached,
    session: &Resolved,
    turn: &str,
    query: &str,
) -> Result<(Turn, Vec<String>), Failure> {
    match daemon.get_as(&session.url(&format!("turns/{turn}{query}&diff=true"))) {
        Err(Failure::TooLarge(_)) => {}
        answer => return answer.map(|turn| (turn, Vec::new())),
    }
    let mut answer: Turn = daemon.get_as(&session.url(&format!("turns/{turn}{query}")))?;
    // The turn's number from now on: `current` could be another turn by the next request.
    let number = answer.summary.turn;
    let mut spent = 0;
    let mut alone_too_large = Vec::new();
    for change in &mut answer.changes {
        if change.kind != Kind::File || change.has_no_text() {
            continue;
        }
        if spent >= DIFF_TOTAL {
            change.diff_omitted = true;
            continue;
        }
        let one = format!("turns/{number}?diff=true&limit=1&path={}", encode(&change.path));
        match daemon.get_as::<Turn>(&session.url(&one)) {
            Ok(alone) => {
                let diff = alone.changes.into_iter().next().filter(|d| d.path == change.path);
                if let Some(text) = diff.and_then(|d| d.diff) {
                    spent += text.len();
                    change.diff = Some(text);
                }
            }
            Err(Failure::TooLarge(_)) => alone_too_large.push(change.path.clone()),
            Err(failure) => return Err(failure),
        }
    }
    Ok((answer, alone_too_large))
}

/// A change as the agent needs it: no hashes, no review marks; `alone_too_large` when its
/// diff alone is past what one answer can hold.
fn change_line(change: &Change, alone_too_large: bool) -> Value {
    let mut line = json!({"path": change.path, "change": change.change, "kind": change.kind});
    let flags = [
        ("ambiguous", change.ambiguous),
        ("mode_changed", change.mode_changed == Some(true)),
        ("binary", change.binary),
        ("too_large", change.state.too_large),
        ("unreadable", change.state.unreadable),
    ];
    if let Some(from) = &change.from {
        line["from"] = json!(from);
    }
    if let Some(size) = change.state.size {
        line["size"] = json!(size);
    }
    for (key, set) in flags {
        if set {
            line[key] = json!(true);
        }
    }
    if let Some(diff) = &change.diff {
        line["diff"] = json!(diff);
    }
    if alone_too_large {
        line["diff_omitted"] = json!(
            "this file's diff is past what one answer can hold: read the file, or call blame on it, instead"
        );
    } else if change.diff_omitted {
        line["diff_omitted"] = json!(true);
    }
    // The new bits, where only they say what a chmod did.
    if let (Some(true), Some(mode)) = (change.mode_changed, &change.state.mode) {
        line["mode"] = json!(mode);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::change_line;
    use serde_json::json;

    #[test]
    fn a_chmod_shows_its_new_bits_and_an_edit_does_not() {
        let change = |mode_changed| {
            serde_json::from_value(
                json!({"path": ".env", "change": "modified", "kind": "file", "size": 12,
                "hash": "ab", "executable": false, "mode": "0600", "mode_changed": mode_changed,
                "reviewed": false}),
            )
            .expect("a change")
        };
        assert_eq!(
            change_line(&change(true), false),
            json!({"path": ".env", "change": "modified", "kind": "file", "size": 12,
                   "mode_changed": true, "mode": "0600"})
        );
        assert_eq!(
            change_line(&change(false), false),
            json!({"path": ".env", "change": "modified", "kind": "file", "size": 12})
        );
    }
}
