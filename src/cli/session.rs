//! Which session a command means: `--session` (or `$FILEWATCHD_SESSION`) names one
//! by its full name, a unique prefix (as git takes short hashes) or `last`; without either
//! it is the session with the latest activity, said in one line on stderr when there are
//! several.

use anyhow::bail;
use serde_json::Value;

use super::style::{self, Paint, paint};
use super::{Client, text_of};
use crate::sessions::pick::{Known, Picked};

/// Names shown shortened keep at least this many characters (and as many more as it takes
/// to tell them apart).
const SHORT_MIN: usize = 8;

/// One session as `GET /v1/sessions` lists it.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub name: String,
    pub agent: Option<String>,
    /// RFC 3339 in UTC with milliseconds: ordered as text.
    pub last_activity: String,
}

pub(crate) fn listed(client: &Client) -> anyhow::Result<Vec<Listed>> {
    let answer = client.get("/v1/sessions")?;
    let all = answer["sessions"].as_array().map_or(&[][..], Vec::as_slice);
    Ok(all.iter().filter_map(listed_one).collect())
}

fn listed_one(s: &Value) -> Option<Listed> {
    Some(Listed {
        name: s["session"].as_str()?.to_string(),
        agent: s["agent"].as_str().map(str::to_string),
        last_activity: s["last_activity"].as_str().unwrap_or_default().to_string(),
    })
}

/// Prompts are cut to this many characters in the listing.
const PROMPT_SHOWN: usize = 72;

