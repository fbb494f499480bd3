//! The official MCP Python SDK as a client of rho's server over stdio:
//! the sample registry (`rho-mcp sample`), one tool for each way a call
//! can go, driven by `tests/peers/client.py`.
//!
//! The client runs once for all these tests (a real process, a real
//! session); each test checks one part of what it saw
//! (`support/sample_checks.rs`).

mod support;

use std::sync::OnceLock;

use support::{PeerRun, log_path, run_python_client};

fn run() -> &'static PeerRun {
    static RUN: OnceLock<PeerRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let log = log_path("python-stdio");
        let server = env!("CARGO_BIN_EXE_rho-mcp");
        let seen = run_python_client(
            &["stdio", server, "sample"],
            &[("RHO_MCP_SAMPLE_LOG", &log)],
        );
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        PeerRun { seen, log }
    })
}

sample_tests!(run);
