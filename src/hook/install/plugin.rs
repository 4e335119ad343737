//! The opencode plugin and the pi extension that install copies into place.

use std::path::Path;

use super::locate::Invocation;
use crate::hook::Agent;

fn shipped(agent: Agent) -> &'static str {
    match agent {
        Agent::Pi => include_str!("../../../integrations/pi/filewatchd.ts"),
        _ => include_str!("../../../integrations/opencode/filewatchd.js"),
    }
}

/// Whether the file starts with the shipped file's first line, the same in every version
/// filewatchd has shipped: such a file is filewatchd's, whichever binary it names.
pub fn is_ours(agent: Agent, bytes: &[u8]) -> bool {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    first == shipped(agent).lines().next().unwrap_or_default().as_bytes()
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

/// The program a plugin file runs when `$FILEWATCHD_BIN` is unset: the string after
/// `FILEWATCHD_BIN ||` (`filewatchd` from `PATH`, or a full path).
pub fn default_program(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (_, rest) = text.split_once("process.env.FILEWATCHD_BIN || ")?;
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    stream.next()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_program_is_read_back_as_written() {
        let portable = text(Agent::Opencode, &Invocation::Portable);
        assert_eq!(
            default_program(portable.as_bytes()).as_deref(),
            Some("filewatchd")
        );
        let program = Path::new("/opt/my \"tools\"/filewatchd");
        let absolute = text(Agent::Pi, &Invocation::Absolute(program.to_path_buf()));
        assert_eq!(default_program(absolute.as_bytes()).as_deref(), program.to_str());
    }
}
