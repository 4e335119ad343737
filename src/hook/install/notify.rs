//! Codex's legacy `notify = [program, "hook", "codex"]` in `config.toml`, edited in place with
//! `toml_edit` (comments and layout kept).

use std::path::Path;

use anyhow::{Context, bail};
use toml_edit::{DocumentMut, Item, Value};

fn parse(text: &str, path: &Path) -> anyhow::Result<DocumentMut> {
    text.parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))
}

fn ours_value(program: &Path) -> Value {
    let program = program.to_string_lossy();
    Value::Array(toml_edit::Array::from_iter([program.as_ref(), "hook", "codex"]))
}

/// `[program, "hook", "codex"]` where the program is this binary or any filewatchd.
fn is_ours(value: &Value, program: &Path) -> bool {
    let Some(array) = value.as_array() else {
        return false;
    };
    let words: Vec<&str> = array.iter().filter_map(Value::as_str).collect();
    match words.as_slice() {
        [prog, "hook", "codex"] => prog.contains("filewatchd") || Path::new(prog) == program,
        _ => false,
    }
}

fn notify(doc: &DocumentMut) -> Option<&Value> {
    doc.get("notify").and_then(Item::as_value)
}

/// The program filewatchd's `notify` runs, if the config has one.
pub fn our_program(text: &str, path: &Path, program: &Path) -> anyhow::Result<Option<String>> {
    let doc = parse(text, path)?;
    let ours = notify(&doc).filter(|v| is_ours(v, program));
    let first = ours
        .and_then(Value::as_array)
        .and_then(|a| a.get(0))
        .and_then(Value::as_str);
    Ok(first.map(str::to_string))
}

pub fn has_notify(text: &str, path: &Path, program: &Path) -> anyhow::Result<bool> {
    let doc = parse(text, path)?;
    Ok(notify(&doc).is_some_and(|v| is_ours(v, program)))
}

/// The config with `notify` running this binary; a foreign `notify` is never replaced.
pub fn with_notify(text: &str, path: &Path, program: &Path) -> anyhow::Result<String> {
    let mut doc = parse(text, path)?;
    let mut ours = ours_value(program);
    match notify(&doc) {
        Some(existing) if existing.to_string().trim() == ours.to_string().trim() => {
            return Ok(text.to_string());
        }
        Some(existing) if is_ours(existing, program) => {
            // An earlier install's binary: keep the line's decoration, change the program.
            *ours.decor_mut() = existing.decor().clone();
            doc.insert("notify", Item::Value(ours));
        }
        Some(existing) => bail!(
            "{} already sets notify = {}; filewatchd will not replace it (use `filewatchd hook install codex` for lifecycle hooks instead)",
            path.display(),
            existing.to_string().trim()
        ),
        None => {
            doc.insert("notify", Item::Value(ours));
        }
    }
    Ok(doc.to_string())
}

/// The config without filewatchd's `notify`, and whether nothing is left; `None` when it has
/// none.
pub fn without_notify(text: &str, path: &Path, program: &Path) -> anyhow::Result<Option<(String, bool)>> {
    let mut doc = parse(text, path)?;
    if !notify(&doc).is_some_and(|v| is_ours(v, program)) {
        return Ok(None);
    }
    doc.remove("notify");
    let out = doc.to_string();
    let empty = out.trim().is_empty();
    Ok(Some((out, empty)))
}
