//! The read tools: `turn_changes`, `turns`, `file_history`, `blame` (and `diff_since`, in
//! `since`). Each asks the daemon's API and answers compact JSON: counts first, then a
//! capped page of the list with `more` saying how to get the rest.

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::Server;
use super::args::Parameters;
use super::changes::{self, TurnChangesArgs};
use super::reach::Reached;
use super::session::{self, Resolved, Told};
use super::shape::{self, Failure, encode, finish, first_line, page};
use crate::model::{Kind, Origin};
use crate::wire::blame::{Blame, Line};
use crate::wire::error::ErrorCode;
use crate::wire::history::{History, Version};
use crate::wire::is_false;
use crate::wire::timeline::{Entry, Timeline, TurnEntry};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnsArgs {
    /// The session (default: this session).
    pub session: Option<String>,
    /// Skip this many of the latest turns.
    pub offset: Option<usize>,
    /// At most this many turns, the latest first (default 50, at most 500).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// The path, relative to the workspace root, with `/` separators.
    pub path: String,
    /// Skip this many of the latest versions.
    pub offset: Option<usize>,
    /// At most this many versions, the latest first (default 50, at most 500).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlameArgs {
    /// The file, relative to the workspace root.
    pub path: String,
    /// Blame the version recorded at this sequence number (default: the latest).
    pub seq: Option<i64>,
    /// Blame the version recorded at this RFC 3339 time.
    pub at: Option<String>,
    /// The first line to show (1-based, default 1).
    pub start_line: Option<usize>,
    /// At most this many lines (default 200, at most 1000).
    pub lines: Option<usize>,
}

/// Lines of `blame` unless asked for another number, and the most it gives.
const BLAME_LINES: usize = 200;
const BLAME_LINES_MAX: usize = 1000;
/// A blamed line's text is cut here.
const LINE_CHARS: usize = 300;

impl Server {
    /// Resolves the session, then runs `answer` with it on the daemon's client.
    pub(super) async fn in_session<F>(
        &self,
        argument: Option<String>,
        ctx: &RequestContext<RoleServer>,
        answer: F,
    ) -> Result<String, String>
    where
        F: FnOnce(&Reached, &Resolved) -> Result<Value, Failure> + Send + 'static,
    {
        let told = Told::new(argument, ctx);
        let result = self
            .daemon
            .ask(move |daemon| {
                let session = session::resolve(daemon, &told)?;
                let mut answer =
                    answer(daemon, &session).map_err(|failure| unknown(daemon, &session, failure))?;
                if let Value::Object(fields) = &mut answer {
                    fields.shift_insert(0, "session".into(), json!(session.name));
                    fields.shift_insert(1, "session_from".into(), json!(session.from));
                }
                Ok(answer)
            })
            .await;
        finish(result)
    }
}

/// The daemon has no session of that name (one the agent named, not yet seen by any hook):
/// the refusal lists those there are.
fn unknown(daemon: &Reached, session: &Resolved, failure: Failure) -> Failure {
    let missing = matches!(&failure, Failure::Api(api)
        if api.code == Some(ErrorCode::NotFound) && api.message.starts_with("no session named"));
    match missing.then(|| session::listed(daemon)) {
        Some(Ok(listed)) => session::no_such_session(&session.name, &listed),
        _ => failure,
    }
}

#[tool_router(router = read_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "What a turn of this session changed so far (default: the current turn), shell commands' side effects included: counts, then changed paths with kind (added/modified/deleted/renamed), optionally unified diffs."
    )]
    async fn turn_changes(
        &self,
        Parameters(args): Parameters<TurnChangesArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        self.in_session(args.session.clone(), &ctx, move |daemon, s| {
            changes::turn_changes(daemon, s, &args)
        })
        .await
    }

    #[tool(
        description = "This session's turns, the latest first: number, the prompt's first line, change counts, open or ended, and whether an undo took it back."
    )]
    async fn turns(
        &self,
        Parameters(args): Parameters<TurnsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        self.in_session(args.session.clone(), &ctx, move |daemon, s| {
            turns(daemon, s, &args)
        })
        .await
    }

    #[tool(
        description = "Every recorded version of one path, the latest first: when, by whom (a turn of which session, outside any turn, a rollback), kind and size."
    )]
    async fn file_history(&self, Parameters(args): Parameters<PathArgs>) -> Result<String, String> {
        let args = args?;
        finish(self.daemon.ask(move |daemon| file_history(daemon, &args)).await)
    }

    #[tool(
        description = "Each line of a text file with the version that introduced it: the turn (and its prompt) or who else wrote it, grouped into runs of lines."
    )]
    async fn blame(&self, Parameters(args): Parameters<BlameArgs>) -> Result<String, String> {
        let args = args?;
        finish(self.daemon.ask(move |daemon| blame(daemon, &args)).await)
    }
}

/// The timeline's turn entries (they say `undone`), the latest first, page after page until
/// `offset + limit` are found.
fn turns(daemon: &Reached, session: &Resolved, args: &TurnsArgs) -> Result<Value, Failure> {
    let offset = args.offset.unwrap_or(0);
    let limit = shape::limit(args.limit);
    let mut found = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut query = format!("/v1/timeline?session={}&limit=1000", encode(&session.name));
        if let Some(cursor) = &before {
            query.push_str(&format!("&before={}", encode(cursor)));
        }
        let answer: Timeline = daemon.get_as(&query)?;
        found.extend(answer.entries.iter().filter_map(|e| match e {
            Entry::Turn(turn) => Some(turn_line(turn)),
            _ => None,
        }));
        match answer.next_before {
            Some(cursor) if found.len() < offset + limit + 1 => before = Some(cursor),
            _ => break,
        }
    }
    let total = super::session::listed(daemon)?
        .into_iter()
        .find(|s| s.session == session.name)
        .map_or(found.len() as i64, |s| s.turns);
    let mut page = page(found, Some(offset), Some(limit), "turns");
    page.fit();
    Ok(json!({"turns_total": total, "turns": page.items, "more": page.more}))
}

