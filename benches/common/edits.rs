//! W1 and W2 helpers: appending lines, the sed workload, and checking an end marker's
//! `changes` against the exact set of files changed.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Files the sed workload touches: `git ls-files | awk 'NR%10==3'`, the first 2,000.
pub const SED_FILES: usize = 2_000;
/// Files edited per turn.
pub const EDIT_FILES: usize = 5;
/// The sed workload's chain of replacements: run r does `s/f<CHAIN[r-1]>/f<CHAIN[r]>/` (run 0:
/// `s/fn/fx/`). No generated word contains `f` followed by one of these letters, so every run
/// changes exactly the files that had `fn`, and always to content never seen before (alternating
/// fn→fx→fn would let both content-addressed stores skip writing from the third run on).
pub const SED_CHAIN: &[u8] = b"nxyzwvqkjutsrpmlhgdcba";

pub fn sed_script(r: usize) -> String {
    format!("s/f{}/f{}/", SED_CHAIN[r] as char, SED_CHAIN[r + 1] as char)
}

/// Runs of the sed workload repeated after the daemon stopped, for sed's own time without it.
pub fn sed_baseline_reps(sed_reps: usize) -> usize {
    sed_reps.min(3)
}

pub fn append_line(path: &Path, line: &str) -> Result<(), String> {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    f.write_all(line.as_bytes())
        .map_err(|e| format!("append to {}: {e}", path.display()))
}

/// `xargs -0 sed -i -e SCRIPT --` over the NUL-separated paths in `list`, run in `tree`.
pub fn run_sed(tree: &Path, list: &[u8], script: &str) -> Result<(), String> {
    let mut child = Command::new("xargs")
        .args(["-0", "sed", "-i", "-e", script, "--"])
        .current_dir(tree)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn xargs sed: {e}"))?;
    {
        let mut stdin = child.stdin.take().ok_or("no stdin for xargs")?;
        stdin
            .write_all(list)
            .map_err(|e| format!("write to xargs: {e}"))?;
    }
    let status = child.wait().map_err(|e| format!("wait for xargs sed: {e}"))?;
    if !status.success() {
        return Err(format!("xargs sed -i -e {script}: {status}"));
    }
    Ok(())
}

/// Outcome of comparing an end marker's `changes` with the files we changed.
pub struct ChangeCheck {
    pub got: usize,
    pub missing: usize,
    pub extra: usize,
}

impl ChangeCheck {
    pub fn ok(&self, expected: usize) -> bool {
        self.got == expected && self.missing == 0 && self.extra == 0
    }
}

pub fn check_changes(turn: &Value, expected: &BTreeSet<&str>) -> ChangeCheck {
    let changes = turn
        .get("changes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let paths: BTreeSet<&str> = changes
        .iter()
        .filter_map(|c| c.get("path").and_then(Value::as_str))
        .collect();
    ChangeCheck {
        got: changes.len(),
        missing: expected.iter().filter(|p| !paths.contains(*p)).count(),
        extra: paths.iter().filter(|p| !expected.contains(*p)).count(),
    }
}

/// Per-workload correctness tally.
#[derive(Default)]
pub struct Tally {
    pub turns: usize,
    pub turns_ok: usize,
    pub first_bad: Option<String>,
}

impl Tally {
    pub fn add(&mut self, c: &ChangeCheck, expected: usize) {
        self.turns += 1;
        if c.ok(expected) {
            self.turns_ok += 1;
        } else if self.first_bad.is_none() {
            self.first_bad = Some(format!(
                "got {} changes, expected {expected} ({} missing, {} unexpected)",
                c.got, c.missing, c.extra
            ));
        }
    }

    pub fn ok(&self) -> bool {
        self.turns_ok == self.turns
    }

    /// "; changes = 5 in 5/5 turns" or what went wrong.
    pub fn text(&self, expected: usize, what: &str) -> String {
        match &self.first_bad {
            None => format!(
                "; changes = {expected} in {}/{} {what}",
                self.turns_ok, self.turns
            ),
            Some(b) => format!(
                "; **changes wrong in {}/{} {what}** (first: {b})",
                self.turns - self.turns_ok,
                self.turns
            ),
        }
    }
}
