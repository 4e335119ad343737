//! The Gemini API dialect of the scripted model server (tests/common/model.rs):
//! `POST .../models/M:streamGenerateContent?alt=sse` (Gemini CLI).

use serde_json::Value;

use super::Script;

pub fn turn(_request: &Value, _script: &Script) -> Vec<String> {
    Vec::new()
}
