//! The opencode plugin and the pi extension (integrations/) are JavaScript: node's test runner
//! loads them and drives them with stand-ins for each agent's plugin API, against this very
//! daemon binary. This test runs that suite as part of `cargo test`.

use std::process::Command;

use crate::common::machine;

#[test]
fn opencode_and_pi_integrations_pass_their_node_tests() {
    // The daemons node starts need the machine as every test finds it, as a `Workspace` does.
    let _machine = machine::shared();
    let repo = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("node")
        .args(["--test", "integrations/test/"])
        .current_dir(repo)
        .env("FILEWATCHD_TEST_BIN", env!("CARGO_BIN_EXE_filewatchd"))
        .env_remove("FILEWATCHD_URL")
        .env_remove("FILEWATCHD_TOKEN")
        .output()
        .expect("node is needed to test the opencode and pi integrations (Node.js 20 or later)");
    assert!(
        out.status.success(),
        "node --test integrations/test/ failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
