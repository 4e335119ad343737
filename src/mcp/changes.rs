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
    let answer = match args.diff {
        false => daemon.get(&session.url(&format!("turns/{turn}{query}")))?,
        true => with_diffs(daemon, session, &turn, &query)?,
    };
    let changes: Vec<Value> = answer["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(change_line)
        .collect();
    let total = answer["changes_total"].as_u64().unwrap_or(0) as usize;
    let call = format!("turn_changes (turn={})", answer["turn"]);
    let mut page = paged(changes, total, offset, &call);
    let cut = args.diff && shape::fit_diffs(&mut page.items, "diff");
    page.fit();
    let mut out = json!({
        "turn": answer["turn"],
        "open": answer["ended_at"].is_null(),
        "prompt": first_line(&answer["label"]),
        "started_at": answer["started_at"],
        "ended_at": answer["ended_at"],
        "counts": answer["counts"],
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
/// them, then each file's diff alone until the answer's diff budget is spent.
fn with_diffs(daemon: &Reached, session: &Resolved, turn: &str, query: &str) -> Result<Value, Failure> {
    match daemon.get(&session.url(&format!("turns/{turn}{query}&diff=true"))) {
        Err(Failure::TooLarge(_)) => {}
        answer => return answer,
    }
    let mut answer = daemon.get(&session.url(&format!("turns/{turn}{query}")))?;
    // The turn's number from now on: `current` could be another turn by the next request.
    let number = answer["turn"].to_string();
    let mut spent = 0;
    for change in answer["changes"].as_array_mut().into_iter().flatten() {
        let no_text = change["too_large"] == true || change["unreadable"] == true;
        if change["kind"] != "file" || no_text {
            continue;
        }
        if spent >= DIFF_TOTAL {
            change["diff_omitted"] = json!(true);
            continue;
        }
        let path = change["path"].as_str().unwrap_or_default().to_string();
        let one = format!("turns/{number}?diff=true&limit=1&path={}", encode(&path));
        match daemon.get(&session.url(&one)) {
            Ok(alone) => {
                let diff = &alone["changes"][0];
                if diff["path"] == path.as_str() && !diff["diff"].is_null() {
                    spent += diff["diff"].as_str().map_or(0, str::len);
                    change["diff"] = diff["diff"].clone();
                }
            }
            Err(Failure::TooLarge(_)) => {
                change["diff_omitted"] = json!(
                    "this file's diff is past what one answer can hold: read the file, or call blame on it, instead"
                );
            }
            Err(failure) => return Err(failure),
        }
    }
    Ok(answer)
}

/// A change as the agent needs it: no hashes, no review marks.
fn change_line(change: &Value) -> Value {
    let mut line = json!({"path": change["path"], "change": change["change"], "kind": change["kind"]});
    for key in [
        "from",
        "size",
        "ambiguous",
        "mode_changed",
        "binary",
        "too_large",
        "unreadable",
        "diff",
        "diff_omitted",
    ] {
        match &change[key] {
            Value::Null | Value::Bool(false) => {}
            value => line[key] = value.clone(),
        }
    }
    // The new bits, where only they say what a chmod did.
    if change["mode_changed"] == Value::Bool(true) && change["mode"].is_string() {
        line["mode"] = change["mode"].clone();
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
            json!({"path": ".env", "change": "modified", "kind": "file", "size": 12, "hash": "ab",
                   "executable": false, "mode": "0600", "mode_changed": mode_changed, "reviewed": false})
        };
        assert_eq!(
            change_line(&change(true)),
            json!({"path": ".env", "change": "modified", "kind": "file", "size": 12,
                   "mode_changed": true, "mode": "0600"})
        );
        assert_eq!(
            change_line(&change(false)),
            json!({"path": ".env", "change": "modified", "kind": "file", "size": 12})
        );
    }
}
