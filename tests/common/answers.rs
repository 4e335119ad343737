//! Reading the API's answers: a turn's changes, a history's versions, a rollback's actions
//! and its lists (`conflicts`, `skipped`, `not_restorable`, `kept`), the `on_conflict` modes
//! with what each does, and the names and hashes the answers use.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use serde_json::{Value, json};

use super::expect;

/// The `changes` of a turn.
#[track_caller]
pub fn changes(turn: &Value) -> &Vec<Value> {
    turn["changes"]
        .as_array()
        .unwrap_or_else(|| panic!("turn without changes: {turn:#}"))
}

/// The change of `path` in a turn; panics (listing what is there) if it is absent.
#[track_caller]
pub fn change<'a>(turn: &'a Value, path: &str) -> &'a Value {
    changes(turn)
        .iter()
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("{path} not among the changes {:?}", changed_paths(turn)))
}

/// Every changed path of a turn.
pub fn changed_paths(turn: &Value) -> BTreeSet<String> {
    changes(turn)
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

/// The changed paths of a turn that are not directories.
pub fn changed_files(turn: &Value) -> BTreeSet<String> {
    changes(turn)
        .iter()
        .filter(|c| c["kind"] != "dir")
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

/// The recorded versions of a history answer.
#[track_caller]
pub fn versions(history: &Value) -> &Vec<Value> {
    history["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("history without versions: {history:#}"))
}

/// The latest recorded version of a history answer.
#[track_caller]
pub fn latest(history: &Value) -> &Value {
    versions(history)
        .iter()
        .max_by_key(|v| v["seq"].as_u64())
        .unwrap_or_else(|| panic!("history with no versions: {history:#}"))
}

/// The `actions` of a rollback answer.
#[track_caller]
pub fn actions(answer: &Value) -> &Vec<Value> {
    answer["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("answer without actions: {answer:#}"))
}

/// The action on `path` in a rollback answer; panics (listing what is there) if absent.
#[track_caller]
pub fn action<'a>(answer: &'a Value, path: &str) -> &'a Value {
    actions(answer)
        .iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("{path} not among the actions {:?}", action_paths(answer)))
}

/// Every path of a rollback answer's actions.
pub fn action_paths(answer: &Value) -> BTreeSet<String> {
    listed_paths(answer, "actions")
}

/// The paths of one list of a rollback answer (`conflicts`, `skipped`, `not_restorable`,
/// `kept`, `actions`).
#[track_caller]
pub fn listed_paths(answer: &Value, list: &str) -> BTreeSet<String> {
    answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("answer without {list}: {answer:#}"))
        .iter()
        .map(|n| n["path"].as_str().unwrap().to_string())
        .collect()
}

/// The entry for `path` in one list of a rollback answer.
#[track_caller]
pub fn listed<'a>(answer: &'a Value, list: &str, path: &str) -> &'a Value {
    answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("answer without {list}: {answer:#}"))
        .iter()
        .find(|n| n["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in {list}: {answer:#}"))
}

/// Asserts a 200 rollback answer that was applied with no conflict and nothing skipped.
#[track_caller]
pub fn rollback_applied(reply: (u16, Value)) -> Value {
    let answer = expect(200, reply);
    assert_eq!(answer["applied"], true, "{answer:#}");
    assert_eq!(answer["conflicts"], json!([]), "{answer:#}");
    assert_eq!(answer["skipped"], json!([]), "{answer:#}");
    answer
}

/// Asserts that every action of a rollback answer is `done`.
#[track_caller]
pub fn all_done(answer: &Value) {
    for a in actions(answer) {
        assert_eq!(a["status"], "done", "{a}");
    }
}

/// What a rollback that meets conflicts does, by its `on_conflict` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    /// `abort`: refused with 409 `conflicts`; nothing is applied.
    Refused,
    /// `skip`: 200; the conflicting paths are left exactly as they are, the rest is applied.
    Skipped,
    /// `force`: 200; the conflicting paths are rolled back too.
    Forced,
}

impl OnConflict {
    /// The status of the answer.
    pub fn status(self) -> u16 {
        match self {
            OnConflict::Refused => 409,
            OnConflict::Skipped | OnConflict::Forced => 200,
        }
    }
}

/// Every `on_conflict` mode with what it does: the cases a conflict scenario runs once each.
pub const ON_CONFLICT: [(&str, OnConflict); 3] = [
    ("abort", OnConflict::Refused),
    ("skip", OnConflict::Skipped),
    ("force", OnConflict::Forced),
];

/// A set of strings, for comparing path sets.
pub fn set<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> BTreeSet<String> {
    items.into_iter().map(Into::into).collect()
}

/// The API form of a file name that may not be valid UTF-8: each invalid byte as `\xNN`.
pub fn api_name(name: &OsStr) -> String {
    let mut out = String::new();
    for chunk in name.as_bytes().utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The hash the store names content by: blake3 of the raw bytes, in hex.
pub fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}
