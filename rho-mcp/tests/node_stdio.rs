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

use std::sync::OnceLock;

use import_support::run_node_client;
use support::{PeerRun, client_json, log_path};

fn run() -> &'static PeerRun {
    static RUN: OnceLock<PeerRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let log = log_path("node-stdio");
        let server = env!("CARGO_BIN_EXE_rho-mcp");
        let seen = client_json(&run_node_client(
            &["stdio", server, "sample"],
            &[("RHO_MCP_SAMPLE_LOG", &log)],
        ));
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
