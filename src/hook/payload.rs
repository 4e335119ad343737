//! The agents' hook payloads as types (tests/fixtures/hooks/README.md has them and their
//! sources). Every field is read leniently: one absent, or of another shape than expected,
//! reads as empty, so a payload a newer agent sends differently never fails a hook for a
//! field the mapping does not need.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

/// A field read as `T`, or as `T::default()` when it is absent or is not a `T`.
#[derive(Debug, Default)]
pub struct Loose<T>(pub T);

/// A text field: `None` unless it is a string.
pub type Text = Loose<Option<String>>;

impl<'de, T: DeserializeOwned + Default> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(Self(T::deserialize(value).unwrap_or_default()))
    }
}

impl<T> std::ops::Deref for Loose<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// A payload as `T`: one that is not an object reads as empty.
pub fn read<T: DeserializeOwned + Default>(payload: &Value) -> T {
    T::deserialize(payload).unwrap_or_default()
}

/// Claude Code's, Gemini CLI's and Codex's hooks: the same base fields [CC, G-typ, X-sch].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Hook {
    pub session_id: Text,
    pub cwd: Text,
    pub hook_event_name: Text,
    pub prompt: Text,
    /// `SessionStart`'s: `compact` after an auto-compaction.
    pub source: Text,
    pub turn_id: Text,
    pub tool_use_id: Text,
    pub tool_name: Text,
    pub tool_input: Loose<ToolInput>,
}

/// Codex's legacy `notify` [X-notify].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CodexNotify {
    #[serde(rename = "type")]
    pub kind: Loose<Option<Value>>,
    #[serde(rename = "thread-id")]
    pub thread_id: Text,
    pub cwd: Text,
    #[serde(rename = "input-messages")]
    pub input_messages: Loose<Vec<Value>>,
}

/// The envelope of integrations/opencode/filewatchd.js [O-plg, O-sdk].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Opencode {
    pub directory: Text,
    pub hook: Text,
    pub input: Loose<OpencodeCall>,
    pub output: Loose<OpencodeCall>,
    pub event: Loose<OpencodeEvent>,
}

/// A hook's `input` or `output`: the session and tool call, its arguments, a message's parts.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct OpencodeCall {
    #[serde(rename = "sessionID")]
    pub session_id: Text,
    #[serde(rename = "callID")]
    pub call_id: Text,
    pub tool: Text,
    pub args: Loose<ToolInput>,
    pub parts: Loose<Vec<Loose<Tagged>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct OpencodeEvent {
    #[serde(rename = "type")]
    pub kind: Text,
    pub properties: Loose<Properties>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Properties {
    #[serde(rename = "sessionID")]
    pub session_id: Text,
    pub status: Loose<Tagged>,
    pub info: Loose<Tagged>,
}

/// A small object of an event (a status, a session's info, a message's part): its `type`, and
/// its `id` or `text`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Tagged {
    #[serde(rename = "type")]
    pub kind: Text,
    pub id: Text,
    pub text: Text,
}

/// The envelope of integrations/pi/filewatchd.ts [P-doc, P-typ].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Pi {
    pub session_id: Text,
    pub cwd: Text,
    pub event: Loose<PiEvent>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PiEvent {
    #[serde(rename = "type")]
    pub kind: Text,
    pub prompt: Text,
    pub tool_call_id: Text,
    pub tool_name: Text,
    pub input: Loose<ToolInput>,
}

/// A tool call's input: the fields the agents' edit tools name their files in.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ToolInput {
    /// Claude Code's and Gemini CLI's.
    pub file_path: Text,
    /// Claude Code's `NotebookEdit`.
    pub notebook_path: Text,
    /// opencode's.
    #[serde(rename = "filePath")]
    pub file_path_camel: Text,
    /// pi's.
    pub path: Text,
    /// Codex's `apply_patch`: the patch.
    pub command: Text,
    /// opencode's `apply_patch`: the patch.
    #[serde(rename = "patchText")]
    pub patch_text: Text,
}
