//! An agent's git commands are part of its turn (issue 49): on a real repository with history,
//! staged, unstaged, untracked and ignored work, one turn runs one git command; `filewatchd
//! undo` puts back the repository as it was (HEAD, every branch and tag, the stash, the index,
//! the work tree), `redo` as the turn left it, and no commit the turn made is unreachable.

use std::process::Command;

use crate::common::*;
use serde_json::json;

/// `git` in the workspace; its stdout.
fn git(ws: &Workspace, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(ws.root())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", ws.home())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `script` in the workspace the way an agent's bash tool does.
fn agent_runs(ws: &Workspace, script: &str) {
    let home = ws.home().display().to_string();
    ws.sh(&format!("export HOME='{home}' GIT_CONFIG_NOSYSTEM=1\n{script}"));
}

/// A repository with three commits on `main`, a branch `other` off the first, a branch `old`
/// with a commit of its own, a tag, one stash entry, and then staged, unstaged, untracked and
/// ignored work.
fn repository() -> Workspace {
    let ws = Workspace::new();
    let home = ws.home().display().to_string();
    ws.sh(&format!(
        "export HOME='{home}' GIT_CONFIG_NOSYSTEM=1
         git init -q -b main
         git config user.email agent@example.com && git config user.name Agent
         printf '.env\\nbuild/\\n' > .gitignore
         echo one > a.txt && echo one > b.txt && echo one > c.txt
         git add -A && git commit -qm first
         git branch other && git branch old
         echo two > a.txt && git commit -qam second && git tag v2
         echo three > b.txt && git commit -qam third
         git checkout -q other && echo other > c.txt && git commit -qam other && git checkout -q main
         git checkout -q old && echo old > old.txt && git add old.txt && git commit -qm old && git checkout -q main
         echo stashed >> c.txt && git stash -q
         echo staged >> a.txt && git add a.txt
         echo unstaged >> b.txt
         echo untracked > untracked.txt
         echo SECRET=hunter2 > .env
         mkdir build && echo obj > build/out.o"
    ));
    ws
}

/// What a repository is: HEAD, every ref, the stash, the index and the work tree (ignored
/// `build/` aside: its contents are never recorded).
fn repo_state(ws: &Workspace) -> String {
    let head = git(ws, &["rev-parse", "--symbolic-full-name", "HEAD"]) + &git(ws, &["rev-parse", "HEAD"]);
    let refs = git(
        ws,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/tags",
            "refs/stash",
        ],
    );
    let stash = git(ws, &["stash", "list", "--format=%H %gs"]);
    let index = git(ws, &["ls-files", "--stage"]);
    let mut files = String::new();
    let mut stack = vec![ws.root().to_path_buf()];
    let mut paths = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(ws.root()).expect("inside").to_path_buf();
            if rel.starts_with(".git") || rel.starts_with("build") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                paths.push(rel);
            }
        }
    }
    paths.sort();
    for rel in paths {
        let bytes = std::fs::read(ws.path(&rel)).expect("read");
        files.push_str(&format!(
            "{} {}\n",
            rel.display(),
            String::from_utf8_lossy(&bytes).trim_end()
        ));
    }
    format!("HEAD {head}refs:\n{refs}stash:\n{stash}index:\n{index}files:\n{files}")
}

/// Every commit `git rev-list --all` reaches (refs only, no reflog).
fn reachable(ws: &Workspace) -> String {
    git(ws, &["rev-list", "--all"])
}

/// One turn running `script`; then undo and redo, each checked against the repository's state.
fn undo_and_redo(script: &str) {
    let ws = repository();
    let daemon = Daemon::start(&ws);
    let before = repo_state(&ws);
    daemon.turn_start("agent", "run git");
    agent_runs(&ws, script);
    let turn = daemon.turn_end("agent");
    let after = repo_state(&ws);
    assert_ne!(before, after, "{script} changed nothing");
    let made: Vec<String> = git(&ws, &["rev-list", "--all"])
        .lines()
        .map(str::to_string)
        .collect();
    assert!(
        !turn["git"].as_array().is_none_or(|g| g.is_empty()) || script.contains("clean"),
        "{script}: the turn names no git move: {turn:#}"
    );

    let undone = expect(200, daemon.undo("agent", json!({})));
    assert_eq!(repo_state(&ws), before, "{script}: undo\n{undone:#}");
    let now = reachable(&ws);
    for commit in &made {
        assert!(
            now.contains(commit.as_str()),
            "{script}: {commit} is unreachable after undo"
        );
    }
    let redone = expect(200, daemon.redo("agent", json!({})));
    assert_eq!(repo_state(&ws), after, "{script}: redo\n{redone:#}");
    daemon.stop();
}

