//! Which session a name typed by a person or an agent means, among the sessions `GET
//! /v1/sessions` lists: the full name (an exact match wins, even `last`), `last` (the latest
//! activity), or a unique prefix, as git takes short hashes. Pure: the CLI and the MCP server
//! both ask it, each saying the outcome in its own words.

/// A session as the caller knows it: its name and latest activity (RFC 3339 in UTC with
/// milliseconds, so ordered as text).
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    pub name: &'a str,
    pub last_activity: &'a str,
}

/// What a typed name means.
#[derive(Debug, PartialEq, Eq)]
pub enum Picked<'a> {
    /// One session: by its full name, as `last`, or by a prefix only it has.
    One(&'a str),
    /// `last` with no session at all.
    NoSessions,
    /// No session has this name or starts with it (a new name, for a new turn).
    Unknown,
    /// A prefix of several: their names.
    Ambiguous(Vec<&'a str>),
}

pub fn pick<'a>(all: &[Known<'a>], typed: &str) -> Picked<'a> {
    if let Some(exact) = all.iter().find(|s| s.name == typed) {
        return Picked::One(exact.name);
    }
    if typed == "last" {
        return latest(all).map_or(Picked::NoSessions, Picked::One);
    }
    let matches: Vec<&str> = all
        .iter()
        .filter(|s| s.name.starts_with(typed))
        .map(|s| s.name)
        .collect();
    match matches.as_slice() {
        [one] => Picked::One(one),
        [] => Picked::Unknown,
        _ => Picked::Ambiguous(matches),
    }
}

/// The session with the latest activity (the later listed of equals: the newer session).
pub fn latest<'a>(all: &[Known<'a>]) -> Option<&'a str> {
    all.iter()
        .max_by(|a, b| a.last_activity.cmp(b.last_activity))
        .map(|s| s.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_last_prefix_and_ambiguous() {
        let all = [
            Known {
                name: "3f2a-1",
                last_activity: "2026-11-30T10:00:00.000Z",
            },
            Known {
                name: "3f2a-2",
                last_activity: "2026-11-30T11:00:00.000Z",
            },
            Known {
                name: "last",
                last_activity: "2026-11-30T09:00:00.000Z",
            },
        ];
        assert_eq!(pick(&all, "last"), Picked::One("last"), "an exact name wins");
        assert_eq!(pick(&all[..2], "last"), Picked::One("3f2a-2"));
        assert_eq!(pick(&[], "last"), Picked::NoSessions);
        assert_eq!(pick(&all, "3f2a-1"), Picked::One("3f2a-1"));
        assert_eq!(pick(&all, "la"), Picked::One("last"));
        assert_eq!(pick(&all, "3f"), Picked::Ambiguous(vec!["3f2a-1", "3f2a-2"]));
        assert_eq!(pick(&all, "zz"), Picked::Unknown);
    }
}
