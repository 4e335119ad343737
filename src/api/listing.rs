//! A session's turns listing (`GET /v1/sessions/S/turns`), serialized straight into the
//! answer: a long session has thousands of turns, and a tree of JSON values per turn cost
//! more than reading their rows.

use serde::Serialize;

use crate::history::Counts;
use crate::model::format_time;
use crate::restore::past::Summary;
use crate::store::sql::TurnRow;

/// The answer: every turn with its counts, then the session's rollbacks.
#[derive(Serialize)]
pub struct Listing {
    pub session: String,
    pub turns: Vec<TurnSummary>,
    pub rollbacks: Vec<Summary>,
}

/// One turn as docs/api.md lists it (the fields of a turn's own answer before its changes).
#[derive(Serialize)]
pub struct TurnSummary {
    session: String,
    turn: i64,
    #[serde(rename = "ref")]
    turn_ref: Option<String>,
    label: Option<String>,
    started_at: String,
    ended_at: Option<String>,
    start_seq: i64,
    end_seq: Option<i64>,
    counts: Counts,
}

impl TurnSummary {
    pub fn of(turn: TurnRow, counts: Counts) -> Self {
        Self {
            session: turn.session,
            turn: turn.number,
            turn_ref: turn.turn_ref,
            label: turn.label,
            started_at: format_time(turn.started_at),
            ended_at: turn.ended_at.map(format_time),
            start_seq: turn.start_seq,
            end_seq: turn.end_seq,
            counts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same bytes as the turn's own summary (`render::turn_summary`), field for field.
    #[test]
    fn a_listed_turn_says_what_its_own_summary_says() {
        let turn = |ended: Option<i64>, label: Option<&str>| TurnRow {
            id: 4,
            session_id: 1,
            session: "s1".into(),
            number: 3,
            turn_ref: label.map(|_| "r-3".into()),
            label: label.map(String::from),
            start_seq: 10,
            end_seq: ended.map(|_| 12),
            started_at: 1_000,
            ended_at: ended,
        };
        let counts = Counts {
            added: 1,
            modified: 2,
            deleted: 3,
            renamed: 4,
            ambiguous: 5,
        };
        for row in [turn(Some(2_000), Some("add \"login\"")), turn(None, None)] {
            let own = super::super::render::turn_summary(&row, counts).to_string();
            let listed = serde_json::to_string(&TurnSummary::of(row, counts)).expect("json");
            assert_eq!(listed, own);
        }
    }
}
