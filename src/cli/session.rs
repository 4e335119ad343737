//! Which session a command means: `--session` (or `$FILEWATCHD_SESSION`) names one
//! by its full name, a unique prefix (as git takes short hashes) or `last`; without either
//! it is the session with the latest activity, said in one line on stderr when there are
//! several.

use anyhow::bail;

use super::style::{self, Paint, paint};
use super::{Client, escape};
use crate::sessions::pick::{Known, Picked};
use crate::wire::session::{Session, Sessions};

/// Names shown shortened keep at least this many characters (and as many more as it takes
/// to tell them apart).
const SHORT_MIN: usize = 8;

pub(crate) fn listed(client: &Client) -> anyhow::Result<Vec<Session>> {
    Ok(client.get_as::<Sessions>("/v1/sessions")?.sessions)
}

/// Prompts are cut to this many characters in the listing.
const PROMPT_SHOWN: usize = 72;

/// `sessions`: one line each, newest activity last: the name, the agent, the turns, the
/// latest activity, and the first prompt.
pub(super) fn print_list(answer: &Sessions) {
    if answer.sessions.is_empty() {
        println!("no sessions yet");
    }
    for s in &answer.sessions {
        let mut line = format!(
            "{}  {}  {}  last active {}",
            paint(&escape::text(&s.session), Paint::Bold),
            s.agent.as_deref().map_or("-".into(), escape::text),
            style::counted(s.turns.max(0) as u64, "turn"),
            escape::text(&super::localtime::show(&s.last_activity)),
        );
        if let Some(turn) = s.open_turn {
            line.push_str(&format!("  turn {turn} open"));
        }
        if let (Some(parent), Some(turn)) = (&s.parent, s.fork_turn) {
            line.push_str(&format!(
                "  forked from {} after turn {turn}",
                escape::text(parent)
            ));
        }
        if let Some(prompt) = s.first_prompt.as_deref().filter(|p| !p.is_empty()) {
            line.push_str(&format!("  {}", escape::text(&cut(prompt, PROMPT_SHOWN))));
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
fn pick(all: &[Session], typed: String) -> anyhow::Result<String> {
    let known: Vec<Known> = all
        .iter()
        .map(|s| Known {
            name: &s.session,
            last_activity: &s.last_activity,
        })
        .collect();
    match crate::sessions::pick::pick(&known, &typed) {
        // `last`, unless a session has that name: said on stderr when there are several.
        Picked::One(_) | Picked::NoSessions if typed == "last" && !all.iter().any(|s| s.session == typed) => {
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
fn latest(all: &[Session]) -> anyhow::Result<String> {
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
            short_name(&newest.session, all),
            all.len()
        );
    }
    Ok(newest.session.clone())
}

/// `name` as short as it can be told apart from every other in `all` (at least
/// `SHORT_MIN` characters), with `…` when shortened.
pub(crate) fn short_name(name: &str, all: &[Session]) -> String {
    let chars: Vec<char> = name.chars().collect();
    for len in SHORT_MIN..chars.len() {
        let prefix: String = chars[..len].iter().collect();
        let unique = all
            .iter()
            .all(|s| s.session == name || !s.session.starts_with(&prefix));
        if unique {
            return format!("{prefix}…");
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(name: &str, at: &str) -> Session {
        Session {
            session: name.into(),
            turns: 1,
            open_turn: None,
            created_at: at.into(),
            last_activity: at.into(),
            parent: None,
            fork_turn: None,
            agent: None,
            first_prompt: None,
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
