//! Agent integrations (docs/agents.md): `events` maps each agent's hook payload (read into
//! `payload`'s types) to a turn marker (and, through `tool_events`, each tool call's start and end), `run` is `filewatchd hook <agent>`, `autostart` how it reaches the daemon (starting
//! one for a new prompt when none runs), `install` writes (and removes) the hook
//! configuration in the agent's own settings, `agents` records which session each agent
//! process reported (for `filewatchd mcp`).

pub mod agents;
pub mod autostart;
pub mod events;
pub mod install;
mod payload;
pub mod run;
pub mod tool_events;

pub use events::Agent;
