//! The planner's decisions without a watcher, a daemon or a disk: what `decide` applies,
//! skips or refuses under each conflict policy, how a re-planned part replaces its paths in
//! a plan (`Plan::replace_within`), and the undo stack a redo returns from.

use super::plan::{Decision, Note, Plan, Step, decide};
use crate::model::answer::{Action, NoteCode, OnConflict};
use crate::model::fixtures::{file, path};
use crate::model::{Content, FileState, Hash, RollbackKind, State};
use crate::store::journal::{RollbackRow, Status};

fn step(p: &str, current: State, target: State) -> Step {
    Step {
        path: path(p),
        path_id: 0,
        current_seq: 2,
        current,
        target_seq: Some(1),
        target,
        checked: None,
    }
}

fn note(p: &str, code: NoteCode) -> Note {
    Note {
        path: path(p),
        code,
        reason: format!("{code:?} at {p}"),
    }
}

/// A plan: `a` modified, directory `d` created (with `d/x` inside), `gone` to re-create.
fn plan(conflicts: &[(&str, NoteCode)], not_restorable: &[(&str, NoteCode)]) -> Plan {
    Plan {
        steps: vec![
            step("a", file(2), file(1)),
            step("d", State::Dir, State::Absent),
            step("d/x", file(3), State::Absent),
            step("gone", State::Absent, file(4)),
        ],
        conflicts: conflicts.iter().map(|(p, c)| note(p, *c)).collect(),
        not_restorable: not_restorable.iter().map(|(p, c)| note(p, *c)).collect(),
        ..Plan::default()
    }
}

fn applied(decision: &Decision) -> Vec<String> {
    decision.apply.iter().map(|s| s.path.to_text()).collect()
}

fn skipped(decision: &Decision) -> Vec<(String, NoteCode)> {
    decision
        .skipped
        .iter()
        .map(|n| (n.path.to_text(), n.code))
        .collect()
}

#[test]
fn each_step_has_the_action_its_two_states_call_for() {
    let cases = [
        (file(2), file(1), Action::Restore),
        (State::Absent, file(1), Action::Create),
        (file(2), State::Absent, Action::Delete),
        (State::Dir, State::Absent, Action::RemoveDir),
        (
            State::Symlink {
                target: b"x".to_vec(),
            },
            State::Symlink {
                target: b"y".to_vec(),
            },
            Action::Relink,
        ),
        (State::Dir, file(1), Action::Restore),
    ];
    for (current, target, action) in cases {
        let described = format!("{current:?} -> {target:?}");
        assert_eq!(step("p", current, target).action(), action, "{described}");
    }
    let mut exec = FileState {
        content: Content::Stored(Hash([1; 32])),
        size: 1,
        executable: true,
        mode: Some(0o755),
    };
    let plain = State::File(exec.clone());
    (exec.executable, exec.mode) = (false, Some(0o644));
    assert_eq!(
        step("p", plain.clone(), State::File(exec.clone())).action(),
        Action::SetMode
    );
    exec.mode = Some(0o600);
    assert_eq!(step("p", plain, State::File(exec)).action(), Action::SetMode);
}

#[test]
fn without_conflicts_every_policy_applies_the_whole_plan() {
    for policy in [OnConflict::Abort, OnConflict::Skip, OnConflict::Force] {
        let decision = decide(&plan(&[], &[]), policy);
        assert!(!decision.refused, "{policy:?}");
        assert_eq!(applied(&decision), ["a", "d", "d/x", "gone"], "{policy:?}");
        assert!(decision.skipped.is_empty(), "{policy:?}");
    }
}

