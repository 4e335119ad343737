//! `filewatchd hook install|uninstall <agent>`: writes the hook configuration into the agent's
//! own settings by merging (existing hooks and unrelated keys are kept), changes nothing when
//! it is already there, backs the file up before the first change, and removes exactly what
//! it added: when the file was not edited since, uninstall puts the original back byte for
//! byte.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use super::events::Agent;

/// Where the hook configuration goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Project,
    User,
}

#[derive(Debug, Clone)]
pub struct Target {
    pub agent: Agent,
    pub scope: Scope,
    /// The workspace (for `Project`) and the user's home (for `User`).
    pub root: PathBuf,
    pub home: PathBuf,
    /// The filewatchd binary the agent will run.
    pub program: PathBuf,
    /// Codex only: configure the legacy `notify` program instead of lifecycle hooks.
    pub notify: bool,
}

/// What install or uninstall did (or, in a dry run, would do) to one file.
#[derive(Debug)]
pub struct Report {
    pub path: PathBuf,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
    pub note: String,
}

impl Report {
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

const OPENCODE_PLUGIN: &str = include_str!("../../integrations/opencode/filewatchd.js");
const PI_EXTENSION: &str = include_str!("../../integrations/pi/filewatchd.ts");

impl Target {
    fn command(&self) -> String {
        format!(
            "{} hook {}",
            shell_quote(&self.program.to_string_lossy()),
            self.agent.name()
        )
    }

    fn base(&self) -> &Path {
        match self.scope {
            Scope::Project => &self.root,
            Scope::User => &self.home,
        }
    }

    /// The settings file (or plugin file) this target writes.
    pub fn path(&self) -> PathBuf {
        let base = self.base();
        match (self.agent, self.scope) {
            (Agent::ClaudeCode, _) => base.join(".claude/settings.json"),
            (Agent::GeminiCli, _) => base.join(".gemini/settings.json"),
            (Agent::Codex, _) if self.notify => self.home.join(".codex/config.toml"),
            (Agent::Codex, _) => base.join(".codex/hooks.json"),
            (Agent::Opencode, Scope::Project) => base.join(".opencode/plugin/filewatchd.js"),
            (Agent::Opencode, Scope::User) => base.join(".config/opencode/plugin/filewatchd.js"),
            (Agent::Pi, Scope::Project) => base.join(".pi/extensions/filewatchd.ts"),
            (Agent::Pi, Scope::User) => base.join(".pi/agent/extensions/filewatchd.ts"),
        }
    }

    /// The (event, entry) pairs for JSON hook settings.
    fn entries(&self) -> Vec<(&'static str, Value)> {
        let command = self.command();
        match self.agent {
            Agent::ClaudeCode => [
                "SessionStart",
                "UserPromptSubmit",
                "Stop",
                "StopFailure",
                "SessionEnd",
            ]
            .into_iter()
            .map(|event| {
                let mut hook = json!({"type": "command", "command": command});
                if event == "SessionEnd" {
                    hook["timeout"] = json!(5);
                }
                (event, json!({"hooks": [hook]}))
            })
            .collect(),
            Agent::GeminiCli => ["SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"]
                .into_iter()
                .map(|event| {
                    let hook =
                        json!({"name": "filewatchd", "type": "command", "command": command, "timeout": 5000});
                    (event, json!({"matcher": "*", "hooks": [hook]}))
                })
                .collect(),
            Agent::Codex => ["SessionStart", "UserPromptSubmit", "Stop"]
                .into_iter()
                .map(|event| {
                    (
                        event,
                        json!({"hooks": [{"type": "command", "command": command, "timeout": 10}]}),
                    )
                })
                .collect(),
            Agent::Opencode | Agent::Pi => Vec::new(),
        }
    }

    /// The file's content with filewatchd installed.
    fn installed(&self, current: Option<&[u8]>) -> anyhow::Result<Vec<u8>> {
        match self.agent {
            Agent::Opencode => Ok(with_program(OPENCODE_PLUGIN, &self.program).into_bytes()),
            Agent::Pi => Ok(with_program(PI_EXTENSION, &self.program).into_bytes()),
            Agent::Codex if self.notify => codex_notify_installed(current, &self.program),
            _ => {
                let mut settings = parse_settings(current, &self.path())?;
                merge_hooks(&mut settings, &self.entries(), self.agent);
                Ok(render_json(&settings))
            }
        }
    }

    /// The file's content with filewatchd removed; `None` when nothing else was in it.
    fn removed(&self, current: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        match self.agent {
            Agent::Opencode | Agent::Pi => Ok(None),
            Agent::Codex if self.notify => codex_notify_removed(current, &self.program),
            _ => {
                let mut settings = parse_settings(Some(current), &self.path())?;
                remove_hooks(&mut settings, self.agent);
                let empty = settings.as_object().is_some_and(Map::is_empty);
                Ok((!empty).then(|| render_json(&settings)))
            }
        }
    }
}

fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".filewatchd-backup");
    PathBuf::from(name)
}

