//! Answers sized for a context window: a page of a list (with a `more` hint saying how to
//! get the rest), diffs cut per file and in total, and failures as one small JSON object
//! (`{"error":{"code","message"}}`, the API's codes passed through).

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::client::ApiFailure;
use crate::model::RollbackKind;
use crate::model::answer::{ActionLine, PathLine, Target};
use crate::wire::error::ErrorCode;

/// Items of a list in one answer unless the call asks for another `limit`.
pub const DEFAULT_LIMIT: usize = 50;
/// The most a `limit` may ask for.
pub const LIMIT_MAX: usize = 500;
/// One file's diff is cut here (at a line break).
pub const DIFF_PER_FILE: usize = 8 * 1024;
/// All diffs of one answer together; the files after it carry none.
pub const DIFF_TOTAL: usize = 48 * 1024;
/// Less of the total left than this, and a diff is left out rather than cut to nothing.
const DIFF_LEAST: usize = 512;
/// A page's items in all (as JSON, diffs included): the items past it go to the next page.
pub const PAGE_BYTES: usize = 64 * 1024;

/// The `code` of a tool's error: the API's own codes passed through, and these of the MCP
/// server's own (docs/mcp.md lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Code {
    Api(ErrorCode),
    Own(OwnCode),
}

/// The codes only the MCP server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnCode {
    /// No daemon answers, and none could be started.
    NoDaemon,
    /// The daemon refused with a code this server does not know.
    ApiError,
    /// Which session is meant is not known.
    SessionUnknown,
    BadArgument,
    AnswerTooLarge,
    /// A rollback refused because of conflicts (its plan beside).
    Conflicts,
    Internal,
}

/// Why a tool call could not answer.
#[derive(Debug)]
pub enum Failure {
    /// No daemon answers, and none could be started; the message says what to do.
    NoDaemon(String),
    /// The daemon refused (its code and message).
    Api(Box<ApiFailure>),
    /// Which session is meant is not known: the message asks for `session`.
    Session {
        message: String,
        candidates: Vec<Value>,
        /// How many candidates there are (more than those listed, past 10).
        total: usize,
    },
    /// An argument that cannot be used as given.
    BadArgument(String),
    /// The daemon's answer is past what one answer may hold (the client's body limit): the
    /// message says how to ask for less.
    TooLarge(String),
    /// A rollback refused because of conflicts: its plan, made small.
    Refused(Box<Summary>),
    Internal(String),
}

impl Failure {
    pub fn bad(message: impl Into<String>) -> Self {
        Self::BadArgument(message.into())
    }

    /// The API's error code, when the daemon refused.
    pub fn api_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Api(failure) => failure.code,
            _ => None,
        }
    }

    /// The code the agent sees.
    pub fn code(&self) -> Code {
        match self {
            Self::NoDaemon(_) => Code::Own(OwnCode::NoDaemon),
            Self::Api(failure) => failure.code.map_or(Code::Own(OwnCode::ApiError), Code::Api),
            Self::Session { .. } => Code::Own(OwnCode::SessionUnknown),
            Self::BadArgument(_) => Code::Own(OwnCode::BadArgument),
            Self::TooLarge(_) => Code::Own(OwnCode::AnswerTooLarge),
            Self::Internal(_) => Code::Own(OwnCode::Internal),
            Self::Refused(_) => Code::Own(OwnCode::Conflicts),
        }
    }

    /// The answer the agent gets: `{"error":{"code","message",...}}`.
    pub fn to_json(&self) -> Value {
        let error = |message: &str| json!({"code": self.code(), "message": message});
        match self {
            Self::Api(failure) => json!({"error": error(&failure.message)}),
            Self::Refused(plan) => json!({"error": error(plan.refused.unwrap_or("refused")), "plan": plan}),
            Self::Session {
                message,
                candidates,
                total,
            } => {
                let mut error = error(message);
                error["candidates"] = json!(candidates);
                error["candidates_total"] = json!(total);
                json!({ "error": error })
            }
            Self::NoDaemon(message)
            | Self::BadArgument(message)
            | Self::TooLarge(message)
            | Self::Internal(message) => json!({"error": error(message)}),
        }
    }
}