#[test]
fn commit_all() {
    undo_and_redo("git commit -qam 'agent commit'");
}

#[test]
fn reset_hard() {
    undo_and_redo("git reset -q --hard HEAD~1");
}

#[test]
fn checkout_a_new_branch_and_commit() {
    undo_and_redo("git checkout -q -b feature && echo f > f.txt && git add f.txt && git commit -qm feature");
}

#[test]
fn stash_and_stash_pop() {
    undo_and_redo("git stash -q");
    undo_and_redo("git stash pop -q || true");
}

#[test]
fn amend() {
    undo_and_redo("git commit -q --amend -m 'third, amended'");
}

#[test]
fn rebase_merge_cherry_pick() {
    undo_and_redo("git rebase -q --autostash other");
    undo_and_redo("git merge -q --no-edit --autostash other");
    // cherry-pick has no --autostash: the agent stashes around it.
    undo_and_redo("git stash -q && git cherry-pick other >/dev/null && git stash pop -q --index");
}

#[test]
fn detach_and_delete_a_branch() {
    undo_and_redo("git checkout -q --detach");
    undo_and_redo("git branch -q -D old");
}

#[test]
fn clean_fdx_and_the_ignored_env_comes_back() {
    undo_and_redo("git clean -qfdx");
}

#[test]
fn the_listing_show_and_log_name_what_moved_in_git() {
    let ws = repository();
    let daemon = Daemon::start_in_home(&ws);
    let main_before = git(&ws, &["rev-parse", "--short=7", "main"]);
    daemon.turn_start("agent", "commit on a branch");
    agent_runs(&ws, "git checkout -q -b feature && git commit -qm 'staged work'");
    let turn = daemon.turn_end("agent");
    let feature = git(&ws, &["rev-parse", "--short=7", "feature"]);
    let created = format!("feature created at {}", feature.trim());
    assert_eq!(turn["git"], json!(["HEAD main → feature", created]), "{turn:#}");
    assert_eq!(
        git(&ws, &["rev-parse", "--short=7", "main"]),
        main_before,
        "main did not move"
    );
    let shown = ws.cli(".", &["show", "1", "--session", "agent", "--no-pager"]);
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(shown.contains("git: HEAD main → feature"), "{shown}");
    let log = ws.cli(".", &["log", "--session", "agent"]);
    let log = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(log.contains("git: HEAD main → feature"), "{log}");
    daemon.stop();
}

#[test]
fn staging_reads_as_paths_staged() {
    let ws = repository();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("agent", "stage");
    agent_runs(&ws, "git add b.txt untracked.txt");
    let turn = daemon.turn_end("agent");
    assert_eq!(turn["git"], json!(["index: 2 paths staged"]), "{turn:#}");
    daemon.stop();
}

