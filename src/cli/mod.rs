//! The command line (docs/cli.md): `serve` runs the daemon; `start`, `stop` and `restart`
//! (`start`), `projects` and `forget` (`projects`) manage it from outside; every other command
//! is a client of the running daemon, one function each (`rollback` holds the rollback-like
//! ones). `completions` and `man` are generated from the clap definitions (`docs`); `style`
//! says how text looks; `failure` prints a failed command's error (as JSON too under `--json`).

mod args;
mod blame;
mod confirm;
mod diff;
mod docs;
mod doctor;
use crate::escape;
mod exec;
pub mod failure;
mod flags;
mod hooks;
mod localtime;
mod offline;
mod pager;
mod pins;
mod print;
mod projects;
mod purge;
mod review;
mod rollback;
mod session;
mod show;
mod start;
mod status;
pub mod style;
mod timeline;
mod turn_pages;
mod ui;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail};

use crate::client::{ApiFailure, Client, Hint};
use crate::daemon::{self, ServeOptions};
use crate::wire::error::ErrorCode;
use crate::wire::request;
use crate::wire::session::Forked;
use crate::wire::turn::{Turn, TurnStarted};
pub use args::*;
use failure::BadInput;
pub use flags::ServeArgs;
pub(crate) use session::resolve_session;
use show::ShowCmd;

/// Runs one command; the exit code follows docs/cli.md. One match: the commands about the
/// daemon itself need none to answer; those that read the record read a stopped daemon's
/// index too (`reading`); the rest talk to the running daemon (`daemon`).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let args = cli.serve.clone();
    let done = |result: anyhow::Result<()>| result.map(|()| ExitCode::SUCCESS);
    let reading = || offline::client_for_reading(&args);
    let daemon = || Client::discover(args.root.as_deref(), args.state_dir.as_deref());
    match cli.command.unwrap_or(Command::Serve(ServeCmd::default())) {
        Command::Serve(cmd) => serve(args.clone(), cmd),
        Command::Hook(cmd) => hooks::hook(&args, cmd),
        Command::Mcp => crate::mcp::run(crate::mcp::Options {
            root: args.root.clone(),
            state_dir: args.state_dir.clone(),
        }),
        Command::Completions(cmd) => docs::completions(cmd),
        Command::Man(cmd) => docs::man(cmd),
        Command::Exec(cmd) => exec::exec(&args, cmd),
        Command::Doctor(flag) => doctor::doctor(&args, flag),
        Command::Start(cmd) => start::start(&args, cmd),
        Command::Stop => start::stop(&args),
        Command::Restart(cmd) => start::restart(&args, cmd),
        Command::Projects(flag) => projects::projects(flag.json),
        Command::Forget(cmd) => projects::forget(cmd, args.root.as_deref()),
        Command::Status(flag) => match start::status_while_indexing(&args, flag.json)? {
            Some(code) => Ok(code),
            None => done(status::run(&daemon()?, flag.json)),
        },
        Command::Turn(cmd) => done(turn(&daemon()?, cmd)),
        Command::Log(cmd) => done(timeline::log(&reading()?, &args, cmd)),
        Command::Show(cmd) => done(show(&reading()?, &args, cmd)),
        Command::Diff(cmd) => done(diff::diff(&reading()?, &args, cmd)),
        Command::History(cmd) => done(history(&reading()?, &args, cmd)),
        Command::Blame(cmd) => done(blame::blame(&reading()?, &args, cmd)),
        Command::Sessions(flag) => {
            let answer = reading()?.get_as("/v1/sessions")?;
            done(print::answer(&answer, flag.json, session::print_list))
        }
        Command::Fork(cmd) => done(fork(&daemon()?, cmd)),
        Command::Gc(cmd) => {
            let answer = daemon()?.post_as("/v1/gc", &request::Gc { dry_run: cmd.dry_run })?;
            done(print::answer(&answer, cmd.json.json, print::gc))
        }
        Command::Purge(cmd) => done(purge::purge(&daemon()?, &args, cmd)),
        Command::Verify(flag) => {
            let answer = daemon()?.post_as("/v1/verify", &request::Verify {})?;
            done(print::answer(&answer, flag.json, print::verified))
        }
        Command::Rollback(cmd) => rollback::rollback(&daemon()?, &args, cmd),
        Command::Undo(flags) => rollback::undo(&daemon()?, &args, flags),
        Command::Redo(flags) => rollback::redo(&daemon()?, &args, flags),
        Command::Restore(cmd) => rollback::restore(&daemon()?, &args, cmd),
        Command::Revert(cmd) => review::revert(&daemon()?, &args, cmd),
        Command::Review(cmd) => done(review::review(&daemon()?, &args, cmd)),
        Command::Pin(cmd) => done(pins::pin(&daemon()?, cmd)),
        Command::Unpin(cmd) => done(pins::unpin(&daemon()?, cmd)),
        Command::Pins(flag) => done(pins::pins(&daemon()?, flag)),
        Command::Ui(cmd) => ui::ui(&daemon()?, cmd),
    }
}

