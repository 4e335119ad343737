//! The Windows binary (`x86_64-pc-windows-gnu`) under Wine, as a Windows user would run it
//! (issue 51): `start` in a project, a turn whose writes come from a Windows process
//! (`cmd.exe`) and from the host, `show`, `undo`, `redo` (CRLF kept byte for byte), a refused
//! conflict, and `stop` through the API. Every command is the real `filewatchd.exe` run by
//! Wine in a Wine prefix of the test's own; the state goes where Windows keeps it
//! (`%LOCALAPPDATA%\filewatchd`).
//!
//! Needs `FILEWATCHD_WINDOWS_EXE` (the Windows build, with the test stand-in
//! `bcryptprimitives.dll` beside it: `.ci/run` builds both, see tests/wine/) and Wine's
//! `wine64`; skipped without them (a failure under `CI=true`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::common::*;

/// A command's deadline under Wine: a new prefix boots first (some seconds).
const DEADLINE: Duration = Duration::from_secs(120);

/// Wine's 64-bit loader: Debian's path, else on PATH.
fn wine64() -> Option<PathBuf> {
    let debian = PathBuf::from("/usr/lib/wine/wine64");
    if debian.exists() {
        return Some(debian);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("wine64"))
        .find(|p| p.exists())
}

/// One Wine prefix with the Windows binary, and the project it runs in.
struct Wine {
    wine: PathBuf,
    exe: PathBuf,
    prefix: tempfile::TempDir,
    project: tempfile::TempDir,
    _machine: machine::Shared,
}

/// What one command printed and how it ended.
struct Ran {
    status: ExitStatus,
    out: String,
}