#[test]
fn a_commit_by_the_person_after_the_turn_is_a_conflict_and_nothing_changes() {
    let ws = repository();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("agent", "commit");
    agent_runs(&ws, "git commit -qam 'agent commit'");
    daemon.turn_end("agent");
    // The person commits on top of the agent's commit.
    agent_runs(&ws, "echo mine >> c.txt && git commit -qam 'my commit'");
    let before = repo_state(&ws);
    let dry = expect(200, daemon.undo("agent", json!({"dry_run": true})));
    let conflicts = dry["conflicts"].as_array().expect("conflicts");
    assert!(
        conflicts.iter().any(|c| c["path"] == ".git/refs/heads/main"),
        "{dry:#}"
    );
    assert!(
        dry["git"]
            .as_array()
            .is_some_and(|g| g.iter().any(|l| l["path"] == ".git/refs/heads/main")),
        "the dry run lists the git moves: {dry:#}"
    );
    let (status, refused) = daemon.undo("agent", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    assert_eq!(repo_state(&ws), before, "a refused undo changes nothing");
    // Forced, the person's commit stays reachable from filewatchd's own ref.
    let mine = git(&ws, &["rev-parse", "main"]);
    let forced = expect(200, daemon.undo("agent", json!({"on_conflict": "force"})));
    assert_ne!(git(&ws, &["rev-parse", "main"]), mine, "{forced:#}");
    assert!(reachable(&ws).contains(mine.trim()), "{mine} is kept");
    let kept = git(&ws, &["for-each-ref", "--format=%(refname)", "refs/filewatchd"]);
    assert!(kept.contains("/heads/main"), "{kept}");
    daemon.stop();
}

#[test]
fn ignored_directories_stay_unrecorded_and_a_removed_env_comes_back() {
    let ws = repository();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("agent", "clean");
    agent_runs(&ws, "git clean -qfdx && rm -f .gitignore");
    daemon.turn_end("agent");
    assert!(!ws.path(".env").exists());
    expect(200, daemon.undo("agent", json!({})));
    assert_eq!(
        std::fs::read_to_string(ws.path(".env")).expect(".env"),
        "SECRET=hunter2\n"
    );
    assert!(
        !ws.path("build/out.o").exists(),
        "build/ is an ignored directory: never recorded"
    );
    let (status, history) = daemon.history_reply("build/out.o");
    assert_eq!(
        (status, &history["error"]["code"]),
        (404, &json!("ignored")),
        "{history:#}"
    );
    daemon.stop();
}

#[test]
fn a_linked_worktree_has_its_own_head_and_index() {
    let main = repository();
    let wt = Workspace::new();
    let path = wt.root().join("wt");
    git(
        &main,
        &["worktree", "add", "-q", "-b", "wt", path.to_str().expect("utf-8")],
    );
    let ws = Workspace::at(&path, &wt.state_dir().join("s"));
    let daemon = Daemon::start(&ws);
    let before = git(&ws, &["rev-parse", "wt"]);
    daemon.turn_start("agent", "commit in the worktree");
    agent_runs(&ws, "echo x > x.txt && git add x.txt && git commit -qm x");
    daemon.turn_end("agent");
    assert_ne!(git(&ws, &["rev-parse", "wt"]), before);
    expect(200, daemon.undo("agent", json!({})));
    assert_eq!(git(&ws, &["rev-parse", "wt"]), before);
    assert_eq!(
        git(&ws, &["status", "--porcelain"]),
        "",
        "index and work tree as they were"
    );
    daemon.stop();
}

#[test]
fn a_redo_after_the_person_committed_on_the_undone_branch_is_a_conflict() {
    let ws = repository();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("agent", "commit");
    agent_runs(&ws, "git commit -qam 'agent commit'");
    daemon.turn_end("agent");
    expect(200, daemon.undo("agent", json!({})));
    agent_runs(&ws, "git commit -qm 'my commit'");
    let before = repo_state(&ws);
    let (status, refused) = daemon.redo("agent", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    let conflicts = refused["conflicts"].as_array().expect("conflicts");
    assert!(
        conflicts.iter().any(|c| c["path"] == ".git/refs/heads/main"),
        "{refused:#}"
    );
    assert_eq!(repo_state(&ws), before, "a refused redo changes nothing");
    daemon.stop();
}

/// Whether any file of the state directory holds `needle` (the blobs, the index, its WAL).
fn state_holds(ws: &Workspace, needle: &[u8]) -> bool {
    let mut dirs = vec![ws.state_dir().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle)) {
                return true;
            }
        }
    }
    false
}

