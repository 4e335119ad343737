//! The rollback tools. `preview_undo` and `preview_rollback` are dry runs: the plan, its
//! conflicts with their reasons, and the next step (the tool to call, or the exact CLI
//! command the agent asks the user to run). `undo`, `rollback` and `restore_file` change
//! files: they are listed only with `[mcp] allow_rollback = true`, always run with
//! `on_conflict: abort` and record `actor: "mcp"` with the rollback (`filewatchd log` shows
//! `(by mcp)`).

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Server;
use super::args::{Parameters, TurnArg};
use super::reach::Reached;
use super::session::Resolved;
use super::shape::{self, ActionItem, Failure, Summary, page};
use crate::escape::shell_word;
use crate::model::answer::{Actor, Outcome};
use crate::restore::Boundary;
use crate::sessions::turns::TurnSelector;
use crate::wire::error::ErrorCode;
use crate::wire::request::{Rollback, Turn};
use crate::wire::rollback::RollbackAnswer;

/// A turn boundary: the workspace when turn `turn` started (`before`) or ended (`after`).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Before,
    After,
}

impl Side {
    fn boundary(self) -> Boundary {
        match self {
            Self::Before => Boundary::Before,
            Self::After => Boundary::After,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Self::Before => "before",
            Self::After => "after",
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoArgs {
    /// The session (default: this session).
    pub session: Option<String>,
    /// Include unified diffs of what each text file would become.
    #[serde(default)]
    pub diff: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackArgs {
    /// The session (default: this session).
    pub session: Option<String>,
    /// `before` (the state when the turn started) or `after` (when it ended).
    pub to: Side,
    /// The turn: a number or the agent's ref.
    pub turn: TurnArg,
    /// Only these paths (and what lies beneath them).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Include unified diffs of what each text file would become.
    #[serde(default)]
    pub diff: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArgs {
    /// The session whose turn `turn` names (default: this session).
    pub session: Option<String>,
    /// The file or directory, relative to the workspace root.
    pub path: String,
    /// `before` or `after` the turn `turn`.
    pub to: Side,
    /// The turn: a number or the agent's ref.
    pub turn: TurnArg,
}

#[tool_router(router = preview_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Dry run of undoing this session's latest turn not yet undone: which paths it would change, conflicts (changes by the user or other sessions) with reasons, and how to run it. Changes nothing; refused (turn_open) while the session's own turn is open."
    )]
    async fn preview_undo(
        &self,
        Parameters(args): Parameters<UndoArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        let allow = self.allow_rollback;
        self.in_session(args.session, &ctx, move |daemon, s| {
            preview(daemon, s, &undo(s, args.diff, true), allow, "undo")
        })
        .await
    }

    #[tool(
        description = "Dry run of rolling the workspace (or some paths) back to before/after a turn of this session: the plan, conflicts with reasons, and how to run it. Changes nothing; refused (turn_open) while the session's own turn is open."
    )]
    async fn preview_rollback(
        &self,
        Parameters(args): Parameters<RollbackArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        let allow = self.allow_rollback;
        self.in_session(args.session.clone(), &ctx, move |daemon, s| {
            preview(daemon, s, &rollback(s, &args, true), allow, "rollback")
        })
        .await
    }
}

#[tool_router(router = write_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Undo this session's latest turn not yet undone (refused, changing nothing, if any path conflicts). The session must have no turn open."
    )]
    async fn undo(
        &self,
        Parameters(args): Parameters<UndoArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        self.in_session(args.session, &ctx, move |daemon, s| {
            apply(daemon, &undo(s, args.diff, false))
        })
        .await
    }

    #[tool(
        description = "Roll the workspace (or some paths) back to before/after a turn of this session (refused, changing nothing, if any path conflicts). The session must have no turn open."
    )]
    async fn rollback(
        &self,
        Parameters(args): Parameters<RollbackArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        self.in_session(args.session.clone(), &ctx, move |daemon, s| {
            apply(daemon, &rollback(s, &args, false))
        })
        .await
    }

    #[tool(
        description = "Restore one file (or directory) to its state before/after a turn of this session (refused, changing nothing, if it conflicts). The session must have no turn open."
    )]
    async fn restore_file(
        &self,
        Parameters(args): Parameters<RestoreArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let args = args?;
        // One path back to a turn boundary: a rollback of the session restricted to it, as
        // `filewatchd restore PATH --before N` does (the same conflict checks).
        let args = RollbackArgs {
            session: args.session,
            to: args.to,
            turn: args.turn,
            paths: vec![args.path],
            diff: false,
        };
        self.in_session(args.session.clone(), &ctx, move |daemon, s| {
            apply(daemon, &rollback(s, &args, false))
        })
        .await
    }
}

/// A rollback a tool asks the daemon for: the endpoint, the body, and the CLI command of the
/// same. Applied, it never forces: conflicts refuse it (`on_conflict` abort).
struct Ask {
    path: String,
    body: Rollback,
    command: String,
}

fn undo(session: &Resolved, diff: bool, dry_run: bool) -> Ask {
    Ask {
        path: session.url("undo"),
        body: Rollback {
            dry_run,
            diff,
            actor: (!dry_run).then_some(Actor::Mcp),
            ..Rollback::default()
        },
        command: format!("filewatchd undo --session {}", session.name),
    }
}

