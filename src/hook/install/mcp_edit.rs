//! Format-preserving edits of the agents' MCP configuration: one named server in a JSON object
//! (`mcpServers` of Claude Code and Gemini CLI, `mcp` of opencode), one name in a JSON list
//! (Claude Code's `enabledMcpjsonServers`), and a `[mcp_servers.<name>]` table in Codex's
//! `config.toml`. As for the hooks (`jsonc`, `notify`), everything else in the file stays as
//! the user wrote it, and an entry of the same name that is not filewatchd's is never replaced.

use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

use super::jsonc::{finish, input_value, parse, pruned};
use crate::hook::payload::{Loose, Text, read};

/// The name of filewatchd's server in every configuration.
pub const NAME: &str = "filewatchd";

/// Whether `[program, args...]` is `<some filewatchd> mcp`: the binary may have moved since.
fn is_ours(words: &[&str]) -> bool {
    matches!(words, [program, "mcp"] if program.contains("filewatchd"))
}

/// A JSON server entry as read: `command` and `args` (Claude Code, Gemini CLI), or `command` as
/// the whole argument list (opencode); words that are not strings are left out.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Server {
    command: Loose<Option<Command>>,
    args: Loose<Vec<Text>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Command {
    Program(String),
    Words(Vec<Text>),
}

fn entry_is_ours(entry: &Value) -> bool {
    let server: Server = read(entry);
    let words: Vec<Text> = match server.command.0 {
        Some(Command::Program(program)) => [Loose(Some(program))].into_iter().chain(server.args.0).collect(),
        Some(Command::Words(words)) => words,
        None => Vec::new(),
    };
    let words: Vec<&str> = words.iter().filter_map(|w| w.as_deref()).collect();
    is_ours(&words)
}

/// The text with `entry` as `container.filewatchd`; an existing entry of ours keeps whatever
/// the user added to it and only gets this install's `command` (and `args`).
pub fn with_server(text: &str, path: &Path, container: &str, entry: &Value) -> anyhow::Result<String> {
    let root = parse(text, path)?;
    let created = root.value().is_none();
    let servers = root
        .object_value_or_set()
        .object_value_or_create(container)
        .with_context(|| {
            format!(
                "{}: `{container}` is not an object; install by hand",
                path.display()
            )
        })?;
    match servers.get(NAME) {
        None => {
            servers.append(NAME, input_value(entry));
        }
        Some(prop) => {
            let current = prop.value().and_then(|v| v.to_serde_value());
            let Some(current) = current.filter(entry_is_ours) else {
                bail!(
                    "{}: `{container}.{NAME}` is another server, not filewatchd's; filewatchd will not replace it (rename it, or install by hand)",
                    path.display()
                );
            };
            let server = prop.object_value().context("a server entry is an object")?;
            for key in ["command", "args"] {
                let wanted = &entry[key];
                match server.get(key) {
                    Some(p) if !wanted.is_null() && current[key] != *wanted => {
                        p.set_value(input_value(wanted))
                    }
                    None if !wanted.is_null() => drop(server.append(key, input_value(wanted))),
                    _ => {}
                }
            }
        }
    }
    Ok(finish(&root, created))
}

/// The text without `container.filewatchd` (and without `container` if nothing else is left in
/// it), and whether the file's object is empty then; `None` when it holds no server of ours.
pub fn without_server(text: &str, path: &Path, container: &str) -> anyhow::Result<Option<(String, bool)>> {
    let root = parse(text, path)?;
    let Some(settings) = root.object_value() else {
        return Ok(None);
    };
    let Some(servers) = settings.object_value(container) else {
        return Ok(None);
    };
    let Some(prop) = servers.get(NAME) else {
        return Ok(None);
    };
    let current = prop.value().and_then(|v| v.to_serde_value());
    if !current.is_some_and(|v| entry_is_ours(&v)) {
        return Ok(None);
    }
    prop.remove();
    let left = !servers.properties().is_empty();
    Ok(Some(pruned(&root, &settings, container, left)))
}

/// The text with `filewatchd` in the list `key` (Claude Code's approval of a `.mcp.json` server).
pub fn with_listed(text: &str, path: &Path, key: &str) -> anyhow::Result<String> {
    let root = parse(text, path)?;
    let created = root.value().is_none();
    let list = root
        .object_value_or_set()
        .array_value_or_create(key)
        .with_context(|| format!("{}: `{key}` is not a list; install by hand", path.display()))?;
    let listed = list
        .elements()
        .iter()
        .any(|e| e.to_serde_value().is_some_and(|v| v == NAME));
    if !listed {
        list.append(NAME.into());
    }
    Ok(finish(&root, created))
}

