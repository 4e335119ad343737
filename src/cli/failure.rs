//! What a failed command says: one line on stderr, and, when it was run with `--json`, the same
//! error as `{"error":{"code","message"}}` on stdout, so a script reads it as it reads the
//! daemon's own errors. The exit code stays 1 (2 for a usage error).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::ArgMatches;
use serde_json::json;

use crate::client::{ApiFailure, NoDaemon};

/// Input the CLI refuses before asking the daemon (a path outside the workspace, a session name
/// that is not one): `bad_input` under `--json`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// The code of an error the daemon did not answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalCode {
    /// No daemon answers for the workspace.
    NoDaemon,
    /// The command line does not parse (exit 2).
    Usage,
    /// Input refused before it was sent.
    BadInput,
    /// Reading or writing a local file failed.
    Io,
    /// Anything else.
    Failed,
}

/// Whether the command that parsed into `matches` was given `--json`.
pub fn json_requested(matches: &ArgMatches) -> bool {
    let mut matches = matches;
    loop {
        if matches.try_get_one::<bool>("json").ok().flatten() == Some(&true) {
            return true;
        }
        match matches.subcommand() {
            Some((_, sub)) => matches = sub,
            None => return false,
        }
    }
}

/// For a command line that does not parse: whether `--json` is among its options.
fn json_in(args: impl IntoIterator<Item = OsString>) -> bool {
    args.into_iter()
        .skip(1)
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json")
}

/// Prints a failed command's error and returns exit 1.
pub fn report(err: &anyhow::Error, json: bool) -> ExitCode {
    let message = format!("{err:#}");
    if json {
        print_json(&code(err), &message);
    }
    // The message may quote a name, a label, a note another process wrote: never raw.
    eprintln!("filewatchd: {}", super::escape::lines(&message));
    ExitCode::FAILURE
}

/// Prints a command line that does not parse (or `--help`, `--version`) as clap does, and the
/// error as JSON too when `--json` was given; returns clap's exit code (2, or 0 for help).
pub fn report_usage(err: clap::Error) -> ExitCode {
    if err.use_stderr() && json_in(std::env::args_os()) {
        print_json(&json!(LocalCode::Usage), &usage_message(&err));
    }
    // Printing fails only when the streams are gone, and then there is no one to tell.
    let _ = err.print();
    ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2))
}

/// clap's message without its "error: " and the lines of advice after it.
fn usage_message(err: &clap::Error) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

fn print_json(code: &serde_json::Value, message: &str) {
    let body = json!({"error": {"code": code, "message": message}});
    println!("{}", serde_json::to_string_pretty(&body).unwrap_or_default());
}

/// The daemon's code when the daemon refused; else the local code of the first cause that has one.
fn code(err: &anyhow::Error) -> serde_json::Value {
    for cause in err.chain() {
        if let Some(failure) = cause.downcast_ref::<ApiFailure>() {
            return match (failure.code, &failure.unknown_code) {
                (Some(code), _) => json!(code),
                (None, Some(word)) => json!(word),
                (None, None) => json!(LocalCode::Failed),
            };
        }
        let local = if cause.is::<NoDaemon>() {
            LocalCode::NoDaemon
        } else if cause.is::<BadInput>() {
            LocalCode::BadInput
        } else if cause.is::<std::io::Error>() {
            LocalCode::Io
        } else {
            continue;
        };
        return json!(local);
    }
    json!(LocalCode::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_found_among_the_options_not_after_a_double_dash() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(json_in(args(&["filewatchd", "log", "--json", "--bogus"])));
        assert!(!json_in(args(&["filewatchd", "log", "--bogus"])));
        assert!(!json_in(args(&["filewatchd", "exec", "--", "jq", "--json"])));
    }

    #[test]
    fn a_cause_deep_in_the_chain_gives_the_code() {
        let err = anyhow::Error::new(BadInput("no".into())).context("while parsing");
        assert_eq!(code(&err), json!("bad_input"));
        let err = anyhow::Error::msg("something else");
        assert_eq!(code(&err), json!("failed"));
    }
}