fn rollback(session: &Resolved, args: &RollbackArgs, dry_run: bool) -> Ask {
    let (selector, turn) = match &args.turn {
        TurnArg::Number(n) => (TurnSelector::Number(*n), n.to_string()),
        TurnArg::Ref(r) => (TurnSelector::Ref(r.clone()), r.clone()),
    };
    let mut command = format!(
        "filewatchd rollback --session {} --{} {turn}",
        session.name,
        args.to.word()
    );
    for path in &args.paths {
        command.push(' ');
        command.push_str(&shell_word(path, "-._/:=@%+,"));
    }
    let body = Rollback {
        to: Some(args.to.boundary()),
        turn: Some(Turn::Selector(selector)),
        dry_run,
        paths: args.paths.clone(),
        diff: args.diff,
        actor: (!dry_run).then_some(Actor::Mcp),
        ..Rollback::default()
    };
    Ask {
        path: session.url("rollback"),
        body,
        command,
    }
}

/// What the agent does after a preview: call `tool` when it may, else ask the user.
fn next_step(conflicts: usize, allow: bool, tool: &str, command: &str) -> String {
    match (conflicts, allow) {
        (0, true) => format!("call the {tool} tool to apply this plan (or ask the user to run `{command}`)"),
        (0, false) => format!("the MCP server may not change files here: ask the user to run `{command}`"),
        (_, _) => format!(
            "conflicting paths would make it refuse: tell the user about them; they decide with `{command} --dry-run`, then `{command} --skip-conflicts` (leave them as they are) or `{command} --force`"
        ),
    }
}

fn preview(
    daemon: &Reached,
    session: &Resolved,
    ask: &Ask,
    allow: bool,
    tool: &str,
) -> Result<Value, Failure> {
    let plan: RollbackAnswer = match daemon.post_as(&ask.path, &ask.body) {
        Ok(plan) => plan,
        Err(failure) if failure.api_code() == Some(ErrorCode::TurnOpen) => {
            return Err(turn_open(failure, session, &ask.command));
        }
        Err(failure) => return Err(failure),
    };
    let next_step = Some(next_step(plan.outcome.conflicts.len(), allow, tool, &ask.command));
    Ok(json!(Summary {
        next_step,
        ..summary(plan.outcome, &ask.command)
    }))
}

/// The session's turn is open (the agent's own, mid-turn): a plan is only made once it ends.
fn turn_open(failure: Failure, session: &Resolved, command: &str) -> Failure {
    let Failure::Api(mut api) = failure else {
        return failure;
    };
    // The API says "end it first": not the agent's to do while the user's prompt runs.
    let open = api.message.trim_end_matches(": end it first").to_string();
    api.message = format!(
        "{open}: an undo or rollback of session {} is planned only once its turn has ended. Do not end the turn yourself: wait for it to end, or tell the user, who can run `{command}` after this turn (with `--dry-run` first to see the plan)",
        session.name
    );
    Failure::Api(api)
}

/// A rollback answer made small: counts, conflicts first, then the first actions; `more`
/// says how to see the rest (`command` is the CLI command of the same plan).
fn summary(plan: Outcome, command: &str) -> Summary {
    let conflicts = page(plan.conflicts, None, None, "");
    let items = plan.actions.into_iter().map(ActionItem::of).collect();
    let mut actions = page(items, None, None, "");
    shape::fit_diffs(actions.items.iter_mut().map(|item| &mut item.diff));
    actions.fit();
    let shown = actions.items.len() + conflicts.items.len();
    let left = actions.total + conflicts.total - shown;
    let more = (left > 0).then(|| {
        format!("{left} more paths or conflicts: narrow the plan with paths, or see it whole with `{command} --dry-run`")
    });
    Summary {
        operation: plan.operation,
        target: plan.target,
        dry_run: plan.dry_run,
        applied: plan.applied,
        rollback_id: plan.rollback_id,
        paths: actions.total,
        conflicts_total: conflicts.total,
        conflicts: conflicts.items,
        not_restorable: plan.not_restorable,
        actions: actions.items,
        more,
        next_step: None,
        refused: None,
    }
}

/// Applies (never forcing): a refusal comes back as the tool's error, with the conflicts.
fn apply(daemon: &Reached, ask: &Ask) -> Result<Value, Failure> {
    match daemon.post_as::<RollbackAnswer>(&ask.path, &ask.body) {
        Ok(done) => Ok(json!(summary(done.outcome, &ask.command))),
        Err(Failure::Api(api)) if api.status == 409 && api.code == Some(ErrorCode::Conflicts) => {
            let refused: RollbackAnswer = serde_json::from_value(api.body)
                .map_err(|e| Failure::Internal(format!("the daemon's refusal is not a plan: {e}")))?;
            Err(Failure::Refused(Box::new(Summary {
                refused: Some(
                    "conflicts: nothing was changed; tell the user, who decides with the CLI (`--skip-conflicts` or `--force`)",
                ),
                ..summary(refused.outcome, &ask.command)
            })))
        }
        Err(failure) => Err(failure),
    }
}
