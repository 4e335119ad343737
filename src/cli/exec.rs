//! `filewatchd exec -- CMD ARGS...`: any command as one turn, for agents, scripts and tools
//! without hooks. The turn starts (labelled with the command line), the command runs with this
//! process's stdin, stdout, stderr and directory, the turn ends, and its exit code is passed
//! through (a death by signal N as 128 + N, as shells do). Nothing is printed on stdout: the
//! turn's summary is one line on stderr. A command that cannot start (not found, not
//! executable: exit 127 or 126) opens no turn; one that ran and changed nothing keeps its
//! turn, which says the command ran (and why the session's redo chain ended).
//!
//! Signals: Ctrl-C and Ctrl-\ reach the whole foreground process group, the command included;
//! exec ignores them while it waits, as shells do, so the turn still ends. SIGTERM and SIGHUP
//! sent to exec alone (an agent's timeout, a closed terminal) are passed on to the command.

use std::ffi::OsString;
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::Context;
use clap::Args;

use super::flags::ServeArgs;
use super::session::session_name;
use super::style::counted;
use super::{Client, escape};
use crate::wire::request::{self, TurnStart};
use crate::wire::turn::{Turn, TurnStarted};

/// The session of `exec` turns when neither `--session` nor `$FILEWATCHD_SESSION` names one.
pub const DEFAULT_SESSION: &str = "exec";
/// Longer command lines are cut in the label (the turn keeps the first part).
const LABEL_MAX: usize = 2000;

#[derive(Debug, Args)]
#[command(override_usage = "filewatchd exec [OPTIONS] -- CMD [ARGS]...")]
pub struct ExecCmd {
    /// The session the turn belongs to (default: $FILEWATCHD_SESSION, else `exec`).
    #[arg(long, env = "FILEWATCHD_SESSION")]
    pub session: Option<String>,
    /// The turn's label (default: the command line).
    #[arg(long)]
    pub label: Option<String>,
    /// When no daemon answers, run the command anyway, unrecorded (one warning on stderr),
    /// instead of refusing with exit 1.
    #[arg(long)]
    pub unrecorded_ok: bool,
    /// The command to run and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD",
        value_parser = clap::value_parser!(OsString)
    )]
    pub command: Vec<OsString>,
}

/// How the command ended.
enum Ran {
    Exited(i32),
    Signalled(i32),
    /// It could not be started: 127 when it was not found, 126 otherwise (as shells say).
    NotStarted(std::io::Error),
}

impl Ran {
    fn exit_code(&self) -> u8 {
        let code = match self {
            Ran::Exited(code) => *code,
            Ran::Signalled(signal) => 128 + signal,
            Ran::NotStarted(e) if e.kind() == std::io::ErrorKind::NotFound => 127,
            Ran::NotStarted(_) => 126,
        };
        u8::try_from(code & 0xff).unwrap_or(1)
    }
}

pub fn exec(args: &ServeArgs, cmd: ExecCmd) -> anyhow::Result<ExitCode> {
    // An empty FILEWATCHD_SESSION counts as unset.
    let session = cmd.session.filter(|s| !s.is_empty());
    let session = session_name(session.unwrap_or_else(|| DEFAULT_SESSION.to_string()))?;
    let label = cmd.label.unwrap_or_else(|| command_line(&cmd.command));
    // A command that cannot start opens no turn: an empty turn would only say it was tried,
    // and its start would end the session's redo chain.
    if let Err(err) = program(&cmd.command[0]) {
        let ran = Ran::NotStarted(err);
        say_not_started(&cmd.command[0], &ran);
        return Ok(ExitCode::from(ran.exit_code()));
    }
    let (client, answer) = match start_turn(args, &session, &label) {
        Ok(started) => started,
        Err(err) if cmd.unrecorded_ok => {
            let err = format!("{err:#}");
            let err = escape::text(&err);
            eprintln!("filewatchd exec: {err}; running the command unrecorded (--unrecorded-ok)");
            return Ok(ExitCode::from(run(&cmd.command).exit_code()));
        }
        Err(err) => {
            return Err(err.context(
                "the command was not run, since its turn could not start (--unrecorded-ok runs it anyway)",
            ));
        }
    };
    let ran = run(&cmd.command);
    say_not_started(&cmd.command[0], &ran);
    let turn = answer.turn;
    match client.post_as(
        &format!("/v1/sessions/{session}/turns/{turn}/end"),
        &request::TurnEnd::default(),
    ) {
        Ok(ended) => eprintln!("{}", summary(&ended, &session)),
        Err(err) => {
            let err = format!("{err:#}");
            let err = escape::text(&err);
            eprintln!("filewatchd exec: could not end turn {turn} of {session}: {err}");
        }
    }
    Ok(ExitCode::from(ran.exit_code()))
}