fn read_optional(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

pub fn install(target: &Target, dry_run: bool) -> anyhow::Result<Report> {
    let path = target.path();
    let before = read_optional(&path)?;
    let after = target.installed(before.as_deref())?;
    let mut report = Report {
        path: path.clone(),
        before: before.clone(),
        after: Some(after.clone()),
        note: String::new(),
    };
    if !report.changed() {
        report.note = "already installed: nothing changed".into();
        return Ok(report);
    }
    if dry_run {
        report.note = "dry run: nothing written".into();
        return Ok(report);
    }
    if let Some(original) = &before {
        let backup = backup_path(&path);
        if !backup.exists() {
            write_file(&backup, original)?;
        }
        report.note = format!("backup of the original at {}", backup.display());
    }
    write_file(&path, &after)?;
    Ok(report)
}

pub fn uninstall(target: &Target, dry_run: bool) -> anyhow::Result<Report> {
    let path = target.path();
    let backup = backup_path(&path);
    let before = read_optional(&path)?;
    let original = read_optional(&backup)?;
    let Some(current) = before.clone() else {
        return Ok(Report {
            path,
            before: None,
            after: None,
            note: "not installed: nothing changed".into(),
        });
    };
    // Untouched since install: the original comes back byte for byte (or goes, if install made it).
    let untouched = target
        .installed(original.as_deref())
        .is_ok_and(|ours| ours == current);
    let (after, note) = if untouched {
        (
            original.clone(),
            "restored the file as it was before install".to_string(),
        )
    } else {
        let stripped = target.removed(&current)?;
        (
            stripped,
            "removed filewatchd's entries; your other changes are kept".to_string(),
        )
    };
    let report = Report {
        path: path.clone(),
        before,
        after: after.clone(),
        note,
    };
    if dry_run || !report.changed() {
        return Ok(report);
    }
    match &after {
        Some(bytes) => write_file(&path, bytes)?,
        None => std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?,
    }
    if untouched && original.is_some() {
        let _ = std::fs::remove_file(&backup);
    }
    Ok(report)
}

/// temp + fsync + rename: the agent never reads a half-written settings file.
fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let dir = path.parent().context("a settings path has a parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".filewatchd-tmp");
    let tmp = PathBuf::from(tmp_name);
    let mut file = std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn parse_settings(current: Option<&[u8]>, path: &Path) -> anyhow::Result<Value> {
    let Some(bytes) = current.filter(|b| !b.iter().all(u8::is_ascii_whitespace)) else {
        return Ok(json!({}));
    };
    let value: Value = serde_json::from_slice(bytes)
        .with_context(|| format!("{} is not valid JSON; fix it or install by hand", path.display()))?;
    if !value.is_object() {
        bail!("{} is not a JSON object; install by hand", path.display());
    }
    Ok(value)
}

fn render_json(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// An entry is ours when one of its commands runs `filewatchd ... hook <agent>`.
fn is_ours(entry: &Value, agent: Agent) -> bool {
    let suffix = format!(" hook {}", agent.name());
    entry["hooks"].as_array().is_some_and(|hooks| {
        hooks.iter().any(|h| {
            h["command"]
                .as_str()
                .is_some_and(|c| c.contains("filewatchd") && c.ends_with(&suffix))
        })
    })
}

fn merge_hooks(settings: &mut Value, entries: &[(&str, Value)], agent: Agent) {
    let Some(object) = settings.as_object_mut() else {
        return;
    };
    let hooks = object.entry("hooks").or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    for (event, entry) in entries {
        let list = hooks
            .as_object_mut()
            .map(|h| h.entry(*event).or_insert_with(|| json!([])));
        let Some(list) = list.and_then(Value::as_array_mut) else {
            continue;
        };
        if !list.iter().any(|e| is_ours(e, agent)) {
            list.push(entry.clone());
        }
    }
}

fn remove_hooks(settings: &mut Value, agent: Agent) {
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
        return;
    };
    for list in hooks.values_mut() {
        if let Some(entries) = list.as_array_mut() {
            entries.retain(|e| !is_ours(e, agent));
        }
    }
    hooks.retain(|_, list| !list.as_array().is_some_and(Vec::is_empty));
    if hooks.is_empty()
        && let Some(object) = settings.as_object_mut()
    {
        object.remove("hooks");
    }
}

fn notify_value(program: &Path) -> toml_edit::Value {
    let mut array = toml_edit::Array::new();
    array.push(program.to_string_lossy().into_owned());
    array.push("hook");
    array.push("codex");
    toml_edit::Value::Array(array)
}

fn codex_notify_installed(current: Option<&[u8]>, program: &Path) -> anyhow::Result<Vec<u8>> {
    let text = String::from_utf8_lossy(current.unwrap_or_default()).into_owned();
    let mut doc: toml_edit::DocumentMut = text.parse().context("~/.codex/config.toml is not valid TOML")?;
    let ours = notify_value(program);
    if let Some(existing) = doc.get("notify").and_then(toml_edit::Item::as_value) {
        if existing.to_string().trim() == ours.to_string().trim() {
            return Ok(text.into_bytes());
        }
        bail!(
            "~/.codex/config.toml already sets notify = {}; filewatchd will not replace it (use `filewatchd hook install codex` for lifecycle hooks instead)",
            existing.to_string().trim()
        );
    }
    doc.insert("notify", toml_edit::Item::Value(ours));
    Ok(doc.to_string().into_bytes())
}

fn codex_notify_removed(current: &[u8], program: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let text = String::from_utf8_lossy(current).into_owned();
    let mut doc: toml_edit::DocumentMut = text.parse().context("~/.codex/config.toml is not valid TOML")?;
    let ours = notify_value(program).to_string();
    if doc
        .get("notify")
        .and_then(toml_edit::Item::as_value)
        .is_some_and(|v| v.to_string().trim() == ours.trim())
    {
        doc.remove("notify");
    }
    let out = doc.to_string();
    Ok((!out.trim().is_empty()).then(|| out.into_bytes()))
}

/// The shipped plugin with this binary as its default program.
fn with_program(source: &str, program: &Path) -> String {
    let quoted =
        serde_json::to_string(&program.to_string_lossy()).unwrap_or_else(|_| "\"filewatchd\"".into());
    source.replacen("|| \"filewatchd\"", &format!("|| {quoted}"), 1)
}

fn shell_quote(text: &str) -> String {
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}
