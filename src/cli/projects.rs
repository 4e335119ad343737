//! `projects` (every workspace with a state directory) and `forget` (delete one's state).

use std::process::ExitCode;

use serde_json::{Value, json};

use super::args::ForgetCmd;
use super::style::{Paint, paint, size};
use super::{confirm, escape};
use crate::lifecycle::Running;
use crate::lifecycle::projects::{self, Project};

pub fn projects(json: bool) -> anyhow::Result<ExitCode> {
    let found = projects::list()?;
    if json {
        let list: Vec<Value> = found.iter().map(as_json).collect();
        println!("{}", serde_json::to_string_pretty(&json!({ "projects": list }))?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.is_empty() {
        println!("no workspaces yet: `filewatchd start` in a project starts one");
        return Ok(ExitCode::SUCCESS);
    }
    let now = crate::model::now_ms();
    let rows: Vec<[String; 4]> = found
        .iter()
        .map(|p| {
            let activity = p
                .last_activity_ms
                .map_or_else(|| "-".to_string(), |ms| ago(now - ms));
            [
                root_text(p),
                daemon_text(&p.running),
                size(p.disk_bytes),
                activity,
            ]
        })
        .collect();
    print_table(["ROOT", "DAEMON", "ON DISK", "LAST ACTIVITY"], &rows);
    Ok(ExitCode::SUCCESS)
}

fn as_json(p: &Project) -> Value {
    let (running, indexing, url) = match &p.running {
        Running::Answering(info) | Running::Silent(info) => (true, false, Some(info.url.clone())),
        Running::Indexing { .. } => (true, true, None),
        Running::Elsewhere(_) | Running::Stopped => (false, false, None),
    };
    json!({
        "root": p.root,
        "root_exists": p.root_exists,
        "state_dir": p.state_dir,
        "running": running,
        "indexing": indexing,
        "pid": if running { p.running.pid() } else { None },
        "url": url,
        "disk_bytes": p.disk_bytes,
        "last_activity": p.last_activity_ms.map(crate::model::format_time),
    })
}

fn root_text(p: &Project) -> String {
    let shown = |path: &std::path::Path| escape::quoted(&path.to_string_lossy()).into_owned();
    match (&p.root, p.root_exists) {
        (Some(root), true) => shown(root),
        (Some(root), false) => format!("{} (gone)", shown(root)),
        (None, _) => format!("? ({})", shown(&p.state_dir)),
    }
}

fn daemon_text(running: &Running) -> String {
    match running {
        Running::Answering(info) => format!(
            "{} pid {}, {}",
            paint("running", Paint::Added),
            info.pid,
            escape::text(&info.url)
        ),
        Running::Silent(info) => format!(
            "{} pid {}, not answering",
            paint("running", Paint::Warning),
            info.pid
        ),
        Running::Indexing { pid, .. } => match pid {
            Some(pid) => format!("{} pid {pid}", paint("indexing", Paint::Warning)),
            None => paint("indexing", Paint::Warning),
        },
        Running::Elsewhere(_) | Running::Stopped => paint("stopped", Paint::Dim),
    }
}

/// Columns padded to their widest cell (colour codes not counted).
fn print_table(header: [&str; 4], rows: &[[String; 4]]) {
    let visible = |s: &str| strip_ansi(s).chars().count();
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(visible(cell));
        }
    }
    let line = |cells: [&str; 4]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < cells.len() {
                out.push_str(&" ".repeat(widths[i] - visible(cell) + 2));
            }
        }
        out
    };
    println!("{}", paint(&line(header), Paint::Bold));
    for row in rows {
        println!("{}", line([&row[0], &row[1], &row[2], &row[3]]));
    }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in text.chars() {
        match (in_code, c) {
            (false, '\x1b') => in_code = true,
            (true, 'm') => in_code = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

/// "just now", "5 min ago", "3 h ago", "2 days ago".
fn ago(ms: i64) -> String {
    let minutes = ms.max(0) / 60_000;
    match minutes {
        0 => "just now".to_string(),
        1..=59 => format!("{minutes} min ago"),
        60..=2879 => format!("{} h ago", minutes / 60),
        _ => format!("{} days ago", minutes / 1440),
    }
}

/// `forget [DIR]`: DIR, else `--root`.
pub fn forget(cmd: ForgetCmd, root: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let Some(dir) = cmd.dir.as_deref().or(root) else {
        anyhow::bail!(super::BadInput(
            "name the workspace: `filewatchd forget DIR`".into()
        ));
    };
    let project = projects::find(dir)?;
    let root = project.root.as_deref().unwrap_or(dir).to_string_lossy();
    let root = escape::quoted(&root);
    // Said before asking: the answer would not matter.
    projects::check_stopped(&project)?;
    let state = project.state_dir.to_string_lossy();
    let state = escape::quoted(&state);
    let bytes = size(project.disk_bytes);
    let question = format!(
        "Delete the whole history of {root} ({bytes} in {state})? Nothing of it can be restored after."
    );
    confirm::confirm(&question, cmd.yes, || {
        format!("refusing to delete the history of {root} ({bytes}) without asking: pass --yes to delete it")
    })?;
    projects::forget(&project)?;
    println!("forgot {root}: removed {state} ({bytes})");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_reads_as_a_rough_age() {
        assert_eq!(ago(30_000), "just now");
        assert_eq!(ago(5 * 60_000), "5 min ago");
        assert_eq!(ago(3 * 3_600_000), "3 h ago");
        assert_eq!(ago(3 * 86_400_000), "3 days ago");
        assert_eq!(strip_ansi("\x1b[32mrunning\x1b[0m x"), "running x");
    }
}