fn serve(args: ServeArgs, cmd: ServeCmd) -> anyhow::Result<ExitCode> {
    crate::store::sqlite_errors::log_to_tracing();
    let (root, _) = daemon::locate(args.root.as_deref(), args.state_dir.as_deref())?;
    confirm::risky_root(&root, cmd.start.yes)?;
    daemon::serve(ServeOptions {
        root: args.root,
        state_dir: args.state_dir,
        config: cmd.start.config.or(args.config),
        port: cmd.start.port.or(args.port),
        test_knobs: cmd.test_knobs,
    })?;
    Ok(ExitCode::SUCCESS)
}

fn turn(client: &Client, cmd: TurnCmd) -> anyhow::Result<()> {
    match cmd {
        TurnCmd::Start {
            session,
            label,
            turn_ref,
            json,
        } => {
            let session = session::resolve_for_turn_start(client, session.session)?;
            let body = request::TurnStart {
                label,
                turn_ref,
                agent: None,
            };
            let answer: TurnStarted = client.post_as(&format!("/v1/sessions/{session}/turns"), &body)?;
            print::answer(&answer, json.json, print::turn_started)
        }
        TurnCmd::End { session, turn, json } => {
            let session = resolve_session(client, session.session)?;
            let answer: Turn = client
                .post_as(
                    &format!("/v1/sessions/{session}/turns/{}/end", encode(&turn)),
                    &request::TurnEnd::default(),
                )
                .hint(ErrorCode::TurnNotOpen, "`filewatchd turn start` opens one")?;
            print::answer(&answer, json.json, show::turn_ended)
        }
    }
}

fn fork(client: &Client, cmd: ForkCmd) -> anyhow::Result<()> {
    let parent = resolve_session(client, cmd.session.session)?;
    let body = request::Fork {
        new_session: Some(cmd.new_session),
        turn: Some(request::turn(&cmd.turn)),
    };
    let answer: Forked = client.post_as(&format!("/v1/sessions/{parent}/fork"), &body)?;
    print::answer(&answer, cmd.json.json, |a| {
        println!(
            "forked {} after turn {} of {}",
            escape::text(&a.session),
            a.fork_turn,
            escape::text(&a.parent)
        );
    })
}

/// Where to look when a session or a turn was not found.
pub(crate) const LIST_TURNS: &str =
    "`filewatchd sessions` lists the sessions, `filewatchd log --session NAME` their turns";

/// Where to look when a pin was not found.
pub(crate) const LIST_PINS: &str = "`filewatchd pins` lists them";

fn show(client: &Client, args: &ServeArgs, cmd: ShowCmd) -> anyhow::Result<()> {
    if let Some(when) = &cmd.at {
        let Some(path) = &cmd.turn else {
            bail!(BadInput(
                "give the path to show: filewatchd show PATH --at WHEN".into()
            ));
        };
        return show_content(client, args, path, when, cmd.session.session);
    }
    let turn = cmd.turn.clone().unwrap_or_else(|| "current".to_string());
    if names_a_path(&turn) {
        let shown = escape::quoted(&turn);
        bail!(BadInput(format!(
            "{shown} is a path, not a turn: `filewatchd history {shown}` lists its versions, `filewatchd show {shown} --at before:N` prints one, and `filewatchd show N {shown}` shows what turn N did to it"
        )));
    }
    let session = resolve_session(client, cmd.session.session.clone())?;
    let path = match &cmd.path {
        Some(path) => Some(workspace_relative(client, args, path)?),
        None => None,
    };
    show::turn(client, &session, &turn, path.as_deref(), &cmd)
}