/// The text without `filewatchd` in the list `key` (and without the list if it is empty then).
pub fn without_listed(text: &str, path: &Path, key: &str) -> anyhow::Result<Option<(String, bool)>> {
    let root = parse(text, path)?;
    let Some(settings) = root.object_value() else {
        return Ok(None);
    };
    let Some(list) = settings.array_value(key) else {
        return Ok(None);
    };
    let ours: Vec<_> = list
        .elements()
        .into_iter()
        .filter(|e| e.to_serde_value().is_some_and(|v| v == NAME))
        .collect();
    if ours.is_empty() {
        return Ok(None);
    }
    ours.into_iter().for_each(|node| node.remove());
    let left = !list.elements().is_empty();
    Ok(Some(pruned(&root, &settings, key, left)))
}

fn parse_toml(text: &str, path: &Path) -> anyhow::Result<DocumentMut> {
    text.parse()
        .with_context(|| format!("{} is not valid TOML; fix it or install by hand", path.display()))
}

fn toml_is_ours(server: &Item) -> bool {
    let program = server.get("command").and_then(Item::as_str);
    let (Some(program), Some(args)) = (program, server.get("args").and_then(Item::as_array)) else {
        return false;
    };
    let words: Vec<&str> = [program]
        .into_iter()
        .chain(args.iter().filter_map(|v| v.as_str()))
        .collect();
    is_ours(&words)
}

/// Codex's `config.toml` with `[mcp_servers.filewatchd]` running `command mcp`, passing
/// `env_vars` through (Codex gives an MCP server only a few variables of its own).
pub fn with_codex_server(
    text: &str,
    path: &Path,
    command: &str,
    env_vars: &[&str],
) -> anyhow::Result<String> {
    let mut doc = parse_toml(text, path)?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let Some(servers) = servers.as_table_mut() else {
        bail!(
            "{}: `mcp_servers` is not a table; install by hand",
            path.display()
        );
    };
    match servers.get_mut(NAME) {
        Some(server) if !toml_is_ours(server) => bail!(
            "{}: `[mcp_servers.{NAME}]` is another server, not filewatchd's; filewatchd will not replace it (rename it, or install by hand)",
            path.display()
        ),
        Some(server) => {
            if server.get("command").and_then(Item::as_str) != Some(command) {
                server["command"] = toml_edit::value(command);
            }
        }
        None => {
            let mut table = Table::new();
            table["command"] = toml_edit::value(command);
            table["args"] = toml_edit::value(toml_edit::Array::from_iter(["mcp"]));
            table["env_vars"] = toml_edit::value(toml_edit::Array::from_iter(env_vars.iter().copied()));
            servers.insert(NAME, Item::Table(table));
        }
    }
    Ok(doc.to_string())
}

/// The config without `[mcp_servers.filewatchd]`, and whether nothing is left; `None` when it
/// has no server of ours.
pub fn without_codex_server(text: &str, path: &Path) -> anyhow::Result<Option<(String, bool)>> {
    let mut doc = parse_toml(text, path)?;
    let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_mut) else {
        return Ok(None);
    };
    if !servers.get(NAME).is_some_and(toml_is_ours) {
        return Ok(None);
    }
    servers.remove(NAME);
    if servers.is_empty() && servers.is_implicit() {
        doc.remove("mcp_servers");
    }
    let out = doc.to_string();
    let empty = out.trim().is_empty();
    Ok(Some((out, empty)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_moved_binary_gets_the_new_command_and_keeps_the_users_additions() {
        let text = "{\"mcpServers\": {\"filewatchd\": {\"command\": \"/old/filewatchd\", \"args\": [\"mcp\"], \"trust\": true}}}";
        let entry = json!({"command": "/new/filewatchd", "args": ["mcp"]});
        let out = with_server(text, Path::new("s.json"), "mcpServers", &entry).expect("edit");
        assert_eq!(out, text.replace("/old/", "/new/"));
    }

    #[test]
    fn a_foreign_server_of_the_same_name_is_refused() {
        let text = "{\"mcp\": {\"filewatchd\": {\"type\": \"local\", \"command\": [\"other\"]}}}";
        let entry = json!({"type": "local", "command": ["filewatchd", "mcp"]});
        let err = with_server(text, Path::new("o.json"), "mcp", &entry).expect_err("refused");
        assert!(err.to_string().contains("another server"), "{err}");
        assert_eq!(
            without_server(text, Path::new("o.json"), "mcp").expect("parse"),
            None
        );
    }

    #[test]
    fn codex_comments_survive_install_and_uninstall() {
        let text = "# mine\nmodel = \"o3\" # kept\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
        let path = Path::new("config.toml");
        let out = with_codex_server(text, path, "filewatchd", &["FILEWATCHD_HOME"]).expect("edit");
        assert!(out.starts_with(text), "{out}");
        assert!(out.contains("[mcp_servers.filewatchd]"), "{out}");
        let (back, empty) = without_codex_server(&out, path).expect("parse").expect("ours");
        assert_eq!(back, text);
        assert!(!empty);
    }
}
