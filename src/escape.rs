//! Text that came from outside (file names, labels, prompts, file lines, notes, lock notes,
//! error messages that quote them) as the CLI shows it to a human: a control character a
//! terminal acts on (C0 but tab, DEL, C1: escape sequences that set the title, clear the
//! screen, make hyperlinks) or a bidi control that reorders what is shown (U+202A-U+202E,
//! U+2066-U+2069) is written as its escape (`\u{1b}`, `\n`, `\u{202e}`), so what a name or a
//! prompt holds can be read but never steers the terminal. Every human output goes through
//! `text` or `quoted`; `--json` stays JSON, whose strings escape controls already. A command
//! line shown to be run again quotes its words with `shell_word`.

use std::borrow::Cow;

/// Whether a terminal would act on `c` rather than show it.
fn steers(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that would steer a terminal escaped (a newline too: one
/// value is one line).
pub fn text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(steers) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if steers(c) {
            shown.extend(c.escape_debug());
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// A name (a path) as one unambiguous line: one holding a character that would steer a
/// terminal is quoted with its characters escaped (its quotes and backslashes too), as git
/// quotes such names; any other as it is.
pub fn quoted(name: &str) -> Cow<'_, str> {
    if name.chars().any(steers) {
        Cow::Owned(format!("\"{}\"", name.escape_debug()))
    } else {
        Cow::Borrowed(name)
    }
}

/// Lines of text (a diff, a file) each escaped as `text` does, the line breaks kept.
pub fn lines(text_lines: &str) -> String {
    let mut shown = String::with_capacity(text_lines.len());
    for line in text_lines.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        shown.push_str(&text(body));
        shown.push_str(end);
    }
    shown
}

/// A word the shell reads back as `text`: as it is when it holds only letters, digits and
/// `plain`, else in single quotes.
pub fn shell_word(text: &str, plain: &str) -> String {
    let is_plain = |c: char| c.is_ascii_alphanumeric() || plain.contains(c);
    if !text.is_empty() && text.chars().all(is_plain) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A program's path as the first word of a command an agent's hook runs. On Unix a shell
/// word. On Windows, where an agent may run it with cmd.exe, PowerShell or Git Bash, its
/// `\\` become `/` (which Windows takes in a path too), so a path without spaces is one bare
/// word all three run; one with spaces is double-quoted (cmd.exe and bash; PowerShell needs
/// `& ` before it, which docs/agents.md says).
pub fn program_word(program: &str) -> String {
    #[cfg(unix)]
    return shell_word(program, "/._-+:@");
    #[cfg(windows)]
    {
        let program = program.replace('\\', "/");
        let is_plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@".contains(c);
        if !program.is_empty() && program.chars().all(is_plain) {
            return program;
        }
        format!("\"{program}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_and_bidi_overrides_are_escaped() {
        assert_eq!(text("title\u{1b}]0;pwned\u{7}"), "title\\u{1b}]0;pwned\\u{7}");
        assert_eq!(text("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(text("bidi\u{202e}txt.exe"), "bidi\\u{202e}txt.exe");
        assert_eq!(text("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(text("two\nlines"), "two\\nlines");
        assert_eq!(text("del\u{7f}"), "del\\u{7f}");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for plain in ["add login form", "tab\tkept", "é ü 中 — «»", r"back\slash"] {
            assert!(matches!(text(plain), Cow::Borrowed(_)), "{plain}");
            assert!(matches!(quoted(plain), Cow::Borrowed(_)), "{plain}");
        }
    }

    #[test]
    fn a_name_that_needs_escaping_is_quoted() {
        assert_eq!(quoted("a\u{1b}[2Jb"), "\"a\\u{1b}[2Jb\"");
        assert_eq!(quoted("q\"\u{202e}"), "\"q\\\"\\u{202e}\"");
    }

    #[test]
    fn lines_keep_their_breaks() {
        assert_eq!(lines("a\u{1b}\nb\n"), "a\\u{1b}\nb\n");
        assert_eq!(lines("no end\r"), "no end\\r");
    }
}