/// `sessions`: one line each, newest activity last: the name, the agent, the turns, the
/// latest activity, and the first prompt.
pub(super) fn print_list(answer: &Value) {
    let list = answer["sessions"].as_array().map_or(&[][..], Vec::as_slice);
    if list.is_empty() {
        println!("no sessions yet");
    }
    for s in list {
        let mut line = format!(
            "{}  {}  {}  last active {}",
            paint(&text_of(&s["session"]), Paint::Bold),
            super::print::text(&s["agent"]),
            style::counted(s["turns"].as_u64().unwrap_or(0), "turn"),
            super::localtime::answer_time(&s["last_activity"]),
        );
        if let Some(turn) = s["open_turn"].as_i64() {
            line.push_str(&format!("  turn {turn} open"));
        }
        if let (Some(parent), Some(turn)) = (s["parent"].as_str(), s["fork_turn"].as_i64()) {
            line.push_str(&format!(
                "  forked from {} after turn {turn}",
                super::escape::text(parent)
            ));
        }
        if let Some(prompt) = s["first_prompt"].as_str().filter(|p| !p.is_empty()) {
            line.push_str(&format!("  {}", super::escape::text(&cut(prompt, PROMPT_SHOWN))));
        }
        println!("{line}");
    }
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// A session name typed by the user, refused before it goes into a URL.
pub(crate) fn session_name(typed: String) -> anyhow::Result<String> {
    if crate::sessions::is_valid_name(&typed) {
        return Ok(typed);
    }
    bail!(super::BadInput(format!(
        "{typed:?} is not a session name: {}",
        crate::sessions::NAME_RULE
    )))
}

/// The session an existing-session command means: `given` as a name, a unique prefix or
/// `last`, else the latest.
pub(crate) fn resolve_session(client: &Client, given: Option<String>) -> anyhow::Result<String> {
    let all = listed(client)?;
    match given {
        Some(typed) => pick(&all, typed),
        None => latest(&all),
    }
}

/// The session a new turn goes to: `given` exactly as typed (a new name starts a session;
/// `last` is the latest), else the latest, said on stderr even when it is the only one (a
/// turn in someone else's session is not what a missing `--session` should do unsaid).
pub(crate) fn resolve_for_turn_start(client: &Client, given: Option<String>) -> anyhow::Result<String> {
    match given {
        Some(typed) if typed != "last" => session_name(typed),
        Some(_) => latest(&listed(client)?),
        None => {
            let all = listed(client)?;
            let name = latest(&all)?;
            if all.len() == 1 {
                eprintln!(
                    "session {}, the only one (--session NAME starts another)",
                    short_name(&name, &all)
                );
            }
            Ok(name)
        }
    }
}

/// A full name (an exact match wins, even `last`), `last`, or a prefix of exactly one
/// (`sessions::pick`).
fn pick(all: &[Listed], typed: String) -> anyhow::Result<String> {
    let known: Vec<Known> = all
        .iter()
        .map(|s| Known {
            name: &s.name,
            last_activity: &s.last_activity,
        })
        .collect();
    match crate::sessions::pick::pick(&known, &typed) {
        // `last`, unless a session has that name: said on stderr when there are several.
        Picked::One(_) | Picked::NoSessions if typed == "last" && !all.iter().any(|s| s.name == typed) => {
            latest(all)
        }
        Picked::One(name) => Ok(name.to_string()),
        Picked::NoSessions | Picked::Unknown => session_name(typed),
        Picked::Ambiguous(many) => {
            let names: Vec<String> = many.iter().map(|name| short_name(name, all)).collect();
            bail!(
                "{typed:?} is the start of {} sessions ({}): give more of the name",
                many.len(),
                names.join(", ")
            )
        }
    }
}

/// The session with the latest activity, said on stderr when there are several.
fn latest(all: &[Listed]) -> anyhow::Result<String> {
    // `max_by` keeps the last of equals: the newer session.
    let Some(newest) = all.iter().max_by(|a, b| a.last_activity.cmp(&b.last_activity)) else {
        bail!("there is no session yet: give one with --session NAME (or set FILEWATCHD_SESSION)");
    };
    if all.len() > 1 {
        let agent = newest
            .agent
            .as_deref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        eprintln!(
            "session {}{agent}, the latest of {} (--session picks another)",
            short_name(&newest.name, all),
            all.len()
        );
    }
    Ok(newest.name.clone())
}

/// `name` as short as it can be told apart from every other in `all` (at least
/// `SHORT_MIN` characters), with `…` when shortened.
pub(crate) fn short_name(name: &str, all: &[Listed]) -> String {
    let chars: Vec<char> = name.chars().collect();
    for len in SHORT_MIN..chars.len() {
        let prefix: String = chars[..len].iter().collect();
        let unique = all.iter().all(|s| s.name == name || !s.name.starts_with(&prefix));
        if unique {
            return format!("{prefix}…");
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(name: &str, at: &str) -> Listed {
        Listed {
            name: name.into(),
            agent: None,
            last_activity: at.into(),
        }
    }

    #[test]
    fn a_prefix_names_the_one_session_it_starts_and_an_ambiguous_one_lists_them() {
        let all = [
            session("3f2a1c9d-0000-4000-8000-000000000001", "2026-11-30T10:00:00.000Z"),
            session("3f2a1c9d-1111-4000-8000-000000000002", "2026-11-30T11:00:00.000Z"),
            session("b7", "2026-11-30T09:00:00.000Z"),
        ];
        assert_eq!(pick(&all, "b".into()).ok().as_deref(), Some("b7"));
        assert_eq!(
            pick(&all, "3f2a1c9d-1".into()).ok().as_deref(),
            Some("3f2a1c9d-1111-4000-8000-000000000002")
        );
        let err = pick(&all, "3f".into()).expect_err("ambiguous").to_string();
        assert!(
            err.contains("start of 2 sessions (3f2a1c9d-0…, 3f2a1c9d-1…)"),
            "{err}"
        );
        assert_eq!(pick(&all, "new-one".into()).ok().as_deref(), Some("new-one"));
        assert_eq!(
            pick(&all, "last".into()).ok().as_deref(),
            Some("3f2a1c9d-1111-4000-8000-000000000002")
        );
    }

    #[test]
    fn short_names_keep_eight_characters_and_what_tells_them_apart() {
        let all = [
            session("0123456789abcdef", ""),
            session("abcdefgh12", ""),
            session("s1", ""),
        ];
        assert_eq!(short_name("0123456789abcdef", &all), "01234567…");
        assert_eq!(short_name("s1", &all), "s1");
        let close = [session("0123456789abcdef", ""), session("0123456789abXX", "")];
        assert_eq!(short_name("0123456789abcdef", &close), "0123456789abc…");
    }
}
