//! A turn's listing in the terms of `git diff --name-status --no-renames`, and the comparison
//! of the two.

use std::collections::BTreeSet;

use serde_json::Value;

use super::git::FileChange;

/// The files that changed between two trees, each with its git status letter.
pub type Files = BTreeSet<FileChange>;

/// The files a turn's answer lists as changed: a rename is its `from` deleted and its `path`
/// added (git is told not to pair renames); directories are left out (git lists none).
pub fn files_of(turn: &Value) -> Result<Files, String> {
    let Some(changes) = turn["changes"].as_array() else {
        return Err(format!("an answer without changes: {turn}"));
    };
    let mut files = BTreeSet::new();
    for change in changes.iter().filter(|c| c["kind"] != "dir") {
        let path = field(change, "path")?;
        match change["change"].as_str() {
            Some("added") => files.insert(('A', path)),
            Some("modified") => files.insert(('M', path)),
            Some("deleted") => files.insert(('D', path)),
            Some("renamed") => files.insert(('D', field(change, "from")?)) | files.insert(('A', path)),
            _ => {
                return Err(format!(
                    "a change that is none of added/modified/deleted/renamed: {change}"
                ));
            }
        };
    }
    Ok(files)
}

fn field(change: &Value, name: &str) -> Result<String, String> {
    change[name]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("a change without {name}: {change}"))
}

/// What differs between git's diff (`want`) and a listing (`found`), one line per file; the
/// raw entries of the listing that name the file are shown beside it.
pub fn differences(want: &Files, found: &Files, turn: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for (status, path) in want.difference(found) {
        lines.push(format!(
            "  git {status} {path}, not listed{}",
            listed_as(turn, path)
        ));
    }
    for (status, path) in found.difference(want) {
        lines.push(format!(
            "  listed {status} {path}, git has no such change{}",
            listed_as(turn, path)
        ));
    }
    lines
}

/// The listing's own entries for `path` (as `path` or as `from`), for a message.
fn listed_as(turn: &Value, path: &str) -> String {
    let entries: Vec<String> = turn["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["path"] == path || c["from"] == path)
        .map(|c| c.to_string())
        .collect();
    if entries.is_empty() {
        String::new()
    } else {
        format!(" (listed as {})", entries.join(", "))
    }
}
