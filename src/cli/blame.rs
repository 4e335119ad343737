//! `filewatchd blame PATH [--at TIME | --seq S]`: each line of a file with the version that
//! introduced it (its sequence number, its turn or origin, the start of the turn's prompt).

use super::flags::{JsonFlag, ServeArgs, valid_time};
use super::style::{Paint, paint};
use super::{Client, Hint, encode, escape, print, workspace_relative};
use crate::wire::blame::{Blame, Line};
use crate::wire::error::ErrorCode;
use clap::Args;

#[derive(Debug, Args)]
pub struct BlameCmd {
    /// The file to blame (relative to the directory you are in).
    pub path: String,
    /// Blame the version recorded at this time (RFC 3339) instead of the latest.
    #[arg(long, value_name = "TIME", value_parser = valid_time, conflicts_with = "seq")]
    pub at: Option<String>,
    /// Blame the version at this sequence number (one `filewatchd history PATH` lists).
    #[arg(long, value_name = "S")]
    pub seq: Option<i64>,
    #[command(flatten)]
    pub json: JsonFlag,
}

/// How much of a prompt a line shows.
const PROMPT_WIDTH: usize = 24;

pub fn blame(client: &Client, args: &ServeArgs, cmd: BlameCmd) -> anyhow::Result<()> {
    let path = workspace_relative(client, args, &cmd.path)?;
    let mut query = format!("/v1/blame?path={}", encode(&path));
    if let Some(at) = &cmd.at {
        query.push_str(&format!("&at={}", encode(at)));
    }
    if let Some(seq) = cmd.seq {
        query.push_str(&format!("&seq={seq}"));
    }
    let answer: Blame = client.get_as(&query).hint(
        ErrorCode::NotFound,
        "`filewatchd history PATH` lists its versions; a path is relative to the directory you are in",
    )?;
    print::answer(&answer, cmd.json.json, print_blame)
}

fn print_blame(answer: &Blame) {
    let path = escape::quoted(&answer.path);
    if answer.binary || answer.too_large {
        let why = if answer.too_large {
            "over max_file_size: only its size and hash were recorded"
        } else {
            "not text"
        };
        println!(
            "{path} (seq {}) is {why}: nothing to blame line by line",
            answer.seq
        );
        return;
    }
    let columns: Vec<(String, String, String)> = answer.lines.iter().map(columns).collect();
    let seq_width = columns.iter().map(|c| c.0.len()).max().unwrap_or(0);
    let by_width = columns.iter().map(|c| c.1.chars().count()).max().unwrap_or(0);
    let prompt_width = columns.iter().map(|c| c.2.chars().count()).max().unwrap_or(0);
    // Each line's number first, as `cat -n` puts it: `  12  #41 s1#3 rename fn | text`.
    let number_width = answer.lines.len().to_string().len();
    for (n, ((seq, by, prompt), line)) in columns.iter().zip(&answer.lines).enumerate() {
        let left = format!("{seq:>seq_width$} {by:<by_width$} {prompt:<prompt_width$}");
        println!(
            "{:>number_width$}  {} | {}",
            n + 1,
            paint(&left, Paint::Dim),
            escape::text(&line.text)
        );
    }
}

/// A line's version (`#41`), its turn (`s1#3`) or origin, and its prompt's start.
fn columns(line: &Line) -> (String, String, String) {
    let by = match (&line.session, line.turn) {
        (Some(session), Some(turn)) => format!("{}#{turn}", escape::text(session)),
        _ => line.origin.name().to_string(),
    };
    let prompt = line.prompt.as_deref().unwrap_or_default();
    let short = if prompt.chars().count() > PROMPT_WIDTH {
        let cut: String = prompt.chars().take(PROMPT_WIDTH - 1).collect();
        format!("{cut}…")
    } else {
        prompt.to_string()
    };
    (format!("#{}", line.seq), by, escape::text(&short).into_owned())
}
