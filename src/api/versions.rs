//! A path's versions (`GET /v1/history`) as `wire::history` answers them.

use crate::history::HistoryRow;
use crate::model::{Hash, State, format_time};
use crate::paths::RelPath;
use crate::wire::history::{History, Version};

/// The answer: the path and every version of it, oldest first.
pub fn history(path: String, rows: &[HistoryRow]) -> History {
    History {
        path,
        versions: rows.iter().map(version).collect(),
    }
}

/// One version: who made it, then what its state says beyond its kind.
fn version(row: &HistoryRow) -> Version {
    let turn = row.turn.as_ref();
    let mut version = Version {
        seq: row.seq,
        time: format_time(row.recorded_at),
        origin: row.origin,
        decided: row.decided,
        session: turn.map(|(session, _)| session.to_string()),
        turn: turn.map(|&(_, number)| number),
        kind: row.state.kind(),
        too_large: None,
        size: None,
        hash: None,
        executable: None,
        mode: None,
        unreadable: false,
        target: None,
    };
    match &row.state {
        State::File(f) => {
            version.too_large = Some(f.is_too_large());
            version.size = Some(f.size);
            version.hash = f.hash().map(Hash::to_hex);
            version.executable = Some(f.executable);
            version.mode = f.mode_text();
            version.unreadable = f.is_unreadable();
        }
        State::Symlink { target } => {
            version.target = Some(RelPath::from_fs_bytes(target.clone()).to_text());
        }
        State::Dir | State::Absent | State::Untracked => {}
    }
    version
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Content, FileState, Origin};

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
            decided: None,
        }
    }

    /// The fields and their order are those of the answer docs/api.md shows, for each kind.
    #[test]
    fn each_kind_of_version_answers_with_its_fields_in_order() {
        let turn = ("s1", 2);
        // The second recorded before permission bits were: it has no `mode`.
        let file = |content, mode| FileState {
            content,
            size: 12,
            executable: true,
            mode,
        };
        let link = State::Symlink {
            target: b"../t".to_vec(),
        };
        let versions = vec![
            version(
                1,
                State::File(file(Content::Stored(Hash([0xab; 32])), Some(0o755))),
                Some(turn),
            ),
            version(
                2,
                State::File(file(Content::TooLarge(Hash([0xab; 32])), None)),
                None,
            ),
            version(3, State::File(file(Content::Unreadable, Some(0o700))), None),
            version(4, link, None),
            version(5, State::Dir, None),
            version(6, State::Absent, None),
            version(7, State::Untracked, None),
        ];
        let json = serde_json::to_string(&history("a".into(), &versions)).expect("json");
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
