//! A session's turns listing (`GET /v1/sessions/S/turns`), serialized straight into the
//! answer: a long session has thousands of turns, and a tree of JSON values per turn cost
//! more than reading their rows.

use serde::Serialize;

use crate::restore::past::Summary;
use crate::wire::turn::TurnSummary;

/// The answer: every turn with its counts, then the session's rollbacks.
#[derive(Serialize)]
pub struct Listing {
    pub session: String,
    pub turns: Vec<TurnSummary>,
    pub rollbacks: Vec<Summary>,
}