/// Says why the command did not start, as a shell would.
fn say_not_started(word: &OsString, ran: &Ran) {
    let Ran::NotStarted(err) = ran else {
        return;
    };
    let name = word.to_string_lossy();
    let name = escape::quoted(&name);
    match err.kind() {
        std::io::ErrorKind::NotFound => eprintln!("filewatchd exec: {name}: command not found"),
        _ => eprintln!("filewatchd exec: {name}: {err}"),
    }
}

/// The file the command `word` runs, found as `execvp` finds it: a name with a `/` as it is,
/// else the first executable regular file of that name in `$PATH`. An error when there is none
/// (`NotFound`) or it may not be run (`PermissionDenied`).
fn program(word: &OsString) -> std::io::Result<PathBuf> {
    use std::io::{Error, ErrorKind};
    let word = Path::new(word);
    if word.as_os_str().as_encoded_bytes().contains(&b'/') {
        return runnable(word).map(|()| word.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut denied = None;
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(word);
        match runnable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(err) if err.kind() == ErrorKind::PermissionDenied => denied = Some(err),
            Err(_) => {}
        }
    }
    Err(denied.unwrap_or_else(|| Error::from(ErrorKind::NotFound)))
}

/// `path` is a regular file this process may execute.
fn runnable(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
    }
    #[cfg(unix)]
    return crate::platform::sys::fs::access(path, crate::platform::sys::fs::Access::EXEC_OK)
        .map_err(std::io::Error::from);
    // Windows: a file runs by its extension; `spawn` says so if it cannot.
    #[cfg(windows)]
    return Ok(());
}

/// Finds the daemon and starts the turn; says so when that ended the session's open turn.
fn start_turn(args: &ServeArgs, session: &str, label: &str) -> anyhow::Result<(Client, TurnStarted)> {
    let client = Client::discover(args.root.as_deref(), args.state_dir.as_deref())?;
    let answer: TurnStarted = client.post_as(
        &format!("/v1/sessions/{session}/turns"),
        &TurnStart {
            label: Some(label.to_string()),
            ..TurnStart::default()
        },
    )?;
    if let Some(ended) = &answer.ended {
        eprintln!(
            "filewatchd: ended turn {} of {session} first (it was still open)",
            ended.summary.turn
        );
    }
    Ok((client, answer))
}

/// The command line as a shell would read it back: each word quoted where it needs it.
fn command_line(words: &[OsString]) -> String {
    let line: Vec<String> = words
        .iter()
        .map(|w| escape::shell_word(&w.to_string_lossy(), "/._-+:@=,%^"))
        .collect();
    let line = line.join(" ");
    match line.char_indices().nth(LABEL_MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// "filewatchd: turn 3 of s: +2 ~5 -1, 8 paths (undo: filewatchd undo --session s)".
fn summary(turn: &Turn, session: &str) -> String {
    let c = &turn.summary.counts;
    let paths = turn.changes.len() as u64;
    let head = format!(
        "filewatchd: turn {} of {}",
        turn.summary.turn,
        escape::text(&turn.summary.session)
    );
    if paths == 0 {
        return format!("{head}: no changes");
    }
    let mut counts = format!("+{} ~{} -{}", c.added, c.modified, c.deleted);
    if c.renamed > 0 {
        counts.push_str(&format!(" R{}", c.renamed));
    }
    if c.ambiguous > 0 {
        counts.push_str(&format!(", {} ambiguous", c.ambiguous));
    }
    format!(
        "{head}: {counts}, {} (undo: filewatchd undo --session {session})",
        counted(paths, "path")
    )
}

/// The pid of the running command, for the forwarding handler (0: none yet).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A forwarded signal that came before the command's pid was known.
#[cfg(unix)]
static PENDING: AtomicI32 = AtomicI32::new(0);

#[cfg(unix)]
extern "C" fn forward(signal: libc::c_int) {
    match CHILD.load(Ordering::SeqCst) {
        0 => PENDING.store(signal, Ordering::SeqCst),
        // SAFETY: kill is async-signal-safe.
        pid => unsafe {
            libc::kill(pid, signal);
        },
    }
}

/// Forwards SIGTERM and SIGHUP to the command and ignores SIGINT and SIGQUIT while it runs;
/// the command itself gets the dispositions exec had.
#[cfg(unix)]
fn handle_signals(command: &mut std::process::Command) {
    // SAFETY: dispositions are set on this single thread of the CLI before the spawn; the
    // handler only reads atomics and calls kill.
    let (int, quit) = unsafe {
        libc::signal(libc::SIGTERM, forward as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, forward as *const () as libc::sighandler_t);
        (
            libc::signal(libc::SIGINT, libc::SIG_IGN),
            libc::signal(libc::SIGQUIT, libc::SIG_IGN),
        )
    };
    // SAFETY: between fork and exec the child only calls signal, which is async-signal-safe
    // (a handler is reset to the default by execve by itself).
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGINT, int);
            libc::signal(libc::SIGQUIT, quit);
            Ok(())
        });
    }
}

