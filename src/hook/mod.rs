//! Agent integrations (PRODUCT.md 5.4, 9): `events` maps each agent's hook payload to a turn
//! marker, `run` is `filewatchd hook <agent>`, `autostart` how it reaches the daemon (starting
//! one for a new prompt when none runs), `install` writes (and removes) the hook
//! configuration in the agent's own settings, `agents` records which session each agent
//! process reported (for `filewatchd mcp`).

pub mod agents;
pub mod autostart;
pub mod events;
pub mod install;
pub mod run;

pub use events::Agent;
