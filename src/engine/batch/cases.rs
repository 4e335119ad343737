//! The batch's timing cases, as data (`src/engine/batch_cases/*.toml`), run against an
//! injected clock: each step happens at `ms` after the start, does what it names (in this
//! order: `hint`, `hint_many`, `requeue`, `fail`, `succeed`), checks what it names (`due`,
//! `deadline` in ms after the start, `no_deadline`), then takes the batch if `take` lists the
//! paths expected.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::Batch;
use crate::model::fixtures::path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    step: Vec<Step>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Step {
    ms: u64,
    hint: Vec<String>,
    hint_many: usize,
    requeue: Vec<String>,
    fail: bool,
    succeed: bool,
    due: Option<bool>,
    deadline: Option<u64>,
    no_deadline: bool,
    take: Option<Vec<String>>,
}

fn run(name: &str, case: &Case) {
    let start = Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    let mut batch = Batch::new(start);
    for (i, step) in case.step.iter().enumerate() {
        let now = at(step.ms);
        let here = format!("{name}, step {} (at {} ms)", i + 1, step.ms);
        for hinted in &step.hint {
            batch.hint(path(hinted), now);
        }
        for n in 0..step.hint_many {
            batch.hint(path(&format!("many/{n}")), now);
        }
        if !step.requeue.is_empty() {
            batch.requeue(step.requeue.iter().map(|p| path(p)), now);
        }
        if step.fail {
            batch.failed(now);
        }
        if step.succeed {
            batch.succeeded();
        }
        if let Some(due) = step.due {
            assert_eq!(batch.due(now), due, "{here}: due");
        }
        if let Some(ms) = step.deadline {
            assert_eq!(batch.deadline(), Some(at(ms)), "{here}: deadline");
        }
        if step.no_deadline {
            assert_eq!(batch.deadline(), None, "{here}: no deadline");
        }
        if let Some(expected) = &step.take {
            let taken: Vec<String> = batch.take().iter().map(|p| p.to_text()).collect();
            assert_eq!(&taken, expected, "{here}: taken");
            assert!(batch.is_empty(), "{here}: empty after taking");
        }
    }
}

#[test]
fn every_batch_case_holds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/batch_cases");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("src/engine/batch_cases")
        .map(|entry| entry.expect("a case file").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "the cases are missing: {names:?}");
    for file in names {
        let text = std::fs::read_to_string(&file).expect("a readable case");
        let case: Case = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        run(&file.display().to_string(), &case);
    }
}
