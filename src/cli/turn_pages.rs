//! A turn's changes read page by page (`GET /v1/sessions/{s}/turns/{t}?offset=&limit=`,
//! docs/api.md), as the review page and the MCP server read them: a turn whose diffs are past
//! what one answer may hold (`client::ANSWER_LIMIT`) is shown all the same, and `show` prints
//! a page while the next is still being made.

use serde_json::{Value, json};

use super::{Client, Hint, LIST_TURNS, encode};
use crate::api::error::ErrorCode;
use crate::client::TooLarge;

/// Changes per request with their diffs: a page costs the daemon its diffs, and one request
/// of many small files is cheaper than many requests.
const DIFF_PAGE: usize = 100;
/// Changes per request without diffs (a change is a few hundred bytes).
const PLAIN_PAGE: usize = 2000;

/// Where the next page of one turn starts.
pub(super) struct Pages<'a> {
    client: &'a Client,
    /// `/v1/sessions/{s}/turns/{n}`, with the number the first page gave (`current` could
    /// name another turn by the next request).
    base: String,
    diff: bool,
    offset: usize,
    /// Changes asked for per request: one after a page past the client's limit (each try
    /// costs the daemon the page's diffs, so trying smaller pages in turn would cost more),
    /// doubled after each page that fits.
    limit: usize,
    total: usize,
}

/// The first page: the turn without its changes (heading, counts), the first changes, and
/// where the rest starts.
pub(super) struct First<'a> {
    pub summary: Value,
    pub changes: Vec<Value>,
    pub pages: Pages<'a>,
}

impl<'a> Pages<'a> {
    /// Reads the first page of turn `turn` (a number, a ref or `current`) of `session`.
    pub(super) fn first(
        client: &'a Client,
        session: &str,
        turn: &str,
        diff: bool,
    ) -> anyhow::Result<First<'a>> {
        let mut pages = Pages {
            client,
            base: format!("/v1/sessions/{}/turns/{}", encode(session), encode(turn)),
            diff,
            offset: 0,
            limit: if diff { DIFF_PAGE } else { PLAIN_PAGE },
            total: 0,
        };
        let mut summary = pages.fetch().hint(ErrorCode::NotFound, LIST_TURNS)?;
        pages.total = summary["changes_total"].as_u64().unwrap_or(0) as usize;
        pages.base = format!("/v1/sessions/{}/turns/{}", encode(session), summary["turn"]);
        let changes = take_changes(&mut summary);
        if let Some(map) = summary.as_object_mut() {
            map.remove("changes_total");
        }
        pages.offset = changes.len();
        Ok(First {
            summary,
            changes,
            pages,
        })
    }

    /// How many changes the turn has.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    /// The next page's changes; `None` after the last.
    pub(super) fn next(&mut self) -> anyhow::Result<Option<Vec<Value>>> {
        if self.offset >= self.total {
            return Ok(None);
        }
        let changes = take_changes(&mut self.fetch()?);
        if changes.is_empty() {
            // The turn lists fewer changes than it did (an open turn): nothing more to read.
            return Ok(None);
        }
        self.offset += changes.len();
        Ok(Some(changes))
    }

    /// The page at `offset`, cut to one change when it is past the client's limit; a change whose
    /// diff alone is past it comes without the diff (`diff_omitted`).
    fn fetch(&mut self) -> anyhow::Result<Value> {
        let max = if self.diff { DIFF_PAGE } else { PLAIN_PAGE };
        loop {
            match self.client.get(&self.query(self.limit, self.diff)) {
                Err(err) if err.is::<TooLarge>() && self.limit > 1 => self.limit = 1,
                Err(err) if err.is::<TooLarge>() && self.diff => return self.without_diff(),
                answer => {
                    self.limit = (self.limit * 2).min(max);
                    return answer;
                }
            }
        }
    }

    /// The one change at `offset` without its diff, marked as such.
    fn without_diff(&self) -> anyhow::Result<Value> {
        let mut answer = self.client.get(&self.query(1, false))?;
        for change in answer["changes"].as_array_mut().into_iter().flatten() {
            change["diff_omitted"] = json!(true);
        }
        Ok(answer)
    }

    fn query(&self, limit: usize, diff: bool) -> String {
        let diff = if diff { "&diff=true" } else { "" };
        format!("{}?offset={}&limit={limit}{diff}", self.base, self.offset)
    }
}

fn take_changes(answer: &mut Value) -> Vec<Value> {
    match answer.as_object_mut().and_then(|map| map.remove("changes")) {
        Some(Value::Array(changes)) => changes,
        _ => Vec::new(),
    }
}
