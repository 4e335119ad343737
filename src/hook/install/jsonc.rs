//! Format-preserving edits of the agents' JSON hook settings (Claude Code, Gemini CLI, Codex).
//! The file is edited as a concrete syntax tree (`jsonc-parser`), so the user's indentation,
//! key order, compact arrays and comments (Gemini accepts JSONC) stay as written: install adds
//! only filewatchd's entries, uninstall takes out only those.

use std::path::Path;

use anyhow::{Context, anyhow, bail};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::hook::payload::{Loose, Text, read};

/// What makes a hook entry filewatchd's: a command that runs `... filewatchd ... hook <agent>`
/// (whatever binary path it names, so a moved binary's entries are still recognised), or the
/// exact command this install writes.
pub struct Ours {
    pub agent: &'static str,
    pub command: String,
}

impl Ours {
    fn matches(&self, command: &str) -> bool {
        command == self.command
            || (command.contains("filewatchd") && command.ends_with(&format!(" hook {}", self.agent)))
    }

    fn entry_is_ours(&self, entry: &Entry) -> bool {
        entry
            .hooks
            .iter()
            .any(|h| h.command.as_deref().is_some_and(|c| self.matches(c)))
    }

    /// The entries of an event's list that are filewatchd's.
    fn in_list(&self, list: &CstArray) -> Vec<CstNode> {
        let is_ours = |node: &CstNode| {
            node.to_serde_value()
                .is_some_and(|e| self.entry_is_ours(&read(&e)))
        };
        list.elements().into_iter().filter(is_ours).collect()
    }
}

/// The settings' `hooks` as read: the entries under each event.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Settings {
    hooks: Loose<Map<String, Value>>,
}

/// A hook entry as read: its hooks' commands.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Entry {
    hooks: Loose<Vec<Loose<Command>>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Command {
    command: Text,
}

/// Each event of the file's `hooks` with its entries.
fn events(text: &str, path: &Path) -> anyhow::Result<Vec<(String, Vec<Loose<Entry>>)>> {
    let root = parse(text, path)?;
    let settings: Settings = root
        .value()
        .and_then(|v| v.to_serde_value())
        .map(|v| read(&v))
        .unwrap_or_default();
    Ok(settings
        .hooks
        .0
        .into_iter()
        .map(|(event, list)| (event, read(&list)))
        .collect())
}

pub(super) fn parse(text: &str, path: &Path) -> anyhow::Result<CstRootNode> {
    let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| {
        anyhow!(
            "{} is not valid JSON ({e}); fix it or install by hand",
            path.display()
        )
    })?;
    if root.value().is_some_and(|v| v.as_object().is_none()) {
        bail!("{} is not a JSON object; install by hand", path.display());
    }
    Ok(root)
}

/// The events under which the file holds one of filewatchd's entries.
pub fn our_events(text: &str, path: &Path, ours: &Ours) -> anyhow::Result<Vec<String>> {
    let events = events(text, path)?.into_iter();
    let ours = events.filter(|(_, list)| list.iter().any(|e| ours.entry_is_ours(e)));
    Ok(ours.map(|(event, _)| event).collect())
}

/// The commands of filewatchd's hook entries in the file (`doctor` checks what they run).
pub fn our_commands(text: &str, path: &Path, ours: &Ours) -> anyhow::Result<Vec<String>> {
    let entries = events(text, path)?.into_iter().flat_map(|(_, list)| list);
    let hooks = entries
        .flat_map(|entry| entry.0.hooks.0)
        .filter_map(|h| h.0.command.0);
    Ok(hooks.filter(|c| ours.matches(c)).collect())
}

/// The text with filewatchd's entry under each event: appended where there is none, and an
/// existing one pointed at `ours.command` (the binary may have moved since).
pub fn with_hooks(text: &str, path: &Path, entries: &[(&str, Value)], ours: &Ours) -> anyhow::Result<String> {
    let root = parse(text, path)?;
    let created = root.value().is_none();
    let hooks = root
        .object_value_or_set()
        .object_value_or_create("hooks")
        .with_context(|| format!("{}: `hooks` is not an object; install by hand", path.display()))?;
    for (event, entry) in entries {
        let list = hooks.array_value_or_create(event).with_context(|| {
            format!(
                "{}: `hooks.{event}` is not an array; install by hand",
                path.display()
            )
        })?;
        let mine = ours.in_list(&list);
        if mine.is_empty() {
            // A one-line list gets one entry per line first: an object appended to it would
            // otherwise straddle the user's line.
            if !list.elements().is_empty() && !list.to_string().contains('\n') {
                list.ensure_multiline();
            }
            list.append(input_value(entry));
        }
        for node in mine.iter().filter_map(CstNode::as_object) {
            point_at(&node, ours);
        }
    }
    Ok(finish(&root, created))
}