/// Runs the command to its end with the signal handling of the module's doc.
fn run(words: &[OsString]) -> Ran {
    let mut command = std::process::Command::new(&words[0]);
    command.args(&words[1..]);
    #[cfg(unix)]
    handle_signals(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return Ran::NotStarted(err),
    };
    CHILD.store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
    #[cfg(unix)]
    if let signal @ 1.. = PENDING.swap(0, Ordering::SeqCst) {
        forward(signal);
    }
    let status = child.wait().context("cannot wait for the command");
    CHILD.store(0, Ordering::SeqCst);
    match status {
        Ok(status) => match (status.code(), signal_of(&status)) {
            (Some(code), _) => Ran::Exited(code),
            (None, Some(signal)) => Ran::Signalled(signal),
            (None, None) => Ran::Exited(1),
        },
        Err(err) => Ran::NotStarted(std::io::Error::other(format!("{err:#}"))),
    }
}

/// The signal that ended the command (none on Windows, where a process only exits).
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    return std::os::unix::process::ExitStatusExt::signal(status);
    #[cfg(windows)]
    {
        let _ = status;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_label_is_the_command_line_quoted_where_a_shell_needs_it() {
        let words: Vec<OsString> = ["sh", "-c", "echo 'hi' > a.txt", "make", "CC=gcc", ""]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            command_line(&words),
            r"sh -c 'echo '\''hi'\'' > a.txt' make CC=gcc ''"
        );
        let long = vec![OsString::from("x".repeat(LABEL_MAX + 10))];
        assert_eq!(command_line(&long).chars().count(), LABEL_MAX + 1);
    }

    /// Turn `number` of session `s` with these counts and `paths` changes.
    fn turn(number: i64, counts: serde_json::Value, paths: usize) -> Turn {
        let change = json!({"path": "a", "change": "added", "kind": "file", "reviewed": false});
        serde_json::from_value(json!({"session": "s", "turn": number, "ref": null, "label": null,
            "started_at": "t", "ended_at": "t", "start_seq": 1, "end_seq": 2, "counts": counts,
            "reviewed": false, "changes": vec![change; paths]}))
        .expect("a turn")
    }

    #[test]
    fn the_summary_counts_what_the_turn_changed() {
        let counts = json!({"added": 2, "modified": 5, "deleted": 1, "renamed": 0, "ambiguous": 0});
        assert_eq!(
            summary(&turn(3, counts, 8), "s"),
            "filewatchd: turn 3 of s: +2 ~5 -1, 8 paths (undo: filewatchd undo --session s)"
        );
        let counts = json!({"added": 0, "modified": 0, "deleted": 0, "renamed": 7, "ambiguous": 0});
        assert_eq!(
            summary(&turn(4, counts, 7), "s"),
            "filewatchd: turn 4 of s: +0 ~0 -0 R7, 7 paths (undo: filewatchd undo --session s)"
        );
        let counts = json!({"added": 0, "modified": 0, "deleted": 0, "renamed": 0, "ambiguous": 0});
        assert_eq!(
            summary(&turn(1, counts, 0), "s"),
            "filewatchd: turn 1 of s: no changes"
        );
    }
}
