//! One row of a tree's table: filewatchd and each peer side by side, the ratio to the best peer,
//! the physical floor, the goal and the checks.

use std::time::Duration;

use super::stats::{fmt_ratio, pass};

/// Columns: workload | filewatchd | opencode shadow | codex ghost | agent-undo | ratio (fw / best
/// peer) | floor | goal | pass | correct. Empty cells print as `–`.
#[derive(Default, Clone)]
pub struct Row {
    pub workload: String,
    pub fw: String,
    /// opencode-style shadow git (`add -A` + `write-tree` into a private GIT_DIR).
    pub shadow: String,
    /// Codex-style ghost commit (temporary index + `commit-tree`) in the tree as a real repo.
    pub codex: String,
    /// agent-undo (`au`), where it was measured.
    pub au: String,
    pub ratio: String,
    pub floor: String,
    pub goal: String,
    pub pass: Option<bool>,
    pub correct: String,
}

impl Row {
    pub fn new(workload: impl Into<String>) -> Row {
        Row {
            workload: workload.into(),
            ..Row::default()
        }
    }
}

/// filewatchd's median against the fastest peer median that was measured (`None`: skipped).
pub fn best_ratio(fw: Duration, peers: &[Option<Duration>]) -> Option<f64> {
    let best = peers.iter().flatten().filter(|d| !d.is_zero()).min()?;
    Some(fw.as_secs_f64() / best.as_secs_f64())
}

/// The ratio cell: "0.037" or "–".
pub fn ratio_cell(r: Option<f64>) -> String {
    r.map(fmt_ratio).unwrap_or_else(|| "–".into())
}

pub const HEADER: &str = "| workload | filewatchd | opencode shadow | codex ghost | agent-undo | ratio (fw / best peer) | floor | goal | pass | correct |\n|---|---|---|---|---|---|---|---|---|---|";

fn cell(s: &str) -> &str {
    if s.is_empty() { "–" } else { s }
}

/// The Markdown line of a row.
pub fn line(r: &Row) -> String {
    let p = match r.pass {
        Some(ok) => pass(ok),
        None => "–",
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        r.workload,
        cell(&r.fw),
        cell(&r.shadow),
        cell(&r.codex),
        cell(&r.au),
        cell(&r.ratio),
        cell(&r.floor),
        cell(&r.goal),
        p,
        cell(&r.correct)
    )
}
