//! A tool call's start or end (`Command::ToolCall`): the window its session's writes are
//! attributed by (`crate::capture::owners`). The barrier has recorded every write made
//! before the marker; a start opens the call's window for what follows, an end closes it.

use std::time::Duration;

use super::worker::Worker;
use crate::capture::owners::{Attribution, Call, Who};
use crate::store::{owners, sql};
use crate::wire::request::CallPhase;
use crate::wire::turn::ToolCallMarked;

/// How long a marker waits for fanotify's reader to catch up with its cookie: it reads as the
/// events come, so this is a bound, not a wait.
const CATCH_UP: Duration = Duration::from_millis(200);

impl Worker {
    /// Who the writes of a batch recorded now belong to, as one owner (a rescan's).
    pub(super) fn who(&self) -> Attribution {
        self.owners.who().batch
    }

    /// Who the writes recorded now belong to: the windows, and fanotify's writers if any.
    pub(super) fn who_now(&self) -> Who {
        let Some(writers) = &self.writers else {
            return self.owners.who();
        };
        // Only an ambiguous batch asks fanotify; one a burst's settling (not a marker) records
        // lets the reader take what is queued first, or its writes would stay ambiguous.
        if self.owners.who().batch.origin == crate::model::Origin::Ambiguous {
            writers.caught_up(CATCH_UP);
        }
        self.owners.who_with(&writers.take())
    }

    /// Before a marker's batch: fanotify's reader has taken every event queued now, so every
    /// write made before the marker has its writers.
    pub(super) fn writers_caught_up(&self) {
        if let Some(writers) = &self.writers
            && !writers.caught_up(CATCH_UP)
        {
            tracing::debug!("fanotify's reader did not catch up with the marker in time");
        }
    }

    pub(super) fn tool_call(
        &mut self,
        session: &str,
        phase: CallPhase,
        call: Call,
    ) -> rusqlite::Result<ToolCallMarked> {
        let Some(turn) = self.owners.turn_of(session).map(|t| (t.id, t.number)) else {
            tracing::debug!(session, ?phase, "a tool call outside any turn: ignored");
            return Ok(ToolCallMarked {
                session: session.to_string(),
                turn: None,
                open_calls: 0,
                unmatched: false,
            });
        };
        let (turn_id, number) = turn;
        // A start, or an end whose start was missed: the agent reports its calls. Written once
        // per turn, not at every call (the hook waits for this answer).
        if !self.owners.is_windowed(turn_id) {
            owners::set_windowed(&self.conn, turn_id)?;
            self.refresh_open_turns();
        }
        let unmatched = match phase {
            CallPhase::Start => {
                self.owners.start_call(turn_id, call);
                false
            }
            CallPhase::End => {
                self.owners.mark_windowed(turn_id);
                let ended = self
                    .owners
                    .end_call(turn_id, call.id.as_deref(), call.tool.as_deref());
                if !ended {
                    tracing::debug!(session, id = ?call.id, tool = ?call.tool, "a tool call's end matched no open call");
                }
                !ended
            }
        };
        Ok(ToolCallMarked {
            session: session.to_string(),
            turn: Some(number),
            open_calls: self.owners.calls_of(turn_id),
            unmatched,
        })
    }

    /// The open turns as the index has them, after a turn marker.
    pub(super) fn refresh_open_turns(&mut self) {
        let open =
            sql::open_turns(&self.conn).and_then(|open| Ok((open, owners::windowed_open(&self.conn)?)));
        match open {
            Ok((open, windowed)) => self.owners.refresh(open, &windowed),
            Err(err) => self.ctx.stats.set_error(format!("cannot read open turns: {err}")),
        }
    }
}