/// A rollback's plan or answer made small: counts, conflicts first, then the first actions;
/// `more` says how to see the rest.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub operation: RollbackKind,
    pub target: Target,
    pub dry_run: bool,
    pub applied: bool,
    pub rollback_id: Option<i64>,
    pub paths: usize,
    pub conflicts_total: usize,
    pub conflicts: Vec<PathLine>,
    pub not_restorable: Vec<PathLine>,
    pub actions: Vec<ActionItem>,
    pub more: Option<String>,
    /// A preview's: what the agent does next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// An applied rollback's refusal: what to tell the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<&'static str>,
}

/// A rollback's action with its diff fit to the answer's budget.
#[derive(Debug, Serialize)]
pub struct ActionItem {
    #[serde(flatten)]
    pub line: ActionLine,
    #[serde(flatten)]
    pub diff: FileDiff,
}

impl ActionItem {
    pub fn of(mut line: ActionLine) -> Self {
        let diff = FileDiff::of(line.diff.take());
        Self { line, diff }
    }
}

/// A file's diff in an answer as `fit_diffs` leaves it: whole, cut (`diff_cut` says how much),
/// or not there (`diff_omitted` says why).
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Serialize)]
pub struct FileDiff {
    /// `Some(None)`: left out past the answer's total budget (`null`, beside `diff_omitted`).
    pub diff: Option<Option<String>>,
    pub diff_omitted: Option<Omitted>,
    pub diff_cut: Option<String>,
}

impl FileDiff {
    pub fn of(text: Option<String>) -> Self {
        Self {
            diff: text.map(Some),
            ..Self::default()
        }
    }
}

/// Why a file's diff is not in the answer: `true` when the answer's diff budget was spent,
/// else the reason in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Omitted {
    Spent,
    Because(&'static str),
}

impl Serialize for Omitted {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Spent => serializer.serialize_bool(true),
            Self::Because(why) => serializer.serialize_str(why),
        }
    }
}

/// A tool's result: the answer as compact JSON text, or the failure (an MCP tool error).
pub fn finish(result: Result<Value, Failure>) -> Result<String, String> {
    match result {
        Ok(answer) => Ok(answer.to_string()),
        Err(failure) => Err(failure.to_json().to_string()),
    }
}

/// One page of `items`: `offset` first, at most `limit` (default and bound above). The
/// answer's `more` says how many are left and how to get them (`call` names the tool and its
/// arguments so far); `None` when nothing is left.
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: usize,
    pub more: Option<String>,
    offset: usize,
    call: String,
}

impl<T: Serialize> Page<T> {
    /// Drops the items past `PAGE_BYTES` (always keeping one), and says where the next page
    /// starts then.
    pub fn fit(&mut self) {
        let mut spent = 0;
        let kept = self
            .items
            .iter()
            .take_while(|item| {
                spent += serde_json::to_string(item).map_or(0, |text| text.len());
                spent <= PAGE_BYTES
            })
            .count()
            .max(1);
        if kept < self.items.len() {
            self.items.truncate(kept);
            let end = self.offset + kept;
            self.more = Some(more(self.total - end, &self.call, end));
        }
    }
}

fn more(left: usize, call: &str, next: usize) -> String {
    format!("{left} more: call {call} with offset={next} (limit up to {LIMIT_MAX})")
}

/// A `limit` argument: the default when absent, at most `LIMIT_MAX`; 0 lists nothing (the
/// counts alone).
pub fn limit(asked: Option<usize>) -> usize {
    asked.unwrap_or(DEFAULT_LIMIT).min(LIMIT_MAX)
}

pub fn page<T>(items: Vec<T>, offset: Option<usize>, asked: Option<usize>, call: &str) -> Page<T> {
    let total = items.len();
    let offset = offset.unwrap_or(0).min(total);
    let end = (offset + limit(asked)).min(total);
    let items = items.into_iter().skip(offset).take(end - offset).collect();
    paged(items, total, offset, call)
}

/// A page the daemon cut already: `items` start at `offset` of `total`.
pub fn paged<T>(items: Vec<T>, total: usize, offset: usize, call: &str) -> Page<T> {
    let end = offset + items.len();
    let more = (end < total).then(|| more(total - end, call, end));
    Page {
        items,
        total,
        more,
        offset,
        call: call.to_string(),
    }
}

