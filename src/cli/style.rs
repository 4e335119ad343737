//! How the CLI's text looks, in one place: counts with the right plural, sizes in human units,
//! and colour only where it is wanted (`--color auto|always|never`; `auto` means stdout is a
//! terminal and `NO_COLOR` is unset or empty, as no-color.org asks).

use std::io::IsTerminal;
use std::sync::OnceLock;

/// `--color`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

static COLOR: OnceLock<bool> = OnceLock::new();

/// Decides once, at start-up, whether stdout gets colour; later calls change nothing.
pub fn init_color(choice: ColorChoice) {
    COLOR.get_or_init(|| match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => no_color_unset() && std::io::stdout().is_terminal(),
    });
}

/// Whether the log on stderr gets colour: as stdout's, asked of stderr (a log redirected to a
/// file stays plain text).
pub fn stderr_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => no_color_unset() && std::io::stderr().is_terminal(),
    }
}

fn no_color_unset() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether stdout gets colour (`auto` until `init_color` says otherwise).
pub fn color() -> bool {
    *COLOR.get_or_init(|| no_color_unset() && std::io::stdout().is_terminal())
}

/// An SGR colour, for `paint`.
#[derive(Debug, Clone, Copy)]
pub enum Paint {
    Added,
    Deleted,
    Changed,
    Hunk,
    Dim,
    Bold,
    Warning,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Paint::Added => "32",
            Paint::Deleted => "31",
            Paint::Changed => "33",
            Paint::Hunk => "36",
            Paint::Dim => "2",
            Paint::Bold => "1",
            Paint::Warning => "1;33",
        }
    }
}

/// `text` in colour when stdout gets colour, as it is otherwise.
pub fn paint(text: &str, paint: Paint) -> String {
    if color() {
        format!("\x1b[{}m{text}\x1b[0m", paint.code())
    } else {
        text.to_string()
    }
}

/// "1 file", "3 files", "0 files"; `plural` for nouns that do not just take an "s".
pub fn count(n: u64, singular: &str, plural: &str) -> String {
    match n {
        1 => format!("1 {singular}"),
        _ => format!("{n} {plural}"),
    }
}

/// `count` for nouns whose plural adds an "s".
pub fn counted(n: u64, noun: &str) -> String {
    count(n, noun, &format!("{noun}s"))
}

/// A size in human units, binary multiples as `ls -h` and `du -h` give them: "512 B",
/// "1.5 KiB", "12 MiB", "3.2 GiB" (one decimal below 10, none above).
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_ls_h_prints_them() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (1536, "1.5 KiB"),
            (10 * 1024, "10 KiB"),
            (77_400_000, "74 MiB"),
            (3 << 30, "3.0 GiB"),
        ];
        for (bytes, shown) in cases {
            assert_eq!(size(bytes), shown, "{bytes}");
        }
    }

    #[test]
    fn counts_take_the_plural_unless_one() {
        assert_eq!(counted(0, "file"), "0 files");
        assert_eq!(counted(1, "file"), "1 file");
        assert_eq!(counted(2, "file"), "2 files");
        assert_eq!(count(2, "directory", "directories"), "2 directories");
    }
}
