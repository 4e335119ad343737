//! Processes' ancestry (their parents from `platform::parent_of`: `/proc` on Linux, unknown
//! elsewhere): a hook reports its agent's ancestry, and the daemon, given a writer's pid by
//! fanotify (`crate::watch::writers`), finds whose it is.

use crate::platform::{name_of, parent_of};

/// `pid`'s ancestors, nearest first, up to (not including) pid 1, at most `max`.
pub fn ancestry(pid: u32, max: usize) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut at = pid;
    while chain.len() < max {
        match parent_of(at) {
            Some(parent) if parent > 1 && !chain.contains(&parent) => {
                chain.push(parent);
                at = parent;
            }
            _ => break,
        }
    }
    chain
}

/// Shells and wrappers an agent runs its hooks through: not the agent.
const WRAPPERS: [&str; 9] = [
    "sh", "bash", "dash", "zsh", "fish", "ksh", "env", "timeout", "nice",
];

/// A hook's ancestry from its agent on: the shells and wrappers the agent ran it through left
/// out, so the first pid is the agent itself (what a writer must descend from to be its).
pub fn agent_ancestry(pid: u32, max: usize) -> Vec<u32> {
    let chain = ancestry(pid, max);
    let wrappers = chain
        .iter()
        .take_while(|&&p| name_of(p).is_some_and(|n| WRAPPERS.contains(&n.as_str())))
        .count();
    chain[wrappers.min(chain.len().saturating_sub(1))..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_its_parent_first() {
        let me = std::process::id();
        let chain = ancestry(me, 64);
        assert_eq!(chain.first().copied(), parent_of(me));
        assert!(!chain.contains(&1) && !chain.contains(&me));
        assert_eq!(parent_of(u32::MAX), None);
    }
}
