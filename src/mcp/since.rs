//! `diff_since`: what changed in the workspace (or under one path) since a boundary: before
//! or after a turn of this session, a pin, a time, or a sequence number. Asked as the dry run
//! of a rollback of the whole workspace to that point (`POST /v1/rollback`, which no open turn
//! holds up), whose plan is read backwards: what the rollback would delete was added since,
//! what it would create was deleted, and its diffs are inverted.

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Server;
use super::args::{Parameters, TurnArg};
use super::reach::Reached;
use super::session::Resolved;
use super::shape::{self, Failure, FileDiff, Omitted, finish, page};
use crate::model::Kind;
use crate::model::answer::{Action, ActionLine};
use crate::wire::request::Rollback;
use crate::wire::rollback::RollbackAnswer;
use crate::wire::turn::Turn;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffSinceArgs {
    /// Only this file or directory (default: the whole workspace).
    pub path: Option<String>,
    /// Since the start of this turn of the session (a number or a ref).
    pub before: Option<TurnArg>,
    /// Since the end of this turn of the session.
    pub after: Option<TurnArg>,
    /// The session `before`/`after` name a turn of (default: this session).
    pub session: Option<String>,
    /// Since the point this pin names.
    pub pin: Option<String>,
    /// Since this RFC 3339 time.
    pub at: Option<String>,
    /// Since this sequence number (as file_history lists them).
    pub seq: Option<i64>,
    /// Include unified diffs (default: true when `path` is given).
    pub diff: Option<bool>,
    /// Skip this many changed paths.
    pub offset: Option<usize>,
    /// At most this many paths (default 50, at most 500).
    pub limit: Option<usize>,
}

/// The boundary as the answer's `since` says it: as given, with the sequence number it
/// splits the history at.
#[derive(Debug, Default, Serialize)]
struct Boundary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<i64>,
    /// `before` or `after` the turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    side: Option<&'static str>,
}

#[tool_router(router = since_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "What changed since a boundary (before/after a turn of this session, a pin, a time or a seq), in the whole workspace or one path: added/modified/deleted paths with line counts, diffs for one path."
    )]
    async fn diff_since(
        &self,
        Parameters(args): Parameters<DiffSinceArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        let given = [
            args.before.is_some(),
            args.after.is_some(),
            args.pin.is_some(),
            args.at.is_some(),
            args.seq.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return finish(Err(Failure::bad(
                "give exactly one of before, after (a turn), pin, at (a time) or seq",
            )));
        }
        let turn = args.before.clone().map(|turn| (true, turn));
        if let Some((before, turn)) = turn.or_else(|| args.after.clone().map(|turn| (false, turn))) {
            return self
                .in_session(args.session.clone(), &ctx, move |daemon, s| {
                    let body = turn_boundary(daemon, s, before, &turn)?;
                    diff_since(daemon, body, &args)
                })
                .await;
        }
        let body = Boundary {
            pin: args.pin.clone(),
            at: args.at.clone(),
            seq: args.seq,
            ..Boundary::default()
        };
        finish(
            self.daemon
                .ask(move |daemon| diff_since(daemon, body, &args))
                .await,
        )
    }
}

/// A turn's boundary as the sequence number that splits the history there.
fn turn_boundary(
    daemon: &Reached,
    session: &Resolved,
    before: bool,
    turn: &TurnArg,
) -> Result<Boundary, Failure> {
    let answer: Turn = daemon.get_as(&session.url(&format!("turns/{}", turn.segment())))?;
    let turn = answer.summary;
    let seq = if before {
        Some(turn.start_seq)
    } else {
        turn.end_seq
    };
    let Some(seq) = seq else {
        return Err(Failure::bad(format!(
            "turn {} is still open: it has no end yet (turn_changes shows what it changed so far)",
            turn.turn
        )));
    };
    Ok(Boundary {
        seq: Some(seq),
        turn: Some(turn.turn),
        side: Some(if before { "before" } else { "after" }),
        ..Boundary::default()
    })
}

fn diff_since(daemon: &Reached, mut since: Boundary, args: &DiffSinceArgs) -> Result<Value, Failure> {
    let with_diff = args.diff.unwrap_or(args.path.is_some());
    let body = Rollback {
        dry_run: true,
        diff: with_diff,
        seq: since.seq,
        pin: since.pin.clone(),
        at: since.at.clone(),
        paths: args.path.iter().cloned().collect(),
        ..Rollback::default()
    };
    let plan: RollbackAnswer = daemon
        .post_as("/v1/rollback", &body)
        .map_err(|failure| match failure {
            Failure::TooLarge(message) => Failure::TooLarge(format!(
                "{message}: call diff_since again without diff, or with one path"
            )),
            failure => failure,
        })?;
    let plan = plan.outcome;
    let changes: Vec<ChangeSince> = plan.actions.iter().map(change_since).collect();
    let counts = counts(&changes);
    let mut page = page(changes, args.offset, args.limit, "diff_since (same boundary)");
    let left_out = with_diff && mark_left_out(&mut page.items);
    let cut = shape::fit_diffs(page.items.iter_mut().map(|c| &mut c.diff)) || left_out;
    page.fit();
    since.seq = Some(plan.target.seq);
    let n = plan.conflicts.len();
    Ok(json!(SinceAnswer {
        since,
        paths: page.total,
        counts,
        changes: page.items,
        more: page.more,
        not_yet_recorded: (n > 0)
            .then(|| format!("{n} paths differ on disk from their latest recorded version (just written?)")),
        diffs_cut: cut.then_some("some diffs were cut or left out: ask diff_since with that path alone"),
    }))
}