/// The table of G4: one conflict on the directory `d`, under each policy.
#[test]
fn a_conflict_refuses_under_abort_is_left_with_what_lies_beneath_under_skip_and_taken_under_force() {
    let conflicted = plan(&[("d", NoteCode::ChangedByOther)], &[]);
    type Case<'a> = (OnConflict, bool, &'a [&'a str], &'a [(&'a str, NoteCode)]);
    let cases: [Case; 3] = [
        (OnConflict::Abort, true, &[], &[]),
        (
            OnConflict::Skip,
            false,
            &["a", "gone"],
            &[("d", NoteCode::ChangedByOther), ("d/x", NoteCode::BeneathSkipped)],
        ),
        (OnConflict::Force, false, &["a", "d", "d/x", "gone"], &[]),
    ];
    for (policy, refused, apply, skip) in cases {
        let decision = decide(&conflicted, policy);
        assert_eq!(decision.refused, refused, "{policy:?}");
        assert_eq!(applied(&decision), apply, "{policy:?}");
        let expected: Vec<(String, NoteCode)> = skip.iter().map(|(p, c)| (p.to_string(), *c)).collect();
        assert_eq!(skipped(&decision), expected, "{policy:?}");
    }
}

/// What cannot be restored (its content is missing) is refused by abort and left alone even
/// by force: no policy writes content it does not have.
#[test]
fn a_path_that_cannot_be_restored_is_never_applied() {
    let missing = plan(&[], &[("gone", NoteCode::ContentMissing)]);
    assert!(decide(&missing, OnConflict::Abort).refused);
    for policy in [OnConflict::Skip, OnConflict::Force] {
        let decision = decide(&missing, policy);
        assert!(!decision.refused, "{policy:?}");
        assert_eq!(applied(&decision), ["a", "d", "d/x"], "{policy:?}");
        assert_eq!(
            skipped(&decision),
            [("gone".to_string(), NoteCode::ContentMissing)],
            "{policy:?}"
        );
    }
}

#[test]
fn a_replanned_part_takes_the_place_of_its_paths_and_keeps_the_order() {
    let mut whole = plan(
        &[("a", NoteCode::ChangedOnDisk), ("d/x", NoteCode::ChangedOnDisk)],
        &[],
    );
    whole.changed_on_disk = vec![path("a"), path("d/x")];
    // Built again for `a` and `d/x`: `a` now already holds its target (dropped), `d/x` is
    // someone else's change now.
    let sub = Plan {
        steps: vec![step("d/x", file(5), State::Absent)],
        conflicts: vec![note("d/x", NoteCode::ChangedByOther)],
        ..Plan::default()
    };
    whole.replace_within(sub, &[path("a"), path("d/x")]);
    let steps: Vec<String> = whole.steps.iter().map(|s| s.path.to_text()).collect();
    assert_eq!(steps, ["d", "d/x", "gone"]);
    assert_eq!(whole.steps[1].current, file(5));
    let conflicts: Vec<(String, NoteCode)> = whole
        .conflicts
        .iter()
        .map(|n| (n.path.to_text(), n.code))
        .collect();
    assert_eq!(conflicts, [("d/x".to_string(), NoteCode::ChangedByOther)]);
    assert!(whole.changed_on_disk.is_empty());
}

fn op(id: i64, kind: RollbackKind) -> RollbackRow {
    RollbackRow {
        id,
        session_id: Some(1),
        session: Some("s".into()),
        kind,
        target_seq: 0,
        from_seq: 0,
        position: Some(id),
        prev_position: None,
        redo_of: None,
        status: Status::Committed,
        created_at: 0,
        paths: None,
        brief: None,
        temp_tag: None,
        outcome: None,
    }
}

#[test]
fn each_redo_cancels_the_latest_rollback_still_on_the_stack() {
    type Case<'a> = (&'a [(i64, RollbackKind)], &'a [i64]);
    let cases: [Case; 5] = [
        (&[], &[]),
        (&[(1, RollbackKind::Undo), (2, RollbackKind::Undo)], &[1, 2]),
        (
            &[
                (1, RollbackKind::Undo),
                (2, RollbackKind::Undo),
                (3, RollbackKind::Redo),
            ],
            &[1],
        ),
        (
            &[
                (1, RollbackKind::Undo),
                (2, RollbackKind::Redo),
                (3, RollbackKind::Rollback),
            ],
            &[3],
        ),
        (
            &[
                (1, RollbackKind::Undo),
                (2, RollbackKind::Redo),
                (3, RollbackKind::Redo),
            ],
            &[],
        ),
    ];
    for (chain, left) in cases {
        let rows: Vec<RollbackRow> = chain.iter().map(|(id, kind)| op(*id, *kind)).collect();
        let ids: Vec<i64> = super::chain::undo_stack(rows).iter().map(|r| r.id).collect();
        assert_eq!(ids, left, "{chain:?}");
    }
}
