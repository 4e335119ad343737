//! `turn_changes`: a page of a turn's changes as the daemon cuts it (`GET
//! /v1/sessions/{s}/turns/{t}?path=&offset=&limit=`), so a turn of a million paths costs one
//! page; with `diff`, the page's diffs, asked for file by file when the page's diffs together
//! are past what one answer of the daemon may hold.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::args::TurnArg;
use super::reach::Reached;
use super::session::Resolved;
use super::shape::{self, DIFF_TOTAL, Failure, FileDiff, Omitted, encode, first_line, paged};
use crate::history::{ChangeKind, Counts};
use crate::model::Kind;
use crate::wire::is_false;
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
    let changes: Vec<ChangeLine> = answer
        .changes
        .iter()
        .map(|c| change_line(c, alone_too_large.contains(&c.path)))
        .collect();
    let total = answer.changes_total.unwrap_or(0);
    let summary = answer.summary;
    let call = format!("turn_changes (turn={})", summary.turn);
    let mut page = paged(changes, total, offset, &call);
    let cut = args.diff && shape::fit_diffs(page.items.iter_mut().map(|c| &mut c.diff));
    page.fit();
    Ok(json!(TurnChanges {
        turn: summary.turn,
        open: summary.ended_at.is_none(),
        prompt: first_line(summary.label.as_deref()),
        started_at: summary.started_at,
        ended_at: summary.ended_at,
        counts: summary.counts,
        paths: page.total,
        path: args.path.as_deref(),
        paths_are: args
            .path
            .as_ref()
            .map(|_| "the changes at or beneath path; counts are the whole turn's"),
        changes: page.items,
        more: page.more,
        diffs_cut: cut.then_some(
            "some diffs were cut or left out: ask diff_since with that path for one file's whole diff"
        ),
    }))
}

/// `turn_changes`' answer.
#[derive(Serialize)]
struct TurnChanges<'a> {
    turn: i64,
    open: bool,
    prompt: Option<String>,
    started_at: String,
    ended_at: Option<String>,
    counts: Counts,
    paths: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paths_are: Option<&'static str>,
    changes: Vec<ChangeLine<'a>>,
    more: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diffs_cut: Option<&'static str>,
}

/// A change as the agent needs it: no hashes, no review marks.
#[derive(Debug, Serialize)]
struct ChangeLine<'a> {
    path: &'a str,
    change: ChangeKind,
    kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "is_false")]
    ambiguous: bool,
    #[serde(skip_serializing_if = "is_false")]
    mode_changed: bool,
    #[serde(skip_serializing_if = "is_false")]
    binary: bool,
    #[serde(skip_serializing_if = "is_false")]
    too_large: bool,
    #[serde(skip_serializing_if = "is_false")]
    unreadable: bool,
    #[serde(flatten)]
    diff: FileDiff,
    /// The new bits, where only they say what a chmod did.
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<&'a str>,
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

/// `change` in an answer; `alone_too_large` when its diff alone is past what one answer can
/// hold.
fn change_line(change: &Change, alone_too_large: bool) -> ChangeLine<'_> {
    let mode_changed = change.mode_changed == Some(true);
    let mut diff = FileDiff::of(change.diff.clone());
    diff.diff_omitted = if alone_too_large {
        Some(Omitted::Because(
            "this file's diff is past what one answer can hold: read the file, or call blame on it, instead",
        ))
    } else {
        change.diff_omitted.then_some(Omitted::Spent)
    };
    ChangeLine {
        path: &change.path,
        change: change.change,
        kind: change.kind,
        from: change.from.as_deref(),
        size: change.state.size,
        ambiguous: change.ambiguous,
        mode_changed,
        binary: change.binary,
        too_large: change.state.too_large,
        unreadable: change.state.unreadable,
        diff,
        mode: change.state.mode.as_deref().filter(|_| mode_changed),
    }
}

#[cfg(test)]
mod tests {
    use super::change_line;
    use serde_json::json;

    #[test]
    fn a_chmod_shows_its_new_bits_and_an_edit_does_not() {
        let change = |mode_changed| -> crate::wire::turn::Change {
            serde_json::from_value(
                json!({"path": ".env", "change": "modified", "kind": "file", "size": 12,
                "hash": "ab", "executable": false, "mode": "0600", "mode_changed": mode_changed,
                "reviewed": false}),
            )
            .expect("a change")
        };
        assert_eq!(
            json!(change_line(&change(true), false)),
            json!({"path": ".env", "change": "modified", "kind": "file", "size": 12,
                   "mode_changed": true, "mode": "0600"})
        );
        assert_eq!(
            json!(change_line(&change(false), false)),
            json!({"path": ".env", "change": "modified", "kind": "file", "size": 12})
        );
    }
}
