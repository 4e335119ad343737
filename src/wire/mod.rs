//! The answers of the HTTP API (docs/api.md) as types both sides use: the daemon serializes
//! them, and its clients (the CLI, the MCP server, the hooks) deserialize the same types
//! through `client::Client::get_as`, so renaming a field is a compile error on both sides.
//! Each type's fields are in the order the answer shows them; a field an answer leaves out
//! when it is empty or false is left out here too.
//!
//! So far: the error codes ([`error`]), a turn ([`turn`]), a session's turns listing ([`listing`]), a line's blame ([`blame`]), a rollback's answer
//! ([`rollback`]), the sessions ([`session`]), the pins ([`pin`]), a path's versions
//! ([`history`]), the status ([`status`], with `POST /v1/stop`'s [`status::Stopping`]), the timeline ([`timeline`]) and the upkeep's
//! answers, gc and verify ([`upkeep`]), with a fork ([`session::Forked`]), the review marks
//! ([`turn::Review`]) and the page's login link ([`session::LoginCode`]). The CLI and the MCP
//! server read every answer through these types (the hooks read none: only whether a marker
//! was taken); the JSON still read by key is what the agents send the hooks. The bodies of the
//! requests are [`request`]'s: the daemon reads and every client writes the same types.

pub mod blame;
pub mod error;
pub mod history;
pub mod listing;
pub mod pin;
pub mod request;
pub mod rollback;
pub mod session;
pub mod status;
pub mod timeline;
pub mod turn;
pub mod upkeep;

/// For `skip_serializing_if`: a flag an answer shows only when it is true.
pub(crate) fn is_false(flag: &bool) -> bool {
    !*flag
}
