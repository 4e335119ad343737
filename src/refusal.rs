//! Why the engine cannot run a command that changes the record now. A turn marker, a fork, a
//! rollback, a pin and a verification pass may each be refused for the same three reasons,
//! whatever the operation: each operation's own error carries a [`Refusal`] beside what only
//! it can fail with, and the API answers a refusal the same way for all of them.

use crate::store::fault::Unrecorded;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Refusal {
    /// Writes made before the command cannot be recorded (G12): 503 `storage_error`.
    #[error("{0}")]
    Unrecorded(Unrecorded),
    /// The engine has stopped (the daemon is shutting down): 503 `unavailable`.
    #[error("the daemon is shutting down")]
    Unavailable,
    /// The workspace root was moved away, removed or replaced; the message says what became
    /// of it: 503 `workspace_lost`.
    #[error("{0}")]
    WorkspaceLost(String),
}
