//! Long output on a terminal goes through `$PAGER` (default `less -FRX`: it quits when the
//! text fits one screen, keeps colours, and leaves the text on the screen), as git's does.
//! Output that is not a terminal is printed as it is.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

/// The terminal's rows, when stdout is a terminal.
pub(super) fn terminal_rows() -> Option<usize> {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&stdout).ok()?;
    (size.ws_row > 0).then_some(usize::from(size.ws_row))
}

/// Prints `text`, through the pager when `allowed`, stdout is a terminal and the text is
/// taller than it.
pub(super) fn show(text: &str, allowed: bool) -> std::io::Result<()> {
    let tall = terminal_rows().is_some_and(|rows| text.lines().count() >= rows);
    if allowed && tall && through_pager(text) {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Runs `$PAGER` (through the shell, as git does) with `text` on its stdin and waits for
/// it; false when there is no pager to run (empty, `cat`) or it cannot start.
fn through_pager(text: &str) -> bool {
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -FRX".to_string());
    if pager.trim().is_empty() || pager.trim() == "cat" {
        return false;
    }
    let mut command = Command::new("sh");
    command.arg("-c").arg(&pager).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        command.env("LESS", "FRX");
    }
    let Ok(mut child) = command.spawn() else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The user may quit the pager before reading it all: that is no error.
        let _ = stdin.write_all(text.as_bytes());
    }
    let _ = child.wait();
    true
}
