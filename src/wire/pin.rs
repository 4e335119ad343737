//! Pins (`GET /v1/pins`, and the pin `POST /v1/pins` made or `DELETE` removed).

use serde::{Deserialize, Serialize};

/// A named point of the history: the end of a turn, a time, or the moment it was made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pin {
    pub name: String,
    /// The sequence number that splits the history there.
    pub seq: i64,
    /// The session and turn whose end it names.
    pub session: Option<String>,
    pub turn: Option<i64>,
    /// The time it names.
    pub at: Option<String>,
    pub created_at: String,
}

/// Every pin, oldest point first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pins {
    pub pins: Vec<Pin>,
}
