//! The opencode plugin and the pi extension that install copies into place.

use std::path::Path;

use super::locate::Invocation;
use crate::hook::Agent;

const OPENCODE_PLUGIN: &str = include_str!("../../../integrations/opencode/filewatchd.js");
const PI_EXTENSION: &str = include_str!("../../../integrations/pi/filewatchd.ts");

fn shipped(agent: Agent) -> &'static str {
    match agent {
        Agent::Pi => PI_EXTENSION,
        _ => OPENCODE_PLUGIN,
    }
}

/// The first line of the shipped file, the same in every version filewatchd has shipped: a
/// file that starts with it is filewatchd's, whichever binary it names.
fn header(agent: Agent) -> &'static str {
    shipped(agent).lines().next().unwrap_or_default()
}

pub fn is_ours(agent: Agent, bytes: &[u8]) -> bool {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    first == header(agent).as_bytes()
}

/// The shipped file, with this binary as its default program unless the file is portable.
pub fn text(agent: Agent, invocation: &Invocation) -> String {
    let source = shipped(agent);
    match invocation {
        Invocation::Portable => source.to_string(),
        Invocation::Absolute(program) => with_program(source, program),
    }
}

fn with_program(source: &str, program: &Path) -> String {
    let quoted =
        serde_json::to_string(&program.to_string_lossy()).unwrap_or_else(|_| "\"filewatchd\"".into());
    source.replacen("|| \"filewatchd\"", &format!("|| {quoted}"), 1)
}