/// A turn's number or ref is neither a path with a `/` nor the name of a file here (a git
/// user's `show README.md`).
fn names_a_path(turn: &str) -> bool {
    let number = turn.bytes().all(|b| b.is_ascii_digit());
    !number
        && turn != "current"
        && (turn.contains('/') || std::path::Path::new(turn).symlink_metadata().is_ok())
}

/// Prints what a path held at `when`: `before:N`, `after:N`, `seq:S`, a time, or a duration ago.
fn show_content(
    client: &Client,
    args: &ServeArgs,
    path: &str,
    when: &str,
    session: Option<String>,
) -> anyhow::Result<()> {
    let path = workspace_relative(client, args, path)?;
    let mut query = format!("/v1/content?path={}", encode(&path));
    match when.split_once(':') {
        Some((side @ ("before" | "after"), turn)) => {
            let session = resolve_session(client, session)?;
            query.push_str(&format!("&session={}&{side}={}", encode(&session), encode(turn)));
        }
        Some(("seq", seq)) => query.push_str(&format!("&seq={}", encode(seq))),
        _ if crate::model::parse_time(when).is_ok() => query.push_str(&format!("&at={}", encode(when))),
        _ => query.push_str(&format!("&at={}", encode(&rollback::time_ago(when)?))),
    }
    let bytes = client.get_bytes(&query)?;
    use std::io::{IsTerminal, Write};
    // Piped or redirected, the file's bytes as they are (`> copy` restores it exactly); on a
    // terminal, a human reads them, and what would steer the terminal is escaped.
    let mut stdout = std::io::stdout();
    if stdout.is_terminal() {
        stdout.write_all(escape::lines(&String::from_utf8_lossy(&bytes)).as_bytes())?;
    } else {
        stdout.write_all(&bytes)?;
    }
    Ok(())
}

fn history(client: &Client, args: &ServeArgs, cmd: HistoryCmd) -> anyhow::Result<()> {
    let path = workspace_relative(client, args, &cmd.path)?;
    let answer: crate::wire::history::History = client
        .get_as(&format!("/v1/history?path={}", encode(&path)))
        .hint(
            ErrorCode::NotFound,
            "a path is relative to the directory you are in, and ignored paths are never recorded",
        )?;
    print::answer(&answer, cmd.json.json, print::history)
}

/// A path as typed, relative to the workspace root as the API wants it. Typed inside a
/// subdirectory it is relative to that directory (relative to the root with `--root`); an
/// absolute path must lead into the workspace. `.`, `..` and repeated or trailing slashes are
/// resolved by the text alone, as a shell user means them.
pub(crate) fn workspace_relative(client: &Client, args: &ServeArgs, typed: &str) -> anyhow::Result<String> {
    let absolute = typed.starts_with('/');
    let status: crate::wire::status::Status = client.get_as("/v1/status")?;
    let root = status
        .root
        .to_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("the daemon's workspace root is not UTF-8"))?;
    let cwd = std::env::current_dir()
        .and_then(|d| crate::platform::ext::canonical(&d))
        .ok();
    let base = match cwd.as_deref().and_then(Path::to_str) {
        _ if absolute => "",
        Some(cwd) if args.root.is_none() && Path::new(cwd).starts_with(&root) => cwd,
        _ => root.as_str(),
    };
    let joined = format!("{base}/{typed}");
    let full = resolve_dots(&joined);
    let inside = full
        .as_deref()
        .and_then(|full| full.strip_prefix(resolve_dots(&root)?.as_slice()));
    match inside {
        Some([]) => bail!(BadInput(format!(
            "{typed:?} is the workspace root itself: name a file or directory inside it (a rollback without paths covers the whole workspace)"
        ))),
        Some(parts) => Ok(parts.join("/")),
        None => bail!(BadInput(format!(
            "{typed:?} is outside the workspace {root}: give a path inside it"
        ))),
    }
}

/// The components of an absolute path with `.`, `..` and empty ones resolved; `None` when
/// `..` climbs above `/`.
fn resolve_dots(path: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    Some(parts)
}

pub(crate) fn session_names(client: &Client) -> anyhow::Result<Vec<String>> {
    Ok(session::listed(client)?.into_iter().map(|s| s.session).collect())
}

/// Percent-encodes what may not appear raw in a URL path segment or query value.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
