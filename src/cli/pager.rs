//! Long output on a terminal goes through `$PAGER` (default `less -FRX`: it quits when the
//! text fits one screen, keeps colours, and leaves the text on the screen), as git's does.
//! Output that is not a terminal is printed as it is.

use std::io::{IsTerminal, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The terminal's rows, when stdout is a terminal.
pub(super) fn terminal_rows() -> Option<usize> {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    #[cfg(unix)]
    return {
        let size = rustix::termios::tcgetwinsize(&stdout).ok()?;
        (size.ws_row > 0).then_some(usize::from(size.ws_row))
    };
    // Windows: no pager (see `show`), so its height is not asked.
    #[cfg(windows)]
    return None;
}

/// Prints `text`, through the pager when `allowed`, stdout is a terminal and the text is
/// taller than it.
pub(super) fn show(text: &str, allowed: bool) -> std::io::Result<()> {
    let mut out = Paged::new(allowed);
    out.write(text)?;
    out.finish()
}

/// Output written as it is made (a turn's diffs, page by page): held while it fits the
/// terminal, then, when it grows taller and a pager is allowed, sent through `$PAGER` from its
/// first line on, so the pager shows the first page while the rest is still being fetched.
/// Not on a terminal, it goes straight to stdout.
pub(super) struct Paged {
    to: To,
}

enum To {
    /// Waiting to see whether the text fits: what came so far, and the terminal's rows.
    Holding(String, usize),
    Stdout,
    Pager(Child, ChildStdin),
    /// The reader left (the pager quit, a closed pipe): the rest is dropped.
    Gone,
}

impl Paged {
    pub(super) fn new(allowed: bool) -> Self {
        let to = match terminal_rows() {
            Some(rows) if allowed => To::Holding(String::new(), rows),
            _ => To::Stdout,
        };
        Self { to }
    }

    /// Writes `text`; `false` once nobody reads any more (the caller may stop making more).
    pub(super) fn write(&mut self, text: &str) -> std::io::Result<bool> {
        match &mut self.to {
            To::Holding(held, rows) => {
                held.push_str(text);
                if held.lines().count() >= *rows {
                    let held = std::mem::take(held);
                    self.to = spawn_pager().map_or(To::Stdout, |(child, stdin)| To::Pager(child, stdin));
                    return self.write(&held);
                }
            }
            To::Stdout => {
                let mut stdout = std::io::stdout().lock();
                let written = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
                if !still_read(written)? {
                    self.to = To::Gone;
                }
            }
            To::Pager(_, stdin) => {
                if !still_read(stdin.write_all(text.as_bytes()))? {
                    self.to = To::Gone;
                }
            }
            To::Gone => {}
        }
        Ok(!matches!(self.to, To::Gone))
    }

    /// Prints what is still held, and waits for the pager to be quit.
    pub(super) fn finish(self) -> std::io::Result<()> {
        match self.to {
            To::Holding(held, _) => {
                let mut stdout = std::io::stdout().lock();
                still_read(stdout.write_all(held.as_bytes()).and_then(|()| stdout.flush()))?;
            }
            To::Pager(mut child, stdin) => {
                drop(stdin);
                let _ = child.wait();
            }
            To::Stdout | To::Gone => {}
        }
        Ok(())
    }
}

/// A write's outcome: read (`true`), or the reader gone (`false`: the user quit the pager
/// before reading it all, or closed the pipe; that is no error).
fn still_read(written: std::io::Result<()>) -> std::io::Result<bool> {
    match written {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

/// Starts `$PAGER` (through the shell, as git does) reading from a pipe; `None` when there is
/// no pager to run (empty, `cat`) or it cannot start.
fn spawn_pager() -> Option<(Child, ChildStdin)> {
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -FRX".to_string());
    if pager.trim().is_empty() || pager.trim() == "cat" {
        return None;
    }
    let mut command = Command::new("sh");
    command.arg("-c").arg(&pager).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        command.env("LESS", "FRX");
    }
    let mut child = command.spawn().ok()?;
    let stdin = child.stdin.take()?;
    Some((child, stdin))
}
