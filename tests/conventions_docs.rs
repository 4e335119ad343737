//! CLI conventions: the shell completions and the man pages come from the clap
//! definitions and cover every command; every flag and argument has help text.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;
use clap::CommandFactory;
use filewatchd::cli::Cli;

/// Every command `--help` shows, as its path of names ("turn start"), the top one first (empty).
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut next = path.clone();
            next.push(sub.get_name().to_string());
            walk(sub, next, out);
        }
        out.push(path);
    }
    let mut out = Vec::new();
    walk(&Cli::command(), Vec::new(), &mut out);
    out.reverse();
    out
}

/// The top-level commands, as a user types them.
fn top_commands() -> Vec<String> {
    command_paths()
        .into_iter()
        .filter(|p| p.len() == 1)
        .map(|p| p[0].clone())
        .collect()
}

#[track_caller]
fn ok(out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {}; stdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `filewatchd completions SHELL` written to a file in `dir`.
fn completion_script(ws: &Workspace, dir: &Path, shell: &str) -> std::path::PathBuf {
    let script = ok(ws.cli(".", &["completions", shell]));
    let path = dir.join(format!("filewatchd.{shell}"));
    std::fs::write(&path, script).unwrap();
    path
}

/// Runs `program ARGS` (a shell), or `None` when it is not installed.
fn shell(program: &str, args: &[&str]) -> Option<Output> {
    match Command::new(program).args(args).output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("{program} is not installed: its completion script is not checked");
            None
        }
        Err(e) => panic!("cannot run {program}: {e}"),
    }
}

/// The words bash's completion function offers after `words` (the last one being completed).
fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let code = format!(
        "source '{}'\nCOMP_WORDS=(filewatchd {})\nCOMP_CWORD={}\n_filewatchd filewatchd '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len(),
        words.last().unwrap(),
        words.iter().rev().nth(1).copied().unwrap_or("filewatchd"),
    );
    let out = shell("bash", &["-c", &code]).expect("bash runs the tests");
    ok(out).lines().map(str::to_string).collect()
}

#[test]
fn the_bash_script_is_valid_and_completes_every_command_and_flag() {
    let ws = Workspace::new();
    let dir = tempfile::tempdir().unwrap();
    let script = completion_script(&ws, dir.path(), "bash");
    ok(shell("bash", &["-n", script.to_str().unwrap()]).expect("bash runs the tests"));

    let offered: BTreeSet<String> = bash_completes(&script, &[""]).into_iter().collect();
    for command in top_commands() {
        assert!(
            offered.contains(&command),
            "bash does not complete `{command}`: {offered:?}"
        );
    }
    let flags = bash_completes(&script, &["rollback", "--sk"]);
    assert_eq!(flags, ["--skip-conflicts"]);
    let values = bash_completes(&script, &["--color", ""]);
    assert_eq!(values, ["auto", "always", "never"]);
}

#[test]
fn the_zsh_script_is_valid_and_names_every_command() {
    let ws = Workspace::new();
    let dir = tempfile::tempdir().unwrap();
    let script = completion_script(&ws, dir.path(), "zsh");
    let Some(out) = shell("zsh", &["-n", script.to_str().unwrap()]) else {
        return;
    };
    ok(out);
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.starts_with("#compdef filewatchd"), "{text:.200}");
    for command in top_commands() {
        assert!(
            text.contains(&format!("'{command}:")),
            "zsh script lacks `{command}`"
        );
    }
}

#[test]
fn the_fish_script_is_valid_and_completes_every_command_and_flag() {
    let ws = Workspace::new();
    let dir = tempfile::tempdir().unwrap();
    let script = completion_script(&ws, dir.path(), "fish");
    let path = script.to_str().unwrap();
    let Some(out) = shell("fish", &["--no-execute", path]) else {
        return;
    };
    ok(out);
    let complete = |line: &str| {
        let code = format!("source '{path}'; complete -C '{line}'");
        ok(shell("fish", &["-c", &code]).expect("fish ran a moment ago"))
    };
    let offered: BTreeSet<String> = complete("filewatchd ")
        .lines()
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    for command in top_commands() {
        assert!(
            offered.contains(&command),
            "fish does not complete `{command}`: {offered:?}"
        );
    }
    let flags = complete("filewatchd rollback --sk");
    assert!(flags.starts_with("--skip-conflicts\t"), "{flags}");
}

/// `man --dir` writes one page per command; each is roff that groff and man render without a
/// warning; `man` alone prints the top page.
#[test]
fn every_command_has_a_man_page_that_renders_without_warnings() {
    let ws = Workspace::new();
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let said = ok(ws.cli(".", &["man", "--dir", pages.to_str().unwrap()]));
    let written: BTreeSet<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: BTreeSet<String> = command_paths()
        .iter()
        .map(|path| {
            let mut name = vec!["filewatchd".to_string()];
            name.extend(path.iter().cloned());
            format!("{}.1", name.join("-"))
        })
        .collect();
    assert_eq!(written, expected);
    assert!(
        said.contains(&format!("wrote {} man pages", expected.len())),
        "{said}"
    );

    for page in &written {
        let file = pages.join(page);
        let file = file.to_str().unwrap();
        let groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z", file])
            .output()
            .expect("groff (groff-base) renders the man pages: .ci/run installs it");
        assert_eq!(
            String::from_utf8_lossy(&groff.stderr),
            "",
            "groff warns about {page}"
        );
        let man = Command::new("man")
            .args(["--warnings", "-l", file])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .expect("man (man-db) renders the man pages: .ci/run installs it");
        let text = ok(man.clone());
        assert_eq!(String::from_utf8_lossy(&man.stderr), "", "man warns about {page}");
        let name = page.trim_end_matches(".1");
        assert!(text.contains("NAME") && text.contains(name), "{page}:\n{text}");
    }

    let top = ok(ws.cli(".", &["man"]));
    assert_eq!(top, std::fs::read_to_string(pages.join("filewatchd.1")).unwrap());
}

/// Every flag and argument a user sees has help text: the next one added without it fails here,
/// named by its command and flag.
#[test]
fn every_flag_and_argument_has_help_text() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        if cmd.get_about().is_none() && cmd.get_long_about().is_none() {
            missing.push(format!("`{path}` (the command itself)"));
        }
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                let name = match arg.get_long() {
                    Some(long) => format!("--{long}"),
                    None => format!("<{}>", arg.get_id()),
                };
                missing.push(format!("`{path} {name}`"));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    // clap's own checks of the definitions (conflicting names, groups of unknown args) first.
    Cli::command().debug_assert();
    let mut missing = Vec::new();
    walk(&Cli::command(), "filewatchd", &mut missing);
    assert!(
        missing.is_empty(),
        "no help text (add a /// doc comment to the field): {}",
        missing.join(", ")
    );
}