/// `diff_since`'s answer.
#[derive(Serialize)]
struct SinceAnswer {
    since: Boundary,
    paths: usize,
    counts: Counts,
    changes: Vec<ChangeSince>,
    more: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_yet_recorded: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diffs_cut: Option<&'static str>,
}

/// How many paths were added, modified and deleted since.
#[derive(Debug, Default, Serialize)]
struct Counts {
    added: usize,
    modified: usize,
    deleted: usize,
}

/// A path changed since the boundary.
#[derive(Debug, Serialize)]
struct ChangeSince {
    path: String,
    change: &'static str,
    kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    lines_added: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lines_removed: Option<usize>,
    #[serde(flatten)]
    diff: FileDiff,
}

/// Files the plan gives no diff for (not text, or past the 1 MiB a plan diffs) say so with
/// `diff_omitted`; returns whether any did.
fn mark_left_out(items: &mut [ChangeSince]) -> bool {
    let mut any = false;
    for item in items.iter_mut() {
        if item.kind == Kind::File && item.diff.diff.is_none() && item.lines_added.is_none() {
            item.diff.diff_omitted = Some(Omitted::Because(
                "no diff: the file is not text, or larger than the 1 MiB a plan diffs",
            ));
            any = true;
        }
    }
    any
}

fn counts(changes: &[ChangeSince]) -> Counts {
    let count = |change| changes.iter().filter(|c| c.change == change).count();
    Counts {
        added: count("added"),
        modified: count("modified"),
        deleted: count("deleted"),
    }
}

/// A rollback action to the boundary, read as the change made since it.
fn change_since(action: &ActionLine) -> ChangeSince {
    let counted = action.lines_removed.zip(action.lines_added);
    ChangeSince {
        path: action.path.clone(),
        change: match action.action {
            Action::Create => "deleted",
            Action::Delete | Action::RemoveDir => "added",
            Action::Restore | Action::SetMode | Action::Relink => "modified",
        },
        kind: action.kind,
        lines_added: counted.map(|(added, _)| added),
        lines_removed: counted.map(|(_, removed)| removed),
        diff: FileDiff::of(action.diff.as_deref().map(invert)),
    }
}

/// A unified diff from `a` to `b` turned into the diff from `b` to `a`: `-` and `+` swapped
/// (removals still first in each run of changed lines), hunk ranges swapped.
pub fn invert(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len());
    let mut removed: Vec<String> = Vec::new();
    let mut added: Vec<String> = Vec::new();
    let flush = |out: &mut String, removed: &mut Vec<String>, added: &mut Vec<String>| {
        for line in removed.drain(..).chain(added.drain(..)) {
            out.push_str(&line);
        }
    };
    let mut in_hunk = false;
    for line in diff.split_inclusive('\n') {
        if !in_hunk && (line.starts_with("--- ") || line.starts_with("+++ ")) {
            out.push_str(line);
        } else if let Some(header) = line.strip_prefix("@@ ") {
            flush(&mut out, &mut removed, &mut added);
            in_hunk = true;
            out.push_str(&swap_ranges(header));
        } else if let Some(rest) = line.strip_prefix('+') {
            removed.push(format!("-{rest}"));
        } else if let Some(rest) = line.strip_prefix('-') {
            added.push(format!("+{rest}"));
        } else if line.starts_with('\\') {
            // "\ No newline at end of file" belongs to the line before it.
            match (added.last_mut(), removed.last_mut()) {
                (Some(last), _) | (None, Some(last)) => last.push_str(line),
                (None, None) => out.push_str(line),
            }
        } else {
            flush(&mut out, &mut removed, &mut added);
            out.push_str(line);
        }
    }
    flush(&mut out, &mut removed, &mut added);
    out
}

/// `-1,3 +1,4 @@ ...` → `@@ -1,4 +1,3 @@ ...`.
fn swap_ranges(header: &str) -> String {
    let mut parts = header.splitn(3, ' ');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(old), Some(new), Some(rest)) if old.starts_with('-') && new.starts_with('+') => {
            format!("@@ -{} +{} {rest}", &new[1..], &old[1..])
        }
        _ => format!("@@ {header}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inverted_diff_goes_the_other_way() {
        let forward = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -9,2 +9,3 @@\n i\n+j\n k\n";
        let back = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-B\n+b\n c\n@@ -9,3 +9,2 @@\n i\n-j\n k\n";
        assert_eq!(invert(forward), back);
    }

    #[test]
    fn no_newline_markers_stay_with_their_line() {
        let forward = "@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n";
        let back = "@@ -1 +1 @@\n-new\n+old\n\\ No newline at end of file\n";
        assert_eq!(invert(forward), back);
    }
}