#[test]
fn a_purged_env_leaves_no_trace_of_its_contents_in_the_store() {
    let ws = repository();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("agent", "clean");
    agent_runs(&ws, "git clean -qfdx");
    daemon.turn_end("agent");
    let secret = b"SECRET=hunter2";
    assert!(
        state_holds(&ws, secret),
        "the recorded .env is in the store before the purge"
    );
    let purged = cli_state(&ws, &["purge", ".env", "--yes", "--json"]);
    assert!(
        purged.status.success(),
        "{}",
        String::from_utf8_lossy(&purged.stderr)
    );
    let purged: serde_json::Value = serde_json::from_slice(&purged.stdout).expect("json");
    assert_eq!(
        (purged["path"].as_str(), purged["blobs_removed"].as_i64()),
        (Some(".env"), Some(1)),
        "{purged:#}"
    );
    assert!(
        !state_holds(&ws, secret),
        "no file of the store holds the purged contents"
    );
    let history = daemon.history(".env");
    assert!(
        !history["versions"].as_array().expect("versions").is_empty(),
        "its history stays"
    );
    let (status, refused) = daemon.undo("agent", json!({}));
    assert_eq!(status, 409, "{refused:#}");
    let lines = refused["not_restorable"].as_array().expect("not_restorable");
    assert!(
        lines
            .iter()
            .any(|l| l["path"] == ".env" && l["code"] == "content_missing"),
        "{refused:#}"
    );
    let (status, _) = daemon.post("/v1/purge", json!({"path": "never-there"}));
    assert_eq!(status, 404);
    daemon.stop();
}

/// G6 with git: an undo killed once journaled (K = 0: neither git nor any file moved yet, so
/// recovery moves git) or after its git moves and its first file change (K = 1) is finished by
/// the next start, files and git alike.
#[test]
fn an_undo_killed_after_its_git_moves_is_finished_at_restart() {
    for k in ["0", "1"] {
        let ws = repository();
        let env = [
            ("FILEWATCHD_TEST_PAUSE_AFTER", k),
            ("RUST_LOG", "filewatchd=info"),
        ];
        let daemon = Daemon::start_with_env(&ws, &[], &env);
        let before = repo_state(&ws);
        daemon.turn_start("agent", "edit and commit");
        agent_runs(
            &ws,
            "echo more >> a.txt && echo more >> c.txt && git commit -qam 'agent commit'",
        );
        daemon.turn_end("agent");
        let answer = daemon.post_detached("/v1/sessions/agent/undo", json!({}));
        let parked = poll_until(std::time::Duration::from_secs(60), || {
            daemon
                .stderr()
                .contains("FILEWATCHD_TEST_PAUSE_AFTER reached")
                .then_some(())
        });
        assert!(
            parked.is_some(),
            "K={k}: the undo never parked: {}",
            daemon.stderr()
        );
        daemon.kill9();
        assert!(
            answer.recv().ok().flatten().is_none(),
            "K={k}: the parked undo answered"
        );
        assert_ne!(
            repo_state(&ws),
            before,
            "K={k}: the crash left the undo half done"
        );
        let daemon = Daemon::start(&ws);
        assert_eq!(repo_state(&ws), before, "K={k}: the restart finished the undo");
        let redone = expect(200, daemon.redo("agent", json!({})));
        assert_eq!(redone["applied"], true, "K={k}: {redone:#}");
        daemon.stop();
    }
}

#[test]
fn an_undo_takes_main_back_to_the_persons_commit_made_before_the_turn() {
    let ws = repository();
    let daemon = Daemon::start(&ws);
    daemon.turn_start("agent", "a first turn");
    agent_runs(&ws, "echo one > one.txt");
    daemon.turn_end("agent");
    // The person commits between the turns: the session's undo does not take that back.
    agent_runs(&ws, "git commit -qm 'my staged work'");
    let mine = git(&ws, &["rev-parse", "main"]);
    daemon.turn_start("agent", "commit");
    agent_runs(&ws, "git commit -qam 'agent commit'");
    daemon.turn_end("agent");
    let undone = expect(200, daemon.undo("agent", json!({})));
    assert_eq!(git(&ws, &["rev-parse", "main"]), mine, "{undone:#}");
    let undone = expect(200, daemon.undo("agent", json!({})));
    assert_eq!(
        git(&ws, &["rev-parse", "main"]),
        mine,
        "the person's commit is not the session's: {undone:#}"
    );
    daemon.stop();
}