/// Cuts diffs to the per-file and total budgets, in place: a cut diff ends where a line
/// ends and says so (`diff_cut`), a file past the total budget loses its diff
/// (`diff_omitted`). Returns whether anything was cut or left out.
pub fn fit_diffs<'a>(diffs: impl Iterator<Item = &'a mut FileDiff>) -> bool {
    let mut spent = 0;
    let mut cut_any = false;
    for item in diffs {
        let Some(Some(diff)) = &mut item.diff else {
            continue;
        };
        let budget = DIFF_PER_FILE.min(DIFF_TOTAL.saturating_sub(spent));
        if budget < DIFF_LEAST {
            item.diff = Some(None);
            item.diff_omitted = Some(Omitted::Spent);
            cut_any = true;
            continue;
        }
        if diff.len() > budget {
            let kept = cut_at_line(diff, budget).len();
            let lines_cut = diff[kept..].lines().count();
            diff.truncate(kept);
            item.diff_cut = Some(format!("{lines_cut} more lines of this diff cut"));
            cut_any = true;
        }
        spent += diff.len();
    }
    cut_any
}

/// The longest prefix of `text` no longer than `max` bytes that ends at a line break.
fn cut_at_line(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind('\n') {
        Some(at) => &text[..=at],
        None => &text[..end],
    }
}

/// The first line of a label (a prompt), cut to 200 characters.
pub fn first_line(text: Option<&str>) -> Option<String> {
    let line = text?.lines().next().unwrap_or_default();
    Some(line.chars().take(200).collect())
}

/// Percent-encodes a query value (a path, a time): only unreserved characters and `/` stay.
pub fn encode(text: &str) -> String {
    percent(text, b"-._~/")
}

/// Percent-encodes one segment of a URL path (a session name, a turn ref): `/`, `?`, `#`
/// and `.` too, so no value can reach another endpoint or read as `..`.
pub fn segment(text: &str) -> String {
    percent(text, b"-_~")
}

fn percent(text: &str, kept: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || kept.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_segment_cannot_leave_its_segment() {
        assert_eq!(segment("s1/redo?x#y"), "s1%2Fredo%3Fx%23y");
        assert_eq!(segment(".."), "%2E%2E");
        assert_eq!(encode("a b/c&d=e"), "a%20b/c%26d%3De");
    }

    #[test]
    fn a_page_says_how_to_get_the_rest() {
        let items: Vec<Value> = (0..7).map(|i| json!(i)).collect();
        let first = page(items.clone(), None, Some(3), "turns");
        assert_eq!(first.items, vec![json!(0), json!(1), json!(2)]);
        assert_eq!(first.total, 7);
        assert_eq!(
            first.more.as_deref(),
            Some("4 more: call turns with offset=3 (limit up to 500)")
        );
        let last = page(items, Some(6), Some(3), "turns");
        assert_eq!(last.items, vec![json!(6)]);
        assert!(last.more.is_none());
    }

    #[test]
    fn a_page_past_its_byte_budget_ends_early_and_says_where_to_go_on() {
        let big = json!({"path": "x".repeat(PAGE_BYTES / 4)});
        let mut full = page(vec![big; 10], Some(2), Some(8), "turn_changes");
        full.fit();
        assert_eq!(full.items.len(), 3);
        assert_eq!(
            full.more.as_deref(),
            Some("5 more: call turn_changes with offset=5 (limit up to 500)")
        );
    }

    fn text(diff: &FileDiff) -> Option<&str> {
        diff.diff.as_ref().and_then(Option::as_deref)
    }

    #[test]
    fn diffs_are_cut_at_lines_per_file_and_left_out_past_the_total() {
        let long: String = (0..3000).map(|i| format!("+line {i}\n")).collect();
        let mut items: Vec<FileDiff> = (0..8).map(|_| FileDiff::of(Some(long.clone()))).collect();
        assert!(fit_diffs(items.iter_mut()));
        let first = text(&items[0]).expect("kept");
        assert!(
            first.len() <= DIFF_PER_FILE && first.ends_with('\n'),
            "{}",
            first.len()
        );
        assert!(items[0].diff_cut.is_some());
        let spent: usize = items.iter().filter_map(text).map(str::len).sum();
        assert!(spent <= DIFF_TOTAL, "{spent}");
        assert_eq!(json!(items[7]), json!({"diff": null, "diff_omitted": true}));
        let mut small = [FileDiff::of(Some("+a\n".into()))];
        assert!(!fit_diffs(small.iter_mut()));
        assert_eq!(text(&small[0]), Some("+a\n"));
    }
}