impl Wine {
    fn new() -> Option<Self> {
        let Some(exe) = std::env::var_os("FILEWATCHD_WINDOWS_EXE").map(PathBuf::from) else {
            skip("FILEWATCHD_WINDOWS_EXE is not set (.ci/run builds the Windows binary)");
            return None;
        };
        let Some(wine) = wine64() else {
            skip("wine64 is not installed (Debian's wine64)");
            return None;
        };
        Some(Self {
            wine,
            exe,
            prefix: tempfile::tempdir().expect("prefix"),
            project: tempfile::tempdir().expect("project"),
            _machine: machine::shared(),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.project.path().join(name)
    }

    /// Starts `program` (a Windows program) with `args` in the project, its output into
    /// `log`: a file, not a pipe (a daemon `start` leaves running must hold no pipe of ours).
    fn spawn(&self, program: &Path, args: &[&str], log: &Path) -> std::process::Child {
        let file = File::create(log).expect("output file");
        Command::new(&self.wine)
            .arg(program)
            .args(args)
            .current_dir(self.project.path())
            .env("WINEPREFIX", self.prefix.path())
            .env("WINEDEBUG", "-all")
            .env_remove("FILEWATCHD_HOME")
            .env_remove("XDG_STATE_HOME")
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("clone"))
            .stderr(file)
            .spawn()
            .expect("wine64 runs")
    }

    /// Runs `program` with `args` in the project, to its end.
    fn run_program(&self, program: &Path, args: &[&str]) -> Ran {
        let log = self.prefix.path().join("out.txt");
        let mut child = self.spawn(program, args, &log);
        let status = poll_until(DEADLINE, || child.try_wait().expect("wait"));
        let Some(status) = status else {
            let _ = child.kill();
            panic!("{program:?} {args:?} did not end within {DEADLINE:?}");
        };
        let out = std::fs::read_to_string(&log).unwrap_or_default();
        Ran { status, out }
    }

    /// `filewatchd.exe ARGS`.
    fn filewatchd(&self, args: &[&str]) -> Ran {
        self.run_program(&self.exe, args)
    }

    /// `filewatchd.exe ARGS`, which must succeed; what it printed.
    #[track_caller]
    fn ok(&self, args: &[&str]) -> String {
        let ran = self.filewatchd(args);
        assert!(ran.status.success(), "{args:?}: {}\n{}", ran.status, ran.out);
        ran.out
    }
}

impl Drop for Wine {
    /// Ends every process of the prefix (a daemon a failed test left running among them).
    fn drop(&mut self) {
        let server = ["/usr/lib/wine/wineserver64", "/usr/lib/wine/wineserver"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or("wineserver");
        let _ = Command::new(server)
            .arg("-k")
            .env("WINEPREFIX", self.prefix.path())
            .status();
    }
}

#[test]
fn a_windows_session_records_a_turn_undoes_and_redoes_it_and_refuses_a_conflict() {
    let Some(wine) = Wine::new() else {
        return;
    };
    std::fs::write(wine.path("a.txt"), b"hello\r\n").expect("a.txt");
    let started = wine.ok(&["start"]);
    assert!(started.contains("started"), "{started}");

    wine.ok(&[
        "turn",
        "start",
        "--session",
        "demo",
        "--label",
        "from cmd and the host",
    ]);
    let cmd = wine.run_program(Path::new("cmd"), &["/c", "echo changed by cmd> a.txt"]);
    assert!(cmd.status.success(), "cmd.exe: {}", cmd.out);
    std::fs::write(wine.path("b.txt"), b"from the host\r\nsecond line\r\n").expect("b.txt");
    let ended = wine.ok(&["turn", "end", "--session", "demo"]);
    assert!(ended.contains("+1 ~1 -0"), "{ended}");

    let shown = wine.ok(&["show", "1"]);
    assert!(shown.contains("M a.txt") && shown.contains("A b.txt"), "{shown}");

    let undone = wine.ok(&["undo"]);
    assert!(undone.contains("back to before turn 1"), "{undone}");
    assert_eq!(std::fs::read(wine.path("a.txt")).expect("a.txt"), b"hello\r\n");
    assert!(
        !wine.path("b.txt").exists(),
        "b.txt is the turn's: undo removes it"
    );

    wine.ok(&["redo"]);
    assert_eq!(
        std::fs::read(wine.path("a.txt")).expect("a.txt"),
        b"changed by cmd\r\n"
    );
    assert_eq!(
        std::fs::read(wine.path("b.txt")).expect("b.txt"),
        b"from the host\r\nsecond line\r\n",
        "CRLF kept byte for byte"
    );

    // Someone else's change after the turn: undo refuses and changes nothing.
    wine.ok(&["turn", "start", "--session", "demo"]);
    std::fs::write(wine.path("a.txt"), b"turn 2\r\n").expect("a.txt");
    wine.ok(&["turn", "end", "--session", "demo"]);
    std::fs::write(wine.path("a.txt"), b"mine\r\n").expect("a.txt");
    let refused = wine.filewatchd(&["undo"]);
    assert_eq!(refused.status.code(), Some(3), "{}", refused.out);
    assert!(refused.out.contains("conflicts"), "{}", refused.out);
    assert_eq!(std::fs::read(wine.path("a.txt")).expect("a.txt"), b"mine\r\n");

    let stopped = wine.ok(&["stop"]);
    assert!(stopped.contains("stopped"), "{stopped}");
    let status = wine.filewatchd(&["status"]);
    assert!(!status.out.contains("daemon:        pid"), "{}", status.out);
}

/// The read-only attribute, as a Windows user sets it (`attrib +r`): a rollback replaces a
/// read-only file (a Unix rename needs only the directory's permission; Windows refuses to
/// replace a read-only file unless the attribute is taken off) and leaves it read-only.
#[test]
fn a_read_only_file_is_rolled_back_and_stays_read_only() {
    let Some(wine) = Wine::new() else {
        return;
    };
    std::fs::write(wine.path("r.txt"), b"v1\r\n").expect("r.txt");
    let attrib = wine.run_program(Path::new("cmd"), &["/c", "attrib +r r.txt"]);
    assert!(attrib.status.success(), "attrib: {}", attrib.out);
    let read_only = |w: &Wine| {
        std::fs::metadata(w.path("r.txt"))
            .expect("r.txt")
            .permissions()
            .readonly()
    };
    assert!(read_only(&wine), "attrib +r made it read-only");
    wine.ok(&["start"]);

    wine.ok(&["turn", "start", "--session", "demo"]);
    let edit = wine.run_program(
        Path::new("cmd"),
        &["/c", "attrib -r r.txt & echo v2>r.txt& attrib +r r.txt"],
    );
    assert!(edit.status.success(), "cmd.exe: {}", edit.out);
    wine.ok(&["turn", "end", "--session", "demo"]);
    assert_eq!(std::fs::read(wine.path("r.txt")).expect("r.txt"), b"v2\r\n");

    let undone = wine.ok(&["undo"]);
    assert!(undone.contains("r.txt"), "{undone}");
    assert_eq!(std::fs::read(wine.path("r.txt")).expect("r.txt"), b"v1\r\n");
    assert!(read_only(&wine), "still read-only after the rollback");
    wine.ok(&["stop"]);
}

/// The project's path as a Windows program sees it under Wine (`/` is drive `Z:`).
fn windows_path(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// Claude Code's hooks as `hook install` writes them on Windows, run the way an agent runs a
/// hook there (by cmd.exe, the event's JSON on stdin), mark a turn around a write.
#[test]
fn claude_code_hooks_run_by_cmd_mark_a_turn() {
    let Some(wine) = Wine::new() else {
        return;
    };
    std::fs::write(wine.path("x.txt"), b"one\r\n").expect("x.txt");
    wine.ok(&["start"]);
    wine.ok(&["hook", "install", "claude-code"]);
    let settings = std::fs::read_to_string(wine.path(".claude/settings.local.json")).expect("settings");
    let settings: serde_json::Value = serde_json::from_str(&settings).expect("json");
    let command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        .as_str()
        .expect("the hook's command")
        .to_string();
    assert!(!command.contains('\''), "a command cmd.exe runs: {command}");
    let cwd = windows_path(wine.project.path());
    let hook = |name: &str, event: serde_json::Value| {
        std::fs::write(wine.path(name), event.to_string()).expect("event");
        let ran = wine.run_program(Path::new("cmd"), &["/c", &format!("{command} < {name}")]);
        assert!(ran.status.success(), "{name}: {}", ran.out);
    };
    let prompt = serde_json::json!({"session_id": "s1", "hook_event_name": "UserPromptSubmit",
        "prompt": "edit x", "cwd": cwd, "transcript_path": ""});
    hook("prompt.json", prompt);
    let edit = wine.run_program(Path::new("cmd"), &["/c", "echo two>x.txt"]);
    assert!(edit.status.success(), "cmd.exe: {}", edit.out);
    hook(
        "stop.json",
        serde_json::json!({"session_id": "s1", "hook_event_name": "Stop", "cwd": cwd}),
    );

    let log = wine.ok(&["log"]);
    assert!(log.contains("turn 1") && log.contains("edit x"), "{log}");
    let shown = wine.ok(&["show", "1"]);
    assert!(shown.contains("M x.txt"), "{shown}");
    wine.ok(&["stop"]);
}

/// NTFS does not tell names apart by case. A case-only rename (`Readme.md` → `README.md`) is
/// recorded as what it is, so its undo gives the file its old
/// name back and its redo the new one (never deleting the one file); and a rollback that
/// would make a name whose other spelling someone else has made since is refused, with
/// nothing written.
#[test]
fn names_that_differ_only_in_case_are_one_file() {
    let Some(wine) = Wine::new() else {
        return;
    };
    std::fs::write(wine.path("Readme.md"), b"read me\r\n").expect("Readme.md");
    std::fs::write(wine.path("Notes.txt"), b"notes\r\n").expect("Notes.txt");
    wine.ok(&["start"]);
    let names = |w: &Wine| {
        let mut names: Vec<String> = std::fs::read_dir(w.project.path())
            .expect("listing")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md") || n.to_lowercase().ends_with(".txt"))
            .collect();
        names.sort();
        names
    };

    wine.ok(&["turn", "start", "--session", "demo"]);
    // Made on the host: Wine 8's own rename leaves a name's case as it was (`ren` does
    // nothing), and to the Windows side the directory answers to both spellings either way.
    std::fs::rename(wine.path("Readme.md"), wine.path("README.md")).expect("rename");
    wine.ok(&["turn", "end", "--session", "demo"]);
    assert_eq!(names(&wine), ["Notes.txt", "README.md"]);

    let undone = wine.ok(&["undo"]);
    assert!(undone.contains("back to before turn 1"), "{undone}");
    assert_eq!(names(&wine), ["Notes.txt", "Readme.md"], "{undone}");
    assert_eq!(
        std::fs::read(wine.path("Readme.md")).expect("Readme.md"),
        b"read me\r\n"
    );
    let redone = wine.ok(&["redo"]);
    assert_eq!(names(&wine), ["Notes.txt", "README.md"], "{redone}");
    assert_eq!(
        std::fs::read(wine.path("README.md")).expect("README.md"),
        b"read me\r\n"
    );

    // The turn deletes Notes.txt; then someone else makes NOTES.TXT, the same name to NTFS.
    wine.ok(&["turn", "start", "--session", "demo"]);
    let del = wine.run_program(Path::new("cmd"), &["/c", "del Notes.txt"]);
    assert!(del.status.success(), "cmd.exe: {}", del.out);
    wine.ok(&["turn", "end", "--session", "demo"]);
    let theirs = wine.run_program(Path::new("cmd"), &["/c", "echo theirs> NOTES.TXT"]);
    assert!(theirs.status.success(), "cmd.exe: {}", theirs.out);
    let refused = wine.filewatchd(&["undo"]);
    assert_eq!(refused.status.code(), Some(3), "{}", refused.out);
    assert!(
        refused.out.contains("case_collision") || refused.out.contains("does not tell names apart by case"),
        "{}",
        refused.out
    );
    assert_eq!(names(&wine), ["NOTES.TXT", "README.md"]);
    assert_eq!(
        std::fs::read(wine.path("NOTES.TXT")).expect("NOTES.TXT"),
        b"theirs\r\n"
    );
    wine.ok(&["stop"]);
}

/// Names Windows keeps for devices (`CON`, `aux.c`), made on the host as WSL, git or a Linux
/// share can, and a path longer than Windows' 260 characters: filewatchd reaches them by
/// verbatim paths, so they are files like any other, recorded, removed by undo and put back
/// by redo byte for byte.
#[test]
fn reserved_names_and_long_paths_are_files_like_any_other() {
    let Some(wine) = Wine::new() else {
        return;
    };
    std::fs::write(wine.path("keep.txt"), b"keep\r\n").expect("keep.txt");
    let deep = format!("{}/{}/long.txt", "d".repeat(120), "e".repeat(120));
    wine.ok(&["start"]);
    wine.ok(&["turn", "start", "--session", "demo"]);
    std::fs::write(wine.path("aux.c"), b"int aux;\n").expect("aux.c");
    std::fs::write(wine.path("CON"), b"console?\n").expect("CON");
    std::fs::create_dir_all(wine.path(&deep).parent().expect("parent")).expect("deep dirs");
    std::fs::write(wine.path(&deep), b"deep\r\n").expect("deep file");
    assert!(windows_path(&wine.path(&deep)).len() > 260, "a long path");
    let ended = wine.ok(&["turn", "end", "--session", "demo"]);
    assert!(
        ended.contains("+5 ~0 -0"),
        "two names, two directories, a file: {ended}"
    );
    let shown = wine.ok(&["show", "1"]);
    assert!(shown.contains("A aux.c") && shown.contains("A CON"), "{shown}");
    assert!(shown.contains("long.txt"), "{shown}");

    wine.ok(&["undo"]);
    assert!(
        !wine.path("aux.c").exists() && !wine.path("CON").exists(),
        "undo removes them"
    );
    assert!(!wine.path(&deep).exists(), "undo removes the deep file");
    wine.ok(&["redo"]);
    assert_eq!(std::fs::read(wine.path("aux.c")).expect("aux.c"), b"int aux;\n");
    assert_eq!(std::fs::read(wine.path("CON")).expect("CON"), b"console?\n");
    assert_eq!(std::fs::read(wine.path(&deep)).expect("deep file"), b"deep\r\n");
    wine.ok(&["stop"]);
}

/// A file another Windows program holds open sharing nothing (an editor, a virus scanner):
/// the rollback retries, then says what is wrong and changes nothing, not even the files it
/// could have written; once the program lets go, the same undo goes through.
#[test]
fn a_file_held_open_by_another_program_fails_the_rollback_whole_and_clearly() {
    let Some(wine) = Wine::new() else {
        return;
    };
    let holder = wine.exe.with_file_name("holdopen.exe");
    if !holder.exists() {
        skip("holdopen.exe is not beside the Windows binary (.ci/run builds it from tests/wine/holdopen.c)");
        return;
    }
    std::fs::write(wine.path("a.txt"), b"a1\r\n").expect("a.txt");
    std::fs::write(wine.path("b.txt"), b"b1\r\n").expect("b.txt");
    wine.ok(&["start"]);
    wine.ok(&["turn", "start", "--session", "demo"]);
    std::fs::write(wine.path("a.txt"), b"a2\r\n").expect("a.txt");
    std::fs::write(wine.path("b.txt"), b"b2\r\n").expect("b.txt");
    wine.ok(&["turn", "end", "--session", "demo"]);

    let (ready, release) = (
        wine.prefix.path().join("ready"),
        wine.prefix.path().join("release"),
    );
    let log = wine.prefix.path().join("holder.txt");
    let mut held = wine.spawn(
        &holder,
        &["b.txt", &windows_path(&ready), &windows_path(&release)],
        &log,
    );
    let holding = poll_until(DEADLINE, || ready.exists().then_some(()));
    assert!(
        holding.is_some(),
        "holdopen never held b.txt: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );

    let failed = wine.filewatchd(&["undo"]);
    assert!(!failed.status.success(), "{}", failed.out);
    assert!(failed.out.contains("sharing violation"), "{}", failed.out);
    assert_eq!(
        std::fs::read(wine.path("a.txt")).expect("a.txt"),
        b"a2\r\n",
        "nothing half-applied"
    );

    std::fs::write(&release, b"").expect("release");
    let ended = poll_until(DEADLINE, || held.try_wait().expect("wait"));
    assert!(ended.is_some_and(|s| s.success()), "holdopen: {ended:?}");
    let undone = wine.ok(&["undo"]);
    assert!(undone.contains("back to before turn 1"), "{undone}");
    assert_eq!(std::fs::read(wine.path("a.txt")).expect("a.txt"), b"a1\r\n");
    assert_eq!(std::fs::read(wine.path("b.txt")).expect("b.txt"), b"b1\r\n");
    wine.ok(&["stop"]);
}
