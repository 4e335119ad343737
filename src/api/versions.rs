//! A path's versions (`GET /v1/history`), serialized straight into the answer: a path written
//! in every turn has tens of thousands, and a tree of JSON values per version cost more than
//! reading them.

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

use crate::history::HistoryRow;
use crate::model::{State, format_time};
use crate::paths::RelPath;

/// The answer: the path and every version of it, oldest first.
pub struct HistoryView {
    pub path: String,
    pub versions: Vec<HistoryRow>,
}

impl Serialize for HistoryView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("HistoryView", 2)?;
        out.serialize_field("path", &self.path)?;
        out.serialize_field("versions", &Versions(&self.versions))?;
        out.end()
    }
}

struct Versions<'a>(&'a [HistoryRow]);

impl Serialize for Versions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(VersionView::of))
    }
}

/// One version as docs/api.md shows it: who made it, then what its state says beyond its kind.
#[derive(Serialize)]
struct VersionView<'a> {
    seq: i64,
    time: String,
    origin: &'static str,
    session: Option<&'a str>,
    turn: Option<i64>,
    kind: &'static str,
    /// Files only.
    #[serde(skip_serializing_if = "Option::is_none")]
    too_large: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    executable: Option<bool>,
    /// The permission bits in octal ("0600"), when the version recorded them.
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
    /// Only when true: the daemon could not read the file, it has no hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<bool>,
    /// A symlink's target.
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
}

impl<'a> VersionView<'a> {
    fn of(version: &'a HistoryRow) -> Self {
        let turn = version.turn.as_ref();
        let mut view = Self {
            seq: version.seq,
            time: format_time(version.recorded_at),
            origin: version.origin.name(),
            session: turn.map(|(session, _)| &**session),
            turn: turn.map(|&(_, number)| number),
            kind: version.state.kind().name(),
            too_large: None,
            size: None,
            hash: None,
            executable: None,
            mode: None,
            unreadable: None,
            target: None,
        };
        match &version.state {
            State::File(f) => {
                view.too_large = Some(f.too_large);
                view.size = Some(f.size);
                view.hash = (!f.unreadable).then(|| f.hash.to_hex());
                view.executable = Some(f.executable);
                view.mode = f.mode_text();
                view.unreadable = f.unreadable.then_some(true);
            }
            State::Symlink { target } => {
                view.target = Some(RelPath::from_fs_bytes(target.clone()).to_text());
            }
            State::Dir | State::Absent | State::Untracked => {}
        }
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FileState, Hash, Origin};

    fn version(seq: i64, state: State, turn: Option<(&str, i64)>) -> HistoryRow {
        HistoryRow {
            seq,
            recorded_at: 0,
            origin: if turn.is_some() {
                Origin::Turn
            } else {
                Origin::Outside
            },
            turn: turn.map(|(session, number)| (session.into(), number)),
            state,
        }
    }

    /// The fields and their order are those of the answer docs/api.md shows, for each kind.
    #[test]
    fn each_kind_of_version_answers_with_its_fields_in_order() {
        let turn = ("s1", 2);
        // The second recorded before permission bits were: it has no `mode`.
        let file = |too_large, unreadable, mode| FileState {
            hash: Hash([0xab; 32]),
            size: 12,
            executable: true,
            mode,
            too_large,
            unreadable,
        };
        let link = State::Symlink {
            target: b"../t".to_vec(),
        };
        let versions = vec![
            version(1, State::File(file(false, false, Some(0o755))), Some(turn)),
            version(2, State::File(file(true, false, None)), None),
            version(3, State::File(file(false, true, Some(0o700))), None),
            version(4, link, None),
            version(5, State::Dir, None),
            version(6, State::Absent, None),
            version(7, State::Untracked, None),
        ];
        let view = HistoryView {
            path: "a".into(),
            versions,
        };
        let json = serde_json::to_string(&view).expect("json");
        let who = |seq: i64| {
            format!(
                r#""seq":{seq},"time":"1970-01-01T00:00:00.000Z","origin":"outside","session":null,"turn":null"#
            )
        };
        let hash = "ab".repeat(32);
        let expected = [
            format!(
                r#"{{"seq":1,"time":"1970-01-01T00:00:00.000Z","origin":"turn","session":"s1","turn":2,"kind":"file","too_large":false,"size":12,"hash":"{hash}","executable":true,"mode":"0755"}}"#
            ),
            format!(
                r#"{{{},"kind":"file","too_large":true,"size":12,"hash":"{hash}","executable":true}}"#,
                who(2)
            ),
            format!(
                r#"{{{},"kind":"file","too_large":false,"size":12,"executable":true,"mode":"0700","unreadable":true}}"#,
                who(3)
            ),
            format!(r#"{{{},"kind":"symlink","target":"../t"}}"#, who(4)),
            format!(r#"{{{},"kind":"dir"}}"#, who(5)),
            format!(r#"{{{},"kind":"absent"}}"#, who(6)),
            format!(r#"{{{},"kind":"untracked"}}"#, who(7)),
        ];
        assert_eq!(
            json,
            format!(r#"{{"path":"a","versions":[{}]}}"#, expected.join(","))
        );
    }
}