/// The edited text; a file install creates ends with a line break.
pub(super) fn finish(root: &CstRootNode, created: bool) -> String {
    let mut out = root.to_string();
    if created && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The edited text without `key` when the edit left nothing in it, and whether the settings
/// object is empty then.
pub(super) fn pruned(root: &CstRootNode, settings: &CstObject, key: &str, left: bool) -> (String, bool) {
    if !left && let Some(prop) = settings.get(key) {
        prop.remove();
    }
    (root.to_string(), settings.properties().is_empty())
}

/// Rewrites the commands of one of our entries that name another binary.
fn point_at(entry: &CstObject, ours: &Ours) {
    let Some(hooks) = entry.array_value("hooks") else {
        return;
    };
    for hook in hooks.elements().iter().filter_map(CstNode::as_object) {
        let Some(prop) = hook.get("command") else {
            continue;
        };
        let current = prop.value().and_then(|v| v.to_serde_value());
        let Some(Value::String(current)) = current else {
            continue;
        };
        if current != ours.command && ours.matches(&current) {
            prop.set_value(ours.command.as_str().into());
        }
    }
}

/// The text without filewatchd's entries (and without the event lists and `hooks` object
/// that held nothing else), and whether the settings object is empty then. `None` when the
/// file holds none of them: it is left as it is.
pub fn without_hooks(text: &str, path: &Path, ours: &Ours) -> anyhow::Result<Option<(String, bool)>> {
    let root = parse(text, path)?;
    let Some(settings) = root.object_value() else {
        return Ok(None);
    };
    let Some(hooks) = settings.object_value("hooks") else {
        return Ok(None);
    };
    let mut removed = false;
    for prop in hooks.properties() {
        let Some(list) = prop.array_value() else {
            continue;
        };
        let mine = ours.in_list(&list);
        removed |= !mine.is_empty();
        if mine.is_empty() {
            continue;
        }
        mine.into_iter().for_each(CstNode::remove);
        if list.elements().is_empty() {
            prop.remove();
        }
    }
    if !removed {
        return Ok(None);
    }
    let left = !hooks.properties().is_empty();
    Ok(Some(pruned(&root, &settings, "hooks", left)))
}

pub(super) fn input_value(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input_value).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input_value(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours() -> Ours {
        Ours {
            agent: "gemini-cli",
            command: "/new/filewatchd hook gemini-cli".into(),
        }
    }

    fn entries() -> Vec<(&'static str, Value)> {
        let entry = json!({"hooks": [{"type": "command", "command": ours().command}]});
        vec![("BeforeAgent", entry)]
    }

    #[test]
    fn comments_survive_install_and_uninstall() {
        let text = "{\n  // the user's note\n  \"general\": {\"vimMode\": true}, /* kept */\n}\n";
        let path = Path::new("settings.json");
        let installed = with_hooks(text, path, &entries(), &ours()).expect("install");
        assert!(installed.contains("// the user's note") && installed.contains("/* kept */"));
        assert!(!our_events(&installed, path, &ours()).expect("parse").is_empty());
        let (back, empty) = without_hooks(&installed, path, &ours())
            .expect("parse")
            .expect("ours");
        assert_eq!(back, text);
        assert!(!empty);
    }

    #[test]
    fn a_moved_binary_is_pointed_at_the_new_one() {
        let text = "{\"hooks\": {\"BeforeAgent\": [{\"hooks\": [{\"command\": \"/old/filewatchd hook gemini-cli\"}]}]}}";
        let path = Path::new("settings.json");
        let installed = with_hooks(text, path, &entries(), &ours()).expect("install");
        assert_eq!(installed, text.replace("/old/", "/new/"));
    }
}