fn turn_line(entry: &TurnEntry) -> Value {
    json!({
        "turn": entry.turn,
        "prompt": entry.prompt,
        "started_at": entry.started_at,
        "ended_at": entry.ended_at,
        "open": entry.open,
        "undone": entry.undone,
        "kept_by_the_undo": entry.kept,
        "counts": entry.counts,
    })
}

/// `GET /v1/history`: every version, shown the latest first.
fn file_history(daemon: &Reached, args: &PathArgs) -> Result<Value, Failure> {
    let answer: History = daemon.get_as(&format!("/v1/history?path={}", encode(&args.path)))?;
    let versions: Vec<&Version> = answer.versions.iter().rev().collect();
    let mut by_origin = Map::new();
    for version in &versions {
        let count = by_origin.entry(version.origin.name()).or_insert(json!(0));
        *count = json!(count.as_u64().unwrap_or(0) + 1);
    }
    let lines = versions.into_iter().map(version_line).collect();
    let call = format!("file_history (path={:?})", args.path);
    let mut page = page(lines, args.offset, args.limit, &call);
    page.fit();
    Ok(json!({
        "path": answer.path,
        "versions_total": page.total,
        "by_origin": by_origin,
        "versions": page.items,
        "more": page.more,
    }))
}

/// A version as the agent needs it: no hashes.
#[derive(Serialize)]
struct VersionLine<'a> {
    seq: i64,
    time: &'a str,
    origin: Origin,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<i64>,
    kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "is_false")]
    too_large: bool,
    #[serde(skip_serializing_if = "is_false")]
    unreadable: bool,
}

fn version_line(version: &Version) -> VersionLine<'_> {
    VersionLine {
        seq: version.seq,
        time: &version.time,
        origin: version.origin,
        session: version.session.as_deref(),
        turn: version.turn,
        kind: version.kind,
        size: version.size,
        too_large: version.too_large == Some(true),
        unreadable: version.unreadable,
    }
}

/// `GET /v1/blame`, its lines grouped into runs of one version.
fn blame(daemon: &Reached, args: &BlameArgs) -> Result<Value, Failure> {
    let mut query = format!("/v1/blame?path={}", encode(&args.path));
    match (args.seq, &args.at) {
        (Some(_), Some(_)) => return Err(Failure::bad("give seq or at, not both")),
        (Some(seq), None) => query.push_str(&format!("&seq={seq}")),
        (None, Some(at)) => query.push_str(&format!("&at={}", encode(at))),
        (None, None) => {}
    }
    let answer: Blame = daemon.get_as(&query)?;
    let lines = &answer.lines;
    let start = args.start_line.unwrap_or(1).max(1);
    let count = args.lines.unwrap_or(BLAME_LINES).clamp(1, BLAME_LINES_MAX);
    let mut shown: Vec<&Line> = lines.iter().skip(start - 1).take(count).collect();
    let mut runs = runs(&shown);
    // Past the page's byte budget: fewer lines (at least one), `more` says where to go on.
    loop {
        let size = json!(runs).to_string().len();
        if size <= shape::PAGE_BYTES || shown.len() <= 1 {
            break;
        }
        let fit = (shown.len() * shape::PAGE_BYTES / size).clamp(1, shown.len() - 1);
        shown.truncate(fit);
        runs = self::runs(&shown);
    }
    let end = start - 1 + shown.len();
    let more = (end < lines.len()).then(|| {
        format!(
            "{} more lines: call blame with start_line={}",
            lines.len() - end,
            end + 1
        )
    });
    Ok(json!({
        "path": answer.path,
        "seq": answer.seq,
        "binary": answer.binary,
        "too_large": answer.too_large,
        "lines_total": lines.len(),
        "runs": runs,
        "more": more,
    }))
}

/// Consecutive lines of one version as one run: `{"lines":"3-7", "text":[...], who}`.
#[derive(Serialize)]
struct Run<'a> {
    lines: String,
    // Its text second: where the answers have always had it.
    text: Vec<String>,
    seq: i64,
    time: &'a str,
    origin: Origin,
    session: Option<&'a str>,
    turn: Option<i64>,
    prompt: Option<String>,
}

fn runs<'a>(lines: &[&'a Line]) -> Vec<Run<'a>> {
    let mut runs: Vec<(usize, Run)> = Vec::new();
    for line in lines {
        let text: String = line.text.chars().take(LINE_CHARS).collect();
        if let Some((first, run)) = runs.last_mut().filter(|r| r.1.seq == line.seq) {
            run.lines = format!("{first}-{}", line.line);
            run.text.push(text);
            continue;
        }
        let run = Run {
            lines: line.line.to_string(),
            text: vec![text],
            seq: line.seq,
            time: &line.time,
            origin: line.origin,
            session: line.session.as_deref(),
            turn: line.turn,
            prompt: first_line(line.prompt.as_deref()),
        };
        runs.push((line.line, run));
    }
    runs.into_iter().map(|(_, run)| run).collect()
}
