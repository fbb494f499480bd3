//! The official MCP TypeScript SDK as a client of rho's server over
//! stdio: the sample registry (`rho-mcp sample`) driven by
//! `tests/peers/node/client.mjs`, the same scenarios the Python SDK's
//! client runs, checked by the same functions (`support/sample_checks.rs`).
//!
//! Node starts a server with a socket pair for each piped stdio stream
//! (libuv's way, and so the way of desktop agents built on Node), where
//! Python and Rust start it with pipes: rho's server reads and writes
//! both on the reactor, and this run checks the socket side
//! (`the_server_was_given_sockets`).

mod import_support;
mod support;

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use import_support::{everything, node};
use support::{PeerRun, client_json, log_path};

fn run() -> &'static PeerRun {
    static RUN: OnceLock<PeerRun> = OnceLock::new();
    RUN.get_or_init(|| {
        // Installs the pinned node peers, the TypeScript SDK among them.
        let installed = everything()
            .ancestors()
            .find(|dir| dir.ends_with("node_modules"))
            .and_then(Path::parent)
            .expect("the node peers' directory")
            .to_path_buf();
        // Node finds the SDK from where the script is: beside the
        // installed packages, under a name of this test run's own.
        let script = installed.join(format!("client-{}.mjs", std::process::id()));
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/node/client.mjs");
        std::fs::copy(&source, &script).expect("the client script copied beside the SDK");
        let log = log_path("node-stdio");
        let output = Command::new(node())
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_rho-mcp"))
            .arg("sample")
            .env("RHO_MCP_SAMPLE_LOG", &log)
            .output();
        let _ = std::fs::remove_file(&script);
        let output = output.expect("node runs");
        let seen = client_json(&output);
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        PeerRun { seen, log }
    })
}

sample_tests!(run);

/// The run above went through the socket path: on Linux, the server's
/// stdin and stdout were sockets.
#[test]
fn the_server_was_given_sockets() {
    let stdio = &run().seen["stdio"];
    if !cfg!(target_os = "linux") {
        eprintln!("not checked: /proc tells the descriptors' kind on Linux only ({stdio})");
        return;
    }
    for stream in ["stdin", "stdout"] {
        let kind = stdio[stream].as_str().unwrap_or_default();
        assert!(kind.starts_with("socket:"), "{stream} was {kind}: {stdio}");
    }
}
