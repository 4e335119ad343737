//! The agent-undo peer (`au`, crate agent-undo 0.0.3): installed by the bench itself from
//! crates.io into `target/bench-tools/agent-undo-0.0.3` (once; later runs reuse it). When it
//! cannot be installed or run, its rows say so instead of failing the run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::gentree::GenFile;
use super::report::Row;
use super::stats::fmt_dur;

pub const VERSION: &str = "0.0.3";

/// The `au` binary, or why there is none.
pub struct Tool {
    pub bin: Option<PathBuf>,
    pub why: String,
}

impl Tool {
    pub fn skipped() -> Tool {
        Tool {
            bin: None,
            why: "skipped (--skip au)".into(),
        }
    }

    /// `--au-bin`, else `<manifest>/target/bench-tools/agent-undo-0.0.3/bin/au`, installing it
    /// there with `cargo install` if missing.
    pub fn find_or_install(given: Option<&Path>, manifest: &Path) -> Tool {
        if let Some(b) = given {
            return match b.is_file() {
                true => Tool {
                    bin: Some(b.to_path_buf()),
                    why: format!("`{}` (given)", b.display()),
                },
                false => Tool {
                    bin: None,
                    why: format!("--au-bin {} does not exist", b.display()),
                },
            };
        }
        let root = tools_root(manifest);
        let bin = root.join("bin/au");
        if bin.is_file() {
            return Tool {
                bin: Some(bin),
                why: format!("agent-undo {VERSION} (cached in {})", root.display()),
            };
        }
        install(&root, &bin)
    }

    pub fn describe(&self) -> String {
        self.why.clone()
    }
}

/// Where the tool is cached: the target dir (`$CARGO_TARGET_DIR` if set) + `bench-tools/`.
fn tools_root(manifest: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_relative() { manifest.join(t) } else { t })
        .unwrap_or_else(|| manifest.join("target"));
    target.join(format!("bench-tools/agent-undo-{VERSION}"))
}

fn install(root: &Path, bin: &Path) -> Tool {
    eprintln!(
        "agent-undo: installing {VERSION} from crates.io into {} (once; takes minutes on 2 cores)...",
        root.display()
    );
    let t0 = Instant::now();
    let out = Command::new("cargo")
        .args([
            "install",
            "agent-undo",
            "--version",
            VERSION,
            "--locked",
            "--root",
        ])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match out {
        Ok(o) if o.status.success() && bin.is_file() => Tool {
            bin: Some(bin.to_path_buf()),
            why: format!(
                "agent-undo {VERSION}, installed in {} ({})",
                fmt_dur(t0.elapsed()),
                root.display()
            ),
        },
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            Tool {
                bin: None,
                why: format!(
                    "not installed: `cargo install agent-undo --version {VERSION}` failed ({}): {last}",
                    o.status
                ),
            }
        }
        Err(e) => Tool {
            bin: None,
            why: format!("not installed: cannot run cargo: {e}"),
        },
    }
}

/// agent-undo's rows for one tree (run after filewatchd stopped, in the same tree).
pub fn run(
    name: &str,
    tool: &Tool,
    _tree: &Path,
    _files: &[GenFile],
    _base: &Path,
) -> (Vec<Row>, Vec<String>) {
    let Some(_bin) = &tool.bin else {
        let mut row = Row::new("agent-undo (`au` 0.0.3): W2 sed capture and W5-like undo");
        row.au = format!("not measured: {}", tool.why);
        return (vec![row], Vec::new());
    };
    eprintln!("[{name}] agent-undo: not wired yet");
    let mut row = Row::new("agent-undo (`au` 0.0.3): W2 sed capture and W5-like undo");
    row.au = "not measured".into();
    (vec![row], Vec::new())
}
