//! The test knobs: behaviour the integration tests must provoke and no user ever wants (a
//! rollback that stops half-way so it can be killed, a reader that panics, short HTTP
//! timeouts). Every one is read here, once, at start-up, from its `FILEWATCHD_TEST_*`
//! environment variable, and only when `filewatchd serve` was also given the hidden
//! `--test-knobs` flag: a variable left in a shell cannot park or kill a production daemon.
//! A daemon started with knobs says so in its log.
//!
//! | variable | effect |
//! |---|---|
//! | `FILEWATCHD_TEST_PAUSE_AFTER=K` | a rollback parks after K file changes, until killed |
//! | `FILEWATCHD_TEST_PAUSE_BUILD` | the first index parks once written, before it is made durable |
//! | `FILEWATCHD_TEST_PANIC_ON=NAME` | a reader panics reading a file named NAME |
//! | `FILEWATCHD_TEST_SETTLED_AFTER_MS=MS` | how long before a clean exit a file counts as settled |
//! | `FILEWATCHD_TEST_HTTP_TIMEOUT_MS=MS` | the HTTP header and body timeouts |
//! | `FILEWATCHD_TEST_HOLD_INDEX=PATH` | once the start-up walk is done, the daemon waits until PATH exists |
//! | `FILEWATCHD_TEST_UI_CODE_TTL_MS=MS` | how long a browser login code stays valid |
//! | `FILEWATCHD_TEST_GC_STEP_PATHS=N` | a collection collapses N path ids per step, whatever a step takes |
//! | `FILEWATCHD_TEST_GC_STEP_ROWS=N` | every step of a collection takes N rows: N versions collapsed (unless `_PATHS`) or listed, N blobs swept |
//! | `FILEWATCHD_TEST_GC_HOLD=PATH` | a collection waits between its steps while PATH exists |
//! | `FILEWATCHD_TEST_GC_HOLD_AT=PHASE:K` | a collection waits for good once K steps of PHASE (`collapse`, `list`, `sweep`) are done, until killed |

use std::sync::OnceLock;
use std::time::Duration;

/// The knobs in effect; all off unless enabled at start-up.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TestKnobs {
    pub pause_after: Option<u64>,
    pub pause_build: bool,
    pub panic_on: Option<Vec<u8>>,
    pub settled_after: Option<Duration>,
    pub http_timeout: Option<Duration>,
    pub hold_index: Option<std::path::PathBuf>,
    pub ui_code_ttl: Option<Duration>,
    pub gc_step_paths: Option<u64>,
    pub gc_step_rows: Option<u64>,
    pub gc_hold: Option<std::path::PathBuf>,
    pub gc_hold_at: Option<(String, u64)>,
}

static KNOBS: OnceLock<TestKnobs> = OnceLock::new();

/// Reads the knobs once (only when `enabled`: `serve --test-knobs`); later calls change nothing.
pub fn init(enabled: bool) -> &'static TestKnobs {
    let knobs = KNOBS.get_or_init(|| {
        if enabled {
            TestKnobs::from_env()
        } else {
            TestKnobs::default()
        }
    });
    if *knobs != TestKnobs::default() {
        tracing::warn!(?knobs, "test knobs are on: this daemon is for the tests only");
    }
    knobs
}

/// The knobs in effect: none before `init` (and none ever, unless enabled).
pub fn get() -> &'static TestKnobs {
    KNOBS.get_or_init(TestKnobs::default)
}

impl TestKnobs {
    fn from_env() -> Self {
        let number = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        Self {
            pause_after: number("FILEWATCHD_TEST_PAUSE_AFTER"),
            pause_build: std::env::var_os("FILEWATCHD_TEST_PAUSE_BUILD").is_some(),
            panic_on: std::env::var_os("FILEWATCHD_TEST_PANIC_ON").map(|n| n.as_encoded_bytes().to_vec()),
            settled_after: number("FILEWATCHD_TEST_SETTLED_AFTER_MS").map(Duration::from_millis),
            http_timeout: number("FILEWATCHD_TEST_HTTP_TIMEOUT_MS").map(Duration::from_millis),
            hold_index: std::env::var_os("FILEWATCHD_TEST_HOLD_INDEX").map(Into::into),
            ui_code_ttl: number("FILEWATCHD_TEST_UI_CODE_TTL_MS").map(Duration::from_millis),
            gc_step_paths: number("FILEWATCHD_TEST_GC_STEP_PATHS"),
            gc_step_rows: number("FILEWATCHD_TEST_GC_STEP_ROWS"),
            gc_hold: std::env::var_os("FILEWATCHD_TEST_GC_HOLD").map(Into::into),
            gc_hold_at: std::env::var("FILEWATCHD_TEST_GC_HOLD_AT")
                .ok()
                .and_then(|v| phase_and_steps(&v)),
        }
    }
}

/// `collapse:3` as the phase and the steps of it.
fn phase_and_steps(value: &str) -> Option<(String, u64)> {
    let (phase, steps) = value.split_once(':')?;
    Some((phase.to_string(), steps.parse().ok()?))
}

/// `FILEWATCHD_TEST_HOLD_INDEX`: keeps a daemon whose index is ready from going on (applying
/// queued markers, recording what was hinted meanwhile, listening) until the file exists, so a
/// test can act while it is still "indexing".
pub fn hold_index() {
    let Some(path) = &get().hold_index else {
        return;
    };
    tracing::warn!(path = %path.display(), "FILEWATCHD_TEST_HOLD_INDEX: waiting for the file");
    while !path.exists() {
        std::thread::sleep(Duration::from_millis(20)); // polling a condition (test-only)
    }
}
