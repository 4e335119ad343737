//! A turn's changes read page by page (`GET /v1/sessions/{s}/turns/{t}?offset=&limit=`,
//! docs/api.md), as the review page and the MCP server read them: a turn whose diffs are past
//! what one answer may hold (`client::ANSWER_LIMIT`) is shown all the same, and `show` prints
//! a page while the next is still being made.

use super::{Client, Hint, LIST_TURNS, encode};
use crate::client::TooLarge;
use crate::wire::error::ErrorCode;
use crate::wire::turn::{Change, Turn};

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
    /// `&path=P`: only the changes at or beneath a path.
    under: String,
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
    /// Its `changes` taken out, its `changes_total` left out.
    pub turn: Turn,
    pub changes: Vec<Change>,
    pub pages: Pages<'a>,
}

impl<'a> Pages<'a> {
    /// Reads the first page of turn `turn` (a number, a ref or `current`) of `session`.
    pub(super) fn first(
        client: &'a Client,
        session: &str,
        turn: &str,
        diff: bool,
        path: Option<&str>,
    ) -> anyhow::Result<First<'a>> {
        let mut pages = Pages {
            client,
            base: format!("/v1/sessions/{}/turns/{}", encode(session), encode(turn)),
            under: path.map_or_else(String::new, |p| format!("&path={}", encode(p))),
            diff,
            offset: 0,
            limit: if diff { DIFF_PAGE } else { PLAIN_PAGE },
            total: 0,
        };
        let mut turn = pages.fetch().hint(ErrorCode::NotFound, LIST_TURNS)?;
        pages.total = turn.changes_total.take().unwrap_or(0);
        pages.base = format!("/v1/sessions/{}/turns/{}", encode(session), turn.summary.turn);
        let changes = std::mem::take(&mut turn.changes);
        pages.offset = changes.len();
        Ok(First { turn, changes, pages })
    }

    /// How many changes the turn has.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    /// The next page's changes; `None` after the last.
    pub(super) fn next(&mut self) -> anyhow::Result<Option<Vec<Change>>> {
        if self.offset >= self.total {
            return Ok(None);
        }
        let changes = self.fetch()?.changes;
        if changes.is_empty() {
            // The turn lists fewer changes than it did (an open turn): nothing more to read.
            return Ok(None);
        }
        self.offset += changes.len();
        Ok(Some(changes))
    }

    /// The page at `offset`, cut to one change when it is past the client's limit; a change whose
    /// diff alone is past it comes without the diff (`diff_omitted`).
    fn fetch(&mut self) -> anyhow::Result<Turn> {
        let max = if self.diff { DIFF_PAGE } else { PLAIN_PAGE };
        loop {
            match self.client.get_as(&self.query(self.limit, self.diff)) {
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
    fn without_diff(&self) -> anyhow::Result<Turn> {
        let mut answer: Turn = self.client.get_as(&self.query(1, false))?;
        for change in &mut answer.changes {
            change.diff_omitted = true;
        }
        Ok(answer)
    }

    fn query(&self, limit: usize, diff: bool) -> String {
        let diff = if diff { "&diff=true" } else { "" };
        format!(
            "{}?offset={}&limit={limit}{diff}{}",
            self.base, self.offset, self.under
        )
    }
}
