//! Every write in the right turn, and every answer about it up to date: an open turn's
//! listing passes the barrier, a write made while turns of several sessions were open is
//! listed by each of them (marked `ambiguous`), and a conflict names the latest foreign change
//! with the count of the others.

use crate::common::*;
use serde_json::json;

const FILES: usize = 10;
const ROUNDS: usize = 4;

fn names(round: usize) -> Vec<String> {
    (0..FILES).map(|i| format!("r{round}/f{i}.txt")).collect()
}

/// A `sed -i` over 10 files right before `GET` of the open turn, and of the session's turns:
/// each answer already has all of them (the reads pass the barrier, as `history` does). Done
/// over several rounds of fresh files: without the barrier one round may by chance be
/// recorded in time.
#[test]
fn an_open_turns_listing_has_every_write_made_before_the_request() {
    let ws = Workspace::new();
    for round in 0..ROUNDS * 2 {
        for name in names(round) {
            ws.write(&name, "before\n");
        }
    }
    let daemon = Daemon::start(&ws);
    daemon.turn_start("agent", "edits with sed");

    let mut edited = Vec::new();
    for round in 0..ROUNDS {
        let content = format!("edited in round {round}\n");
        ws.sh(&format!(
            "sed -i 's/before/edited in round {round}/' r{}/*.txt",
            2 * round
        ));
        edited.extend(names(2 * round));
        let turn = daemon.turn("agent", 1, false);
        assert_eq!(turn["ended_at"], json!(null), "{turn:#}");
        assert_eq!(
            changed_files(&turn),
            set(edited.clone()),
            "round {round}: {turn:#}"
        );
        for name in names(2 * round) {
            assert_eq!(
                change(&turn, &name)["hash"],
                blake3_hex(content.as_bytes()),
                "{turn:#}"
            );
        }

        ws.sh(&format!(
            "sed -i 's/before/edited in round {round}/' r{}/*.txt",
            2 * round + 1
        ));
        edited.extend(names(2 * round + 1));
        let listed = daemon.turn_list("agent");
        assert_eq!(
            listed[0]["counts"]["modified"],
            edited.len(),
            "round {round}: {listed:#?}"
        );
    }
}

/// alpha and beta both have a turn open; a write then is `ambiguous`. Each of the two turns
/// lists it, marked, and counts it (the API, `show` and `log`); writes made while only one
/// turn was open stay that turn's alone and are not marked.
#[test]
fn a_write_while_two_sessions_have_open_turns_is_listed_by_both_marked_ambiguous() {
    let ws = Workspace::new();
    ws.write("shared.txt", "base\n");
    let daemon = Daemon::start(&ws);

    daemon.turn_start("alpha", "alpha");
    ws.write("a.txt", "alpha alone\n");
    daemon.turn_start("beta", "beta");
    ws.write("both.txt", "while both were open\n");
    ws.write("shared.txt", "while both were open\n");
    daemon.turn_end("alpha");
    ws.write("b.txt", "beta alone\n");
    let beta = daemon.turn_end("beta");
    let alpha = daemon.turn("alpha", 1, false);

    for (turn, own, other) in [(&alpha, "a.txt", "b.txt"), (&beta, "b.txt", "a.txt")] {
        let session = turn["session"].clone();
        assert_eq!(
            changed_files(turn),
            set([own, "both.txt", "shared.txt"]),
            "{session}: {turn:#}"
        );
        assert!(!changed_files(turn).contains(other), "{turn:#}");
        assert_eq!(change(turn, "both.txt")["change"], "added", "{turn:#}");
        assert_eq!(change(turn, "both.txt")["ambiguous"], true, "{turn:#}");
        assert_eq!(change(turn, "shared.txt")["change"], "modified", "{turn:#}");
        assert_eq!(change(turn, "shared.txt")["ambiguous"], true, "{turn:#}");
        assert_eq!(change(turn, own).get("ambiguous"), None, "{turn:#}");
        let counts = &turn["counts"];
        assert_eq!(
            (&counts["added"], &counts["modified"], &counts["ambiguous"]),
            (&json!(2), &json!(1), &json!(2)),
            "{session}: {turn:#}"
        );
        let listed = daemon.turn_list(session.as_str().unwrap_or_default());
        assert_eq!(listed[0]["counts"], *counts, "{listed:#?}");
    }

    let shown = cli_state_text(&ws, &["show", "1", "--session", "alpha"]);
    assert!(shown.contains("+2 ~1 -0"), "{shown}");
    assert!(shown.contains("2 ambiguous"), "{shown}");
    let line = shown
        .lines()
        .find(|l| l.contains("both.txt"))
        .unwrap_or_else(|| panic!("show lists both.txt:\n{shown}"));
    assert!(line.contains("ambiguous"), "{shown}");
    assert!(
        !shown
            .lines()
            .any(|l| l.contains("a.txt") && l.contains("ambiguous")),
        "{shown}"
    );
    let log = cli_state_text(&ws, &["log", "--session", "beta"]);
    assert!(log.contains("+2 ~1 -0") && log.contains("2 ambiguous"), "{log}");
}

/// The edit found at restart is the latest foreign change to `f.txt` since alpha's turn; an
/// older one was beta's turn. alpha's undo names the edit found at restart, and says that
/// there was one other.
#[test]
fn a_conflict_names_the_latest_foreign_change_and_counts_the_others() {
    let ws = Workspace::new();
    ws.write("f.txt", "base\n");
    let daemon = Daemon::start(&ws);
    daemon.turn_start("alpha", "alpha");
    ws.write("f.txt", "alpha\n");
    daemon.turn_end("alpha");
    daemon.turn_start("beta", "beta");
    ws.write("f.txt", "beta\n");
    daemon.turn_end("beta");
    daemon.stop();
    ws.write("f.txt", "edited while the daemon was down\n");
    let daemon = Daemon::start(&ws);
    assert_eq!(latest(&daemon.history("f.txt"))["origin"], "offline");

    let (status, refused) = daemon.undo("alpha", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    let conflict = listed(&refused, "conflicts", "f.txt");
    assert_eq!(conflict["code"], "changed_by_other", "{conflict}");
    let reason = conflict["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("without being seen written"),
        "the reason must name the edit found at restart, the latest: {reason:?}"
    );
    assert!(
        !reason.contains("beta"),
        "beta's write is the older one: {reason:?}"
    );
    assert!(
        reason.contains("1 earlier change by others"),
        "the reason must say there was one other: {reason:?}"
    );
}
